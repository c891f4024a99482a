"""Web pages: validate input, call one service or selector, render a template.

Domain errors map to pages the same way the API maps them to statuses: NotAllowedError -> 403,
NotFoundError -> 404, invalid input -> the form again with the errors inline.
"""

from __future__ import annotations

import itertools
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from catalogs.accounts import selectors as tokens
from catalogs.accounts import services as token_services
from catalogs.accounts.models import ALL_SCOPES
from catalogs.discovery import function_pages
from catalogs.discovery.revoked import catalog_revocations, revoked_versions
from catalogs.exceptions import (
    InvalidCatalogError,
    InvalidInputError,
    MirrorCatalogReadOnlyError,
    NotAllowedError,
    QuotaExceededError,
    RegistryError,
)
from catalogs.mirroring import services as mirrors
from catalogs.mirroring.badges import mirror_upstream_check
from catalogs.pages import domain_errors, page_render
from catalogs.publishing import selectors, services
from catalogs.publishing.models import Catalog, Publisher
from catalogs.review import services as contributions
from catalogs.review import trials
from catalogs.review.models import ContributionStatus
from catalogs.web import forms
from catalogs.web.catalog_trust import catalog_trust_page

PAGE_SIZE = 20


def _is_operator(user) -> bool:
    # user_is_mirror_operator(None) means "the system"; a page always has a (maybe anonymous) user.
    return getattr(user, "is_authenticated", False) and mirrors.user_is_mirror_operator(user)


def image_digest(container: dict[str, Any] | None) -> str:
    """The digest a container runtime pins: its sha256, or the one in ``image@sha256:...``."""
    if not container:
        return ""
    if container.get("sha256"):
        return f"sha256:{container['sha256']}"
    _, at, digest = str(container.get("image", "")).partition("@")
    return digest if at else ""


# The newest versions the catalog page lists (all of them are in the API).
CATALOG_PAGE_VERSIONS = 50


def _catalog(request: HttpRequest, publisher: str, catalog: str) -> Catalog:
    """The catalog, or NotFoundError when it does not exist or the user may not see it."""
    return selectors.catalog_get(publisher_slug=publisher, name=catalog, viewer=request.user)


def _owned_publishers(user) -> Any:
    if user.is_staff:
        return Publisher.objects.all()
    return Publisher.objects.filter(owners=user)


# ------------------------------------------------- browse (the search page: web/search_pages.py)


def _trust_view(parsed, source: str) -> dict[str, Any]:
    """Exactly what ``krm view catalog SOURCE`` shows (its -o yaml data), for the trust decision."""
    from orchestrator.functions.catalogs import LoadedCatalog, parse_ref
    from orchestrator.functions.view import summary

    if parsed is None:
        return {"functions": []}
    loaded = LoadedCatalog(ref=parse_ref(source, "/"), catalog=parsed, source=source)
    view = summary(loaded)
    for entry in view["functions"]:
        # The group, for links to the function page ("group/version" -> "group").
        entry["group"] = entry["apiVersion"].rpartition("/")[0]
        if "image" in entry and "imageDigest" not in entry:
            # An image pinned as image@sha256:... carries its digest in the reference itself.
            entry["imageDigest"] = image_digest({"image": entry["image"]})
    return view


