"""Mirror pages for operators: sources with status, "sync now", run history, drift events."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods, require_POST

from catalogs.exceptions import AlreadyExistsError, NotAllowedError, RegistryError
from catalogs.mirroring import forms
from catalogs.mirroring import services as mirrors
from catalogs.mirroring.images import mirrored_images
from catalogs.mirroring.models import DriftEvent, SyncRun
from catalogs.pages import domain_errors, page_render


def _require_operator(request: HttpRequest) -> None:
    # An anonymous request never reaches here (login_required); None would mean "system".
    if not mirrors.user_is_mirror_operator(request.user):
        raise NotAllowedError("Only mirror operators may see and sync mirror sources.")


@login_required
@domain_errors
def mirror_list(request: HttpRequest) -> HttpResponse:
    """Every source with its last run's status."""
    _require_operator(request)
    sources = []
    for source in mirrors.mirror_source_list():
        runs = mirrors.sync_run_list(source=source)
        sources.append(
            {"source": source, "last_run": runs.first(), "last_success": _last_success(runs)}
        )
    return page_render(request, "mirror_list.html", {"sources": sources})


def _last_success(runs) -> SyncRun | None:
    """The newest run that served upstream's catalog (succeeded, or found it unchanged)."""
    ok = (SyncRun.Status.SUCCEEDED, SyncRun.Status.UNCHANGED)
    return runs.filter(status__in=ok).order_by("-finished_at", "-pk").first()


@login_required
@domain_errors
def mirror_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One source: settings, verification, run history with reasons, drift events, the container
    images its served version names here."""
    _require_operator(request)
    source = mirrors.mirror_source_get(pk=pk)
    runs = mirrors.sync_run_list(source=source)
    context = {
        "source": source,
        "last_success": _last_success(runs),
        "runs": runs[:50],
        "drift": DriftEvent.objects.filter(source=source).select_related("run")[:50],
        "images": mirrored_images(version=source.catalog.latest_version),
        "schedule_note": forms.SCHEDULE_NEVER_RUNS if forms.schedules_never_run() else "",
    }
    return page_render(request, "mirror_detail.html", context)


@login_required
@domain_errors
@require_POST
def mirror_sync(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue a sync now (one per source at a time)."""
    source = mirrors.mirror_source_get(pk=pk)
    try:
        run = mirrors.mirror_source_sync_request(source=source, actor=request.user)
    except AlreadyExistsError as err:
        messages.error(request, err.message)
    else:
        # The embedded default (no broker) has run it already: say how it ended, not "queued".
        run.refresh_from_db()
        _sync_message(request, run, source.name)
    return redirect("web:mirror", pk=pk)


def _sync_message(request: HttpRequest, run: SyncRun, name: str) -> None:
    """The flash that says where run ``run`` of source ``name`` is now."""
    status = SyncRun.Status
    if run.status == status.QUEUED:
        messages.success(request, f"Sync run {run.pk} queued for {name}.")
    elif run.status == status.RUNNING:
        messages.success(request, f"Sync run {run.pk} of {name} is running.")
    elif run.status == status.SUCCEEDED:
        number = run.catalog_version.number if run.catalog_version else None
        published = f": version {number} published" if number else ""
        messages.success(request, f"Sync run {run.pk} of {name} succeeded{published}.")
    elif run.status == status.UNCHANGED:
        messages.success(request, f"Sync run {run.pk} of {name} finished: upstream is unchanged.")
    else:
        messages.error(request, f"Sync run {run.pk} of {name} failed: {run.reason}")


def _field_of(err: RegistryError, form: forms.MirrorSourceForm) -> str | None:
    """The form field an error is about (shown beside it), else None (shown above the form)."""
    field = getattr(err, "field", "")
    return field if field in form.fields else None


@login_required
@domain_errors
@require_http_methods(["GET", "POST"])
def mirror_create(request: HttpRequest) -> HttpResponse:
    """A new source (operators only), through the same service as the API."""
    _require_operator(request)
    form = forms.MirrorSourceForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            source = mirrors.mirror_source_create(
                name=form.cleaned_data["name"],
                kind=form.cleaned_data["kind"] or "catalog",
                actor=request.user,
                **form.settings(),
            )
        except AlreadyExistsError as err:
            form.add_error("name", err.message)
        except NotAllowedError:
            raise
        except RegistryError as err:
            form.add_error(_field_of(err, form), err.message)
        else:
            messages.success(request, f"Source {source.name} created. Sync it to serve it.")
            return redirect("web:mirror", pk=source.pk)
    status = 400 if form.errors else 200
    return page_render(request, "mirror_form.html", {"form": form, "source": None}, status)


@login_required
@domain_errors
@require_http_methods(["GET", "POST"])
def mirror_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """Change a source's URL, pin, policy, schedule or flags (operators only)."""
    _require_operator(request)
    source = mirrors.mirror_source_get(pk=pk)
    initial = {key: getattr(source, key) for key in forms.MirrorSourceForm.FIELDS}
    form = forms.MirrorSourceForm(request.POST or None, initial=initial, editing=True)
    if request.method == "POST" and form.is_valid():
        try:
            source = mirrors.mirror_source_update(
                source=source, actor=request.user, **form.settings()
            )
        except NotAllowedError:
            raise
        except RegistryError as err:
            form.add_error(_field_of(err, form), err.message)
        else:
            messages.success(request, f"Source {source.name} changed; the next sync re-verifies.")
            return redirect("web:mirror", pk=source.pk)
    status = 400 if form.errors else 200
    return page_render(request, "mirror_form.html", {"form": form, "source": source}, status)