@domain_errors
def catalog_detail(request: HttpRequest, publisher: str, catalog: str) -> HttpResponse:
    """Publisher, versions, download links, the --trusted-catalog line and the trust view.

    Bounded whatever the catalog's size: one page of its functions (CATALOG_PAGE_FUNCTIONS, read
    from the rows the publish stored, never by parsing the document) and its newest versions.
    """
    cat = _catalog(request, publisher, catalog)
    latest_url = request.build_absolute_uri(
        reverse("catalogs:latest", kwargs={"publisher": publisher, "catalog": catalog})
    )
    trust: dict[str, Any] = {"functions": []}
    page = None
    if cat.latest_version is not None:
        trust, page = catalog_trust_page(
            version=cat.latest_version, source=latest_url, page=request.GET.get("page")
        )
    versions = selectors.catalog_version_list(catalog=cat)
    mirror_url = contributions.catalog_mirror_url(catalog=cat)
    functions = list(page.object_list) if page is not None else []
    revocations = catalog_revocations(catalog_ids=[cat.pk])
    function_rows: list[dict[str, Any]] = [
        {
            "fn": fn,
            "revoked": list(
                revoked_versions(
                    versions=fn.versions.all(), catalog_id=cat.pk, revocations=revocations
                ).values()
            ),
        }
        for fn in functions
    ]
    context = {
        "catalog": cat,
        "versions": versions[:CATALOG_PAGE_VERSIONS],
        "version_count": versions.count(),
        "versions_shown": CATALOG_PAGE_VERSIONS,
        "latest_url": latest_url,
        "build_line": f"krm build . --trusted-catalog={latest_url}",
        "trust": trust,
        "functions": function_rows,
        "page": page,
        "revoked": [(row["fn"], r) for row in function_rows for r in row["revoked"]],
        "mirror_url": mirror_url,
        "mirror_upstream": mirror_upstream_check(catalog_id=cat.pk) if mirror_url else None,
        "pulls_recent": selectors.catalog_pulls_recent(catalog=cat),
        # A mirror's catalog takes versions only from its sync runs.
        "can_publish": mirror_url is None
        and selectors.user_is_owner_or_staff(publisher=cat.publisher, user=request.user),
    }
    return page_render(request, "catalog_detail.html", context)


@domain_errors
def function_detail(
    request: HttpRequest, publisher: str, catalog: str, group: str, kind: str
) -> HttpResponse:
    """One function of a catalog's latest version: how to use it, versions and what changed."""
    cat = _catalog(request, publisher, catalog)
    context = function_pages.function_page(
        catalog=cat,
        group=group,
        kind=kind,
        absolute_url=request.build_absolute_uri,
        viewer=request.user,
    )
    context["pulls_recent"] = selectors.catalog_pulls_recent(catalog=cat)
    return page_render(request, "function_detail.html", context)


# --------------------------------------------------------------------------- publish


@login_required
@domain_errors
@require_http_methods(["GET", "POST"])
def catalog_create(request: HttpRequest) -> HttpResponse:
    """Create an empty catalog under a publisher the user owns."""
    publishers = _owned_publishers(request.user)
    if not publishers.exists():
        # A catalog lives under a publisher: make one first, then come back here.
        messages.info(request, "A catalog belongs to a publisher: create yours first.")
        return redirect(f"{reverse('web:publisher-create')}?next={reverse('web:catalog-create')}")
    only = list(publishers[:2])
    initial = {"publisher": only[0]} if len(only) == 1 else {}
    form = forms.CatalogCreateForm(request.POST or None, publishers=publishers, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            cat = services.catalog_create(
                publisher=form.cleaned_data["publisher"],
                name=form.cleaned_data["name"],
                description=form.cleaned_data["description"],
                actor=request.user,
            )
        except InvalidInputError as err:
            form.add_error("name", err.message)
        except RegistryError as err:
            form.add_error(None, err.message)
        else:
            messages.success(request, f"Catalog {cat} created. Publish its first version.")
            return redirect("web:catalog-publish", publisher=cat.publisher.slug, catalog=cat.name)
    return page_render(request, "catalog_create.html", {"form": form})


@login_required
@domain_errors
@require_http_methods(["GET", "POST"])
def catalog_publish(request: HttpRequest, publisher: str, catalog: str) -> HttpResponse:
    """Upload or paste a catalog; preview errors (path and line) and changes; then publish."""
    cat = _catalog(request, publisher, catalog)
    if not selectors.user_is_owner_or_staff(publisher=cat.publisher, user=request.user):
        raise NotAllowedError(f"Only owners of publisher '{cat.publisher.slug}' may publish here.")
    form = forms.PublishForm(request.POST or None, request.FILES or None)
    context: dict[str, Any] = {"catalog": cat, "form": form}
    status = 200
    if request.method == "POST" and form.is_valid():
        document = form.document()
        text = document.decode("utf-8", errors="replace") if isinstance(document, bytes) else ""
        if isinstance(document, str):
            text = document
        context["text"] = text
        try:
            parsed = contributions.catalog_document_check(content=document)
        except InvalidCatalogError as err:
            context["problems"] = err.problems
            context["error"] = err.message
        else:
            if request.POST.get("action") == "publish":
                try:
                    version, created = services.catalog_version_publish(
                        catalog=cat, content=document, actor=request.user
                    )
                except MirrorCatalogReadOnlyError as err:
                    context["error"] = err.message
                    status = 409  # as the API answers the same refusal
                else:
                    if created:
                        messages.success(request, f"Published version {version.number}.")
                    else:
                        messages.info(
                            request, f"Nothing changed: version {version.number} has this content."
                        )
                    return redirect("web:catalog", publisher=publisher, catalog=catalog)
            else:
                old = contributions.catalog_parsed_latest(catalog=cat)
                context["changes"] = contributions.catalog_changes(old=old, new=parsed)
                context["preview_ok"] = True
                # Publishing the same content returns that version: nothing to offer.
                context["identical_to"] = selectors.catalog_version_with_content(
                    catalog=cat, parsed=parsed
                )
        # Re-show what was uploaded as text, so the user can fix it in place.
        form = forms.PublishForm(initial={"content": text})
        context["form"] = form
    if request.headers.get("HX-Request"):
        # htmx swaps in only 2xx answers, and the message must show.
        return page_render(request, "partials/publish_result.html", context)
    return page_render(request, "catalog_publish.html", context, status)


# --------------------------------------------------------------------------- contributions


@login_required
@domain_errors
@require_http_methods(["GET", "POST"])
def contribution_create(request: HttpRequest) -> HttpResponse:
    """Any signed-in user proposes a function definition (YAML, or simple form fields)."""
    # Mirrored catalogs only serve what upstream publishes: they take no contributions.
    catalogs = selectors.catalog_list(viewer=request.user).filter(mirror_source__isnull=True)
    initial = {"catalog": request.GET["catalog"]} if request.GET.get("catalog") else {}
    by_fields = request.POST.get("mode") == "fields"
    post = request.POST or None
    form = forms.ContributionForm(
        None if by_fields else post, request.FILES or None, catalogs=catalogs, initial=initial
    )
    fields_form = forms.DefinitionFieldsForm(
        post if by_fields else None, catalogs=catalogs, initial=initial
    )
    context: dict[str, Any] = {"form": form, "fields_form": fields_form, "by_fields": by_fields}
    active = fields_form if by_fields else form
    if request.method == "POST" and active.is_valid():
        try:
            text = active.text()
            contribution = contributions.contribution_submit(
                catalog=active.cleaned_data["catalog"], content=text, actor=request.user
            )
        except forms.forms.ValidationError as err:
            active.add_error(None, err)
        except InvalidCatalogError as err:
            context["problems"] = err.problems
            context["error"] = err.message
        except (InvalidInputError, QuotaExceededError) as err:
            # A URL its trials may not fetch, or a quota used up: said on the form.
            context["error"] = err.message
        else:
            messages.success(request, f"Contribution #{contribution.pk} sent for review.")
            return redirect("web:contributions")
    return page_render(request, "contribution_create.html", context)


@login_required
def contribution_list_mine(request: HttpRequest) -> HttpResponse:
    """The signed-in user's contributions with status and the reviewer's reason."""
    assert selectors.signed_in(request.user)  # @login_required
    items = contributions.contribution_list(author=request.user)
    return page_render(request, "contribution_list.html", {"contributions": items})


def _contribution_page(
    request: HttpRequest, contribution, comment_form: forms.CommentForm, status: int = 200
) -> HttpResponse:
    context = _review_context(request, contribution)
    context["events"] = contributions.review_event_list(contribution=contribution)
    context["trial_runs"] = trials.trial_run_list(contribution=contribution)
    context["comment_form"] = comment_form
    context["own"] = contribution.author_id == request.user.pk
    context["reviews_it"] = contributions.user_can_review_catalog(
        user=request.user, catalog=contribution.catalog
    )
    return page_render(request, "contribution_detail.html", context, status=status)


@login_required
@domain_errors
def contribution_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A contribution as its author (and its reviewers) see it: status, trial runs, the diff
    against the catalog's current function and the conversation."""
    contribution = contributions.contribution_get_visible(pk=pk, user=request.user)
    return _contribution_page(request, contribution, forms.CommentForm())


@login_required
@domain_errors
@require_POST
def contribution_comment(request: HttpRequest, pk: int) -> HttpResponse:
    """Add a comment to the conversation on a contribution (its author or a reviewer)."""
    contribution = contributions.contribution_get_visible(pk=pk, user=request.user)
    form = forms.CommentForm(request.POST)
    form.is_valid()
    try:
        contributions.contribution_comment_add(
            contribution=contribution, author=request.user, body=form.cleaned_data.get("body", "")
        )
    except InvalidInputError as err:
        form.add_error("body", err.message)
        return _contribution_page(request, contribution, form, status=400)
    messages.success(request, "Comment added.")
    return redirect(reverse("web:contribution", kwargs={"pk": pk}) + "#conversation")


@login_required
@domain_errors
@require_http_methods(["GET", "POST"])
def contribution_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """The author edits a contribution a reviewer asked changes of and resubmits it."""
    contribution = contributions.contribution_get_visible(pk=pk, user=request.user)
    if contribution.author_id != request.user.pk:
        raise NotAllowedError("Only the author of a contribution may edit it.")
    form = forms.ResubmitForm(request.POST or None, initial={"content": contribution.content})
    context: dict[str, Any] = {"contribution": contribution, "form": form}
    try:
        contributions.contribution_check_may_resubmit(contribution=contribution)
    except InvalidInputError as err:
        context["error"] = err.message
        context["events"] = contributions.review_event_list(contribution=contribution)
        status = 400 if request.method == "POST" else 200
        return page_render(request, "contribution_edit.html", context, status=status)
    if request.method == "POST" and form.is_valid():
        try:
            contributions.contribution_resubmit(
                contribution=contribution, content=form.cleaned_data["content"], actor=request.user
            )
        except InvalidCatalogError as err:
            context["problems"] = err.problems
            context["error"] = err.message
        except (InvalidInputError, QuotaExceededError) as err:
            context["error"] = err.message
        else:
            messages.success(request, f"Contribution #{contribution.pk} resubmitted.")
            return redirect("web:contributions")
    context["events"] = contributions.review_event_list(contribution=contribution)
    return page_render(request, "contribution_edit.html", context)


# --------------------------------------------------------------------------- review


def _require_reviewer(request: HttpRequest) -> None:
    if not contributions.user_can_review(user=request.user):
        raise NotAllowedError("Only reviewers may see the review queue.")


@login_required
@domain_errors
def review_queue(request: HttpRequest) -> HttpResponse:
    """Contributions to review, filtered by catalog and status (pending by default)."""
    _require_reviewer(request)
    data = request.GET.copy()
    if "status" not in data:
        data["status"] = ContributionStatus.PENDING
    # The filter names only catalogs the reviewer may see (a private one is not listed).
    form = forms.ReviewFilterForm(data, catalogs=selectors.catalogs_visible_to(request.user))
    status = catalog = None
    if form.is_valid():
        status = form.cleaned_data["status"] or None
        catalog = form.cleaned_data["catalog"]
    items = contributions.contribution_list_reviewable(
        user=request.user, status=status, catalog=catalog
    )
    page = Paginator(items, PAGE_SIZE).get_page(request.GET.get("page"))
    return page_render(request, "review_queue.html", {"form": form, "page": page})


def _review_context(request: HttpRequest, contribution) -> dict[str, Any]:
    """Definition, runtimes, capability needs, diff against the current function, validity."""
    context: dict[str, Any] = {"contribution": contribution}
    try:
        definition = contributions.contribution_definition_parse(content=contribution.content)
    except InvalidCatalogError as err:
        context["problems"] = err.problems
        context["valid"] = False
        return context
    context["valid"] = True
    fn = definition.function
    cat = contribution.catalog
    source = request.build_absolute_uri(
        reverse("catalogs:latest", kwargs={"publisher": cat.publisher.slug, "catalog": cat.name})
    )
    current = _parsed_latest(contribution.catalog)
    before = next(
        (
            f
            for f in (current.functions if current else [])
            if (f.group, f.kind) == (fn.group, fn.kind)
        ),
        None,
    )
    from orchestrator.catalog import Catalog as ParsedCatalog

    old = ParsedCatalog(metadata={"name": "x"}, functions=[before] if before else [])
    new = ParsedCatalog(metadata={"name": "x"}, functions=[fn])
    context["changes"] = contributions.catalog_changes(old=old, new=new).functions
    # Runtimes whose code a reviewer can read: a starlark script, an exec download's files.
    context["readable_runtimes"] = sorted(
        {kind for v in fn.versions for kind in v.runtime_kinds} & {"starlark", "exec"}
    )
    context["is_new_function"] = before is None
    context["trust"] = _trust_view(new, source)
    if before is not None:
        import difflib

        from orchestrator.catalog import dump_canonical

        diff = difflib.unified_diff(
            dump_canonical(before.to_dict()).splitlines(),
            dump_canonical(fn.to_dict()).splitlines(),
            "current",
            "contributed",
            lineterm="",
        )
        context["diff"] = list(itertools.islice(diff, REVIEW_DIFF_LINES + 1))
        if len(context["diff"]) > REVIEW_DIFF_LINES:
            context["diff"][REVIEW_DIFF_LINES:] = [f"… (cut at {REVIEW_DIFF_LINES} lines)"]
    return context


# Lines of a contribution's diff the review page shows (a function can be made huge).
REVIEW_DIFF_LINES = 2000
# Parsed latest versions, by digest: a version never changes, and parsing a large catalog for
# every view of a review page would cost seconds each time.
_PARSED: dict[str, Any] = {}


def _parsed_latest(catalog: Catalog) -> Any:
    version = catalog.latest_version
    if version is None:
        return None
    parsed = _PARSED.get(version.digest)
    if parsed is None:
        parsed = contributions.catalog_parsed_latest(catalog=catalog)
        if len(_PARSED) >= 8:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[version.digest] = parsed
    return parsed


@login_required
@domain_errors
def review_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One contribution for review, with its audit log."""
    contribution = _reviewable(request, pk)
    return _review_page(request, contribution)


def _reviewable(request: HttpRequest, pk: int):
    """Contribution ``pk`` if the user reviews its catalog, else NotAllowedError (NotFoundError
    when the catalog is private to them)."""
    _require_reviewer(request)
    return contributions.contribution_get_reviewable(pk=pk, user=request.user)


def _review_page(
    request: HttpRequest,
    contribution,
    reject_form: forms.RejectForm | None = None,
    status: int = 200,
    approve_form: forms.ApproveForm | None = None,
    *,
    changes_form: forms.RequestChangesForm | None = None,
    comment_form: forms.CommentForm | None = None,
) -> HttpResponse:
    context = _review_context(request, contribution)
    context["events"] = contributions.review_event_list(contribution=contribution)
    context["trial_runs"] = trials.trial_run_list(contribution=contribution)
    context["output_diffs"] = trials.trial_output_diffs(contribution=contribution)
    context["artifacts"] = trials.trial_artifacts(contribution=contribution)
    context["revision_diff"] = contributions.contribution_revision_diff(contribution=contribution)
    context["own"] = contribution.author_id == request.user.pk
    context["reject_form"] = reject_form or forms.RejectForm()
    context["changes_form"] = changes_form or forms.RequestChangesForm()
    context["approve_form"] = approve_form or forms.ApproveForm()
    context["comment_form"] = comment_form or forms.CommentForm()
    return page_render(request, "review_detail.html", context, status=status)


@login_required
@domain_errors
@require_POST
def review_approve(request: HttpRequest, pk: int) -> HttpResponse:
    """Approve: publishes a new catalog version including the function."""
    contribution = contributions.contribution_get_reviewable(pk=pk, user=request.user)
    form = forms.ApproveForm(request.POST)
    form.is_valid()
    try:
        contribution = contributions.contribution_approve(
            contribution=contribution,
            actor=request.user,
            comment=form.cleaned_data.get("comment", ""),
        )
    except (InvalidInputError, InvalidCatalogError) as err:
        messages.error(request, err.message)
        return redirect("web:review-detail", pk=pk)
    assert contribution.published_version is not None  # set by contribution_approve
    messages.success(
        request,
        f"Approved; published {contribution.catalog} version "
        f"{contribution.published_version.number}.",
    )
    return redirect("web:review-detail", pk=pk)


@login_required
@domain_errors
@require_POST
def review_trials_run(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue the contribution's trial runs again (a reviewer's re-run)."""
    contribution = _reviewable(request, pk)
    try:
        trials.contribution_trials_rerun(contribution=contribution)
    except InvalidInputError as err:
        messages.error(request, err.message)
        return redirect("web:review-detail", pk=pk)
    messages.success(request, f"Trial runs of contribution #{pk} queued.")
    return redirect("web:review-detail", pk=pk)


@login_required
@domain_errors
@require_POST
def review_reject(request: HttpRequest, pk: int) -> HttpResponse:
    """Reject with a required reason (final)."""
    contribution = contributions.contribution_get_reviewable(pk=pk, user=request.user)
    form = forms.RejectForm(request.POST)
    form.is_valid()
    try:
        contributions.contribution_reject(
            contribution=contribution,
            actor=request.user,
            reason=form.cleaned_data.get("reason", ""),
        )
    except InvalidInputError as err:
        # Keep the reviewer on the page with the error next to the reason box.
        form.add_error("reason", err.message)
        return _review_page(request, contribution, form, status=400)
    messages.success(request, f"Rejected contribution #{pk}.")
    return redirect("web:review-detail", pk=pk)


@login_required
@domain_errors
@require_POST
def review_request_changes(request: HttpRequest, pk: int) -> HttpResponse:
    """Ask the author for changes, with a required reason; the author resubmits."""
    contribution = contributions.contribution_get_reviewable(pk=pk, user=request.user)
    form = forms.RequestChangesForm(request.POST)
    form.is_valid()
    try:
        contributions.contribution_request_changes(
            contribution=contribution,
            actor=request.user,
            reason=form.cleaned_data.get("changes", ""),
        )
    except InvalidInputError as err:
        form.add_error("changes", err.message)
        return _review_page(request, contribution, changes_form=form, status=400)
    messages.success(request, f"Asked the author of contribution #{pk} for changes.")
    return redirect("web:review-detail", pk=pk)


@login_required
@domain_errors
@require_POST
def review_comment(request: HttpRequest, pk: int) -> HttpResponse:
    """A reviewer adds a comment to the contribution's conversation."""
    contribution = contributions.contribution_get_reviewable(pk=pk, user=request.user)
    form = forms.CommentForm(request.POST)
    form.is_valid()
    try:
        contributions.contribution_comment_add(
            contribution=contribution, author=request.user, body=form.cleaned_data.get("body", "")
        )
    except InvalidInputError as err:
        form.add_error("body", err.message)
        return _review_page(request, contribution, comment_form=form, status=400)
    return redirect(reverse("web:review-detail", kwargs={"pk": pk}) + "#conversation")


@login_required
@domain_errors
def review_log(request: HttpRequest) -> HttpResponse:
    """The whole audit log, newest first."""
    _require_reviewer(request)
    events = contributions.review_event_list(reviewer=request.user).order_by("-created_at", "-pk")
    page = Paginator(events, 50).get_page(request.GET.get("page"))
    return page_render(request, "review_log.html", {"page": page})


# --------------------------------------------------------------------------- accounts


@login_required
@require_http_methods(["GET", "POST"])
def api_tokens(request: HttpRequest) -> HttpResponse:
    """The user's API tokens: list them, create one (its secret shown once), delete one."""
    assert selectors.signed_in(request.user)  # @login_required
    user = request.user
    context: dict[str, Any] = {"all_scopes": ALL_SCOPES, "form": {"scopes": ["read"]}}
    status = 200
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "create":
            days = request.POST.get("expires_in_days", "").strip()
            name = request.POST.get("name", "")
            scopes = request.POST.getlist("scopes")
            form = {"name": name, "scopes": scopes, "expires_in_days": days}
            try:
                if days and not days.isdigit():
                    raise InvalidInputError(
                        f"expires_in_days: a whole number of days, or empty for none, not {days!r}"
                    )
                token, secret = token_services.api_token_create(
                    user=user,
                    name=name,
                    scopes=scopes,
                    expires_in_days=int(days) if days else None,
                )
                context.update(new_token=token, new_secret=secret)
            except RegistryError as error:
                context.update(form=form, error=error.message)
                status = 409 if "already" in error.message else 400
        elif action == "delete":
            pk = request.POST.get("token", "")
            found = tokens.api_token_list(user=user).filter(pk=pk).first() if pk.isdigit() else None
            if found is None:
                messages.error(request, f"You have no token {pk!r}.")
                status = 404
            elif request.POST.get("confirm") != "yes":
                # A confirmation step that needs no script: the next POST carries confirm=yes.
                context["confirm_delete"] = found
            else:
                token_services.api_token_delete(user=user, pk=found.pk)
                messages.success(request, f"Token {found.name!r} deleted.")
        else:
            messages.error(request, f"Unknown action {action!r}: use create or delete.")
            status = 400
    context["tokens"] = tokens.api_token_list(user=user)
    return page_render(request, "tokens.html", context, status=status)
