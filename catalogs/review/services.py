"""Contributions (KEP-2906 story 6), their review and audit log; catalog change previews.

Services (writes) are ``contribution_<verb>``; selectors (reads) sit below them. A contribution
is one KRMFunctionDefinition -- a whole ``kind: KRMFunctionDefinition`` document or just its
spec (the mapping a catalog lists under ``spec.krmFunctions``). Approving one publishes a new
version of the target catalog through ``services.catalog_version_publish``, in which the
contributed definition replaces any function with the same group and kind (the contributor
submits the whole definition, every version of it) or is appended.
"""

from __future__ import annotations

import difflib
import itertools
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as AuthUser
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from catalogs import events
from catalogs.accounts.verification import user_check_verified
from catalogs.exceptions import (
    InvalidCatalogError,
    InvalidInputError,
    NotAllowedError,
    NotFoundError,
    ProblemDetail,
    QuotaExceededError,
)
from catalogs.jobs import job_enqueue_on_commit
from catalogs.mirroring.models import MirrorSource
from catalogs.publishing.content import catalog_version_bytes
from catalogs.publishing.documents import problems_located
from catalogs.publishing.models import Catalog, CatalogVersion
from catalogs.publishing.selectors import catalog_visible, catalogs_visible_q, signed_in
from catalogs.ratelimits import rate_limit_hit
from catalogs.review.events import (
    ContributionCommented,
    ContributionDecided,
    ContributionSubmitted,
)
from catalogs.review.models import Contribution, ContributionStatus, ReviewEvent, ReviewEventAction
from catalogs.review.trial_fetch import trial_urls_check
from orchestrator.catalog import API_VERSION, CatalogError, parse_catalog
from orchestrator.catalog import Catalog as ParsedCatalog
from orchestrator.catalog import FunctionDefinition as ParsedFunction

if TYPE_CHECKING:
    from catalogs.oversized import OversizedDocument

User = AuthUser | AnonymousUser | None

REVIEWERS_GROUP = "reviewers"
REVIEW_PERMISSION = "review.review_contribution"
DEFINITION_KIND = "KRMFunctionDefinition"


def catalog_document_check(*, content: bytes | str | OversizedDocument) -> ParsedCatalog:
    """Parse a catalog for the web UI: catalog_document_parse, which locates every problem."""
    from catalogs.publishing.services import catalog_document_parse

    return catalog_document_parse(content=content)


# --------------------------------------------------------------------------- definitions

_WRAP_INDENT = 4
_AT_LINE = re.compile(r"at line (\d+), column (\d+)")
_WRAP_HEAD = f"apiVersion: {API_VERSION}\nkind: Catalog\nmetadata:\n  name: contribution\n  doc:\n"


@dataclass(frozen=True)
class ParsedDefinition:
    """A validated contribution: the function as plain data and as parsed by the engine."""

    data: dict[str, Any]
    function: ParsedFunction
    prefix: str  # "spec." for a whole KRMFunctionDefinition document, "" for a bare spec


def _definition_invalid(problems: list[ProblemDetail]) -> InvalidCatalogError:
    n = len(problems)
    return InvalidCatalogError(
        f"The function definition is invalid ({n} problem{'s' if n != 1 else ''}).", problems
    )


def _read_definition_yaml(text: str) -> Any:
    """The definition as plain data, read by the engine's hardened YAML reader.

    The text is embedded under ``metadata.doc`` of a wrapper catalog (metadata is free-form), so
    the same size, alias, depth and encoding checks apply; lines shift back by the wrapper's.
    """

    size, limit = len(text.encode("utf-8", errors="surrogatepass")), settings.CATALOG_MAX_BYTES
    if size > limit:
        # Checked here, on the author's text: the wrapper's indentation would inflate the size.
        message = f"the definition is {size} bytes, over the limit of {limit} bytes"
        raise _definition_invalid([ProblemDetail(path="", message=message)])
    lines = text.split("\n")
    meaningful = [i for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("#")]
    if meaningful and lines[meaningful[0]].strip() == "---":
        # A leading document marker cannot be indented; a blank line keeps the numbering.
        lines[meaningful[0]] = ""
        meaningful.pop(0)
    if not meaningful:
        raise _definition_invalid([ProblemDetail(path="", message="the definition is empty")])
    body = "\n".join((" " * _WRAP_INDENT + ln) if ln.strip() else "" for ln in lines)
    wrapped = _WRAP_HEAD + body + "\nspec:\n  krmFunctions: []\n"
    offset = _WRAP_HEAD.count("\n")

    last = max(1, len(text.rstrip("\n").split("\n")))

    def unwrapped(line: int, column: int | None) -> tuple[int, int | None]:
        """A wrapper position as a position in ``text``."""
        if line - offset > last:
            # Past the end: the text stopped early (an unclosed bracket); point at its last line.
            return last, None
        return line - offset, column - _WRAP_INDENT if column and column > _WRAP_INDENT else column

    def unwrapped_message(match: re.Match) -> str:
        # YAML errors name a second place ("while parsing ... at line 7, column 12").
        line, column = unwrapped(int(match[1]), int(match[2]))
        return f"at line {line}, column {column}"

    try:
        parsed = parse_catalog(wrapped, max_bytes=settings.CATALOG_MAX_BYTES + len(_WRAP_HEAD))
    except CatalogError as err:
        problems = []
        for p in err.problems:
            line, column = unwrapped(p.line, p.column) if p.line is not None else (None, p.column)
            message = _AT_LINE.sub(unwrapped_message, p.message)
            path = p.path.removeprefix("metadata.doc").lstrip(".")
            if p.path.startswith("metadata") and not p.path.startswith("metadata.doc"):
                path = ""
            problems.append(ProblemDetail(path=path, message=message, line=line, column=column))
        raise _definition_invalid(problems_located(text, problems))
    return parsed.metadata.get("doc")


def contribution_definition_parse(*, content: str) -> ParsedDefinition:
    """Validate a contributed KRMFunctionDefinition, or InvalidCatalogError with paths and lines."""
    doc = _read_definition_yaml(content)
    if not isinstance(doc, dict):
        raise _definition_invalid(
            [ProblemDetail(path="", message="a function definition must be a mapping", line=1)]
        )
    prefix = ""
    data = doc
    if doc.get("kind") == DEFINITION_KIND:
        problems = []
        if doc.get("apiVersion") != API_VERSION:
            problems.append(ProblemDetail(path="apiVersion", message=f"must be {API_VERSION}"))
        if not isinstance(doc.get("spec"), dict):
            problems.append(ProblemDetail(path="spec", message="a mapping is required"))
        if problems:
            raise _definition_invalid(problems_located(content, problems))
        prefix, data = "spec.", doc["spec"]
    wrapper = {
        "apiVersion": API_VERSION,
        "kind": "Catalog",
        "metadata": {"name": "contribution"},
        "spec": {"krmFunctions": [data]},
    }
    try:
        parsed = ParsedCatalog.from_dict(wrapper)
    except CatalogError as err:
        problems = []
        for p in err.problems:
            path = p.path
            if path.startswith("spec.krmFunctions[0]"):
                path = prefix + path.removeprefix("spec.krmFunctions[0]").lstrip(".")
                path = path.rstrip(".")
            problems.append(ProblemDetail(path=path, message=p.message))
        raise _definition_invalid(problems_located(content, problems))
    return ParsedDefinition(data=data, function=parsed.functions[0], prefix=prefix)


def catalog_parsed_latest(*, catalog: Catalog) -> ParsedCatalog | None:
    """The latest published version of ``catalog`` as parsed by the engine, or None."""
    version = catalog.latest_version
    if version is None:
        return None
    return parse_catalog(catalog_version_bytes(version=version))


def catalog_with_function(*, catalog: Catalog, function: ParsedFunction) -> ParsedCatalog:
    """The latest version of ``catalog`` with ``function`` replacing its group/kind, or added."""
    current = catalog_parsed_latest(catalog=catalog)
    metadata = dict(current.metadata) if current else {"name": catalog.name}
    functions = list(current.functions) if current else []
    for i, existing in enumerate(functions):
        if existing.group == function.group and existing.kind == function.kind:
            functions[i] = function
            break
    else:
        functions.append(function)
    return ParsedCatalog(metadata=metadata, functions=functions)


# --------------------------------------------------------------------------- change previews


def _needs(fn: ParsedFunction) -> set[str]:
    """What a function's versions ask of the machine that runs them (for capability diffs)."""
    needs = set()
    for v in fn.versions:
        if "exec" in v.runtime:
            needs.add("exec binary")
        if v.requires_network:
            needs.add("network")
        if v.requires_storage_mount:
            needs.add("storage mount")
    return needs


def _runtime_pins(runtime: dict[str, Any]) -> dict[str, str]:
    """What a version's runtime points at, by place: the image and its digest, each exec
    platform's URI and sha256, the starlark script's (what a reviewer must see change)."""
    pins: dict[str, str] = {}
    container = runtime.get("container") or {}
    if isinstance(container, dict):
        if container.get("image"):
            pins["image"] = str(container["image"])
        if container.get("sha256"):
            pins["image digest"] = str(container["sha256"])
    exec_ = runtime.get("exec") or {}
    for platform in exec_.get("platforms") or [] if isinstance(exec_, dict) else []:
        if isinstance(platform, dict):
            where = f"exec {platform.get('os')}/{platform.get('arch')}"
            pins[f"{where} uri"] = str(platform.get("uri", ""))
            pins[f"{where} sha256"] = str(platform.get("sha256", ""))
    starlark = runtime.get("starlark")
    if isinstance(starlark, dict):
        for key in ("uri", "sha256"):
            if starlark.get(key):
                pins[f"starlark {key}"] = str(starlark[key])
    return pins


def _runtime_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """``"<what>: <old> → <new>"`` for each runtime pin that differs (``–`` for none)."""
    before, after = _runtime_pins(old), _runtime_pins(new)
    return [
        f"{key}: {before.get(key) or '–'} → {after.get(key) or '–'}"
        for key in sorted(before.keys() | after.keys())
        if before.get(key) != after.get(key)
    ]


@dataclass
class FunctionChange:
    """How one function (group/kind) differs between two catalogs."""

    group: str
    kind: str
    change: str  # "added", "removed" or "changed"
    versions_added: list[str] = field(default_factory=list)
    versions_removed: list[str] = field(default_factory=list)
    versions_changed: list[str] = field(default_factory=list)
    needs_added: list[str] = field(default_factory=list)
    needs_removed: list[str] = field(default_factory=list)
    fields_changed: list[str] = field(default_factory=list)
    # Per changed version, what its runtime now points at: "v1 image: a:1 → a:2".
    runtime_changed: list[str] = field(default_factory=list)


@dataclass
class CatalogChanges:
    """What publishing a document would change against the current latest version."""

    functions: list[FunctionChange]
    first_version: bool = False

    @property
    def unchanged(self) -> bool:
        """Nothing differs (publishing would return the existing version)."""
        return not self.functions and not self.first_version

    def of(self, change: str) -> list[FunctionChange]:
        """Changes of one type: added, removed or changed."""
        return [f for f in self.functions if f.change == change]


def catalog_changes(*, old: ParsedCatalog | None, new: ParsedCatalog) -> CatalogChanges:
    """Functions added, removed and changed (versions, fields, capability needs) old -> new."""
    old_fns = {(f.group, f.kind): f for f in (old.functions if old else [])}
    new_fns = {(f.group, f.kind): f for f in new.functions}
    changes: list[FunctionChange] = []
    for key, fn in new_fns.items():
        before = old_fns.get(key)
        if before is None:
            changes.append(
                FunctionChange(
                    group=fn.group,
                    kind=fn.kind,
                    change="added",
                    versions_added=[v.name for v in fn.versions],
                    needs_added=sorted(_needs(fn)),
                )
            )
            continue
        if before.to_dict() == fn.to_dict():
            continue
        old_v = {v.name: v.to_dict() for v in before.versions}
        new_v = {v.name: v.to_dict() for v in fn.versions}
        head_old = {k: v for k, v in before.to_dict().items() if k != "versions"}
        head_new = {k: v for k, v in fn.to_dict().items() if k != "versions"}
        changes.append(
            FunctionChange(
                group=fn.group,
                kind=fn.kind,
                change="changed",
                versions_added=[n for n in new_v if n not in old_v],
                versions_removed=[n for n in old_v if n not in new_v],
                versions_changed=[n for n in new_v if n in old_v and new_v[n] != old_v[n]],
                needs_added=sorted(_needs(fn) - _needs(before)),
                needs_removed=sorted(_needs(before) - _needs(fn)),
                fields_changed=sorted(
                    k
                    for k in head_old.keys() | head_new.keys()
                    if head_old.get(k) != head_new.get(k)
                ),
                runtime_changed=[
                    f"{name} {line}"
                    for name in new_v
                    if name in old_v
                    for line in _runtime_changes(
                        old_v[name].get("runtime") or {}, new_v[name].get("runtime") or {}
                    )
                ],
            )
        )
    for key, fn in old_fns.items():
        if key not in new_fns:
            changes.append(
                FunctionChange(
                    group=fn.group,
                    kind=fn.kind,
                    change="removed",
                    versions_removed=[v.name for v in fn.versions],
                    needs_removed=sorted(_needs(fn)),
                )
            )
    return CatalogChanges(functions=changes, first_version=old is None)


# --------------------------------------------------------------------------- selectors


def user_reviews_everything(*, user: User) -> bool:
    """Reviewers of every catalog: staff, the review permission or the ``reviewers`` group."""
    if user is None or not signed_in(user) or not user.is_active:
        return False
    if user.is_staff or user.has_perm(REVIEW_PERMISSION):
        return True
    return user.groups.filter(name=REVIEWERS_GROUP).exists()


def user_can_review(*, user: User) -> bool:
    """Whether ``user`` reviews anything: everything, or the catalogs of a publisher they own."""
    if user_reviews_everything(user=user):
        return True
    return bool(
        user is not None and signed_in(user) and user.is_active and user.owned_publishers.exists()
    )


def user_can_review_catalog(*, user: User, catalog: Catalog) -> bool:
    """Reviewers of everything, and owners of the catalog's publisher, review contributions
    to it; a private catalog only by those who may see it (its owners and staff)."""
    if user is None or not signed_in(user) or not user.is_active:
        return False
    if user_reviews_everything(user=user):
        return catalog_visible(viewer=user, catalog=catalog)
    return catalog.publisher.owners.filter(pk=user.pk).exists()


def contribution_list_reviewable(
    *, user: User, status: str | None = None, catalog: Catalog | None = None
) -> QuerySet[Contribution]:
    """The review queue of ``user``: every contribution to a catalog they may see (staff: every
    one), or those to publishers they own."""
    qs = contribution_list(status=status, catalog=catalog)
    if user is None or not signed_in(user):
        return qs.none()
    if user_reviews_everything(user=user):
        return qs.filter(catalogs_visible_q(user, prefix="catalog__"))
    return qs.filter(catalog__publisher__owners=user)


def contribution_list(
    *,
    status: str | None = None,
    catalog: Catalog | None = None,
    author: AuthUser | None = None,
) -> QuerySet[Contribution]:
    """Contributions, newest activity first, optionally by status, catalog and author."""
    qs = Contribution.objects.select_related(
        "catalog__publisher", "author", "reviewer", "published_version__catalog__publisher"
    )
    if status:
        qs = qs.filter(status=status)
    if catalog is not None:
        qs = qs.filter(catalog=catalog)
    if author is not None:
        qs = qs.filter(author=author)
    return qs


def catalog_mirror_url(*, catalog: Catalog) -> str | None:
    """The upstream URL of a mirrored catalog (which takes no contributions), else None."""
    return MirrorSource.objects.filter(catalog=catalog).values_list("url", flat=True).first()


def contribution_get(*, pk: int) -> Contribution:
    """Contribution ``pk`` or NotFoundError."""
    try:
        return contribution_list().get(pk=pk)
    except Contribution.DoesNotExist:
        raise NotFoundError(f"Contribution {pk} does not exist.")


def contribution_get_visible(*, pk: int, user: User) -> Contribution:
    """Contribution ``pk`` if its author or a reviewer asks; NotAllowedError for anyone else,
    NotFoundError (as for no contribution) when the target catalog is private to them."""
    contribution = contribution_get(pk=pk)
    if user is not None and signed_in(user) and contribution.author_id == user.pk:
        return contribution
    if not catalog_visible(viewer=user or AnonymousUser(), catalog=contribution.catalog):
        raise NotFoundError(f"Contribution {pk} does not exist.")
    if not user_can_review_catalog(user=user, catalog=contribution.catalog):
        raise NotAllowedError("Only its author and reviewers may see a contribution.")
    return contribution


def contribution_get_reviewable(*, pk: int, user: User) -> Contribution:
    """Contribution ``pk`` if ``user`` reviews its catalog: NotFoundError when the catalog is
    private to them (as for no contribution), else NotAllowedError naming who may."""
    contribution = contribution_get(pk=pk)
    if not catalog_visible(viewer=user or AnonymousUser(), catalog=contribution.catalog):
        raise NotFoundError(f"Contribution {pk} does not exist.")
    if not user_can_review_catalog(user=user, catalog=contribution.catalog):
        raise _not_a_reviewer(contribution)
    return contribution


def _not_a_reviewer(contribution: Contribution) -> NotAllowedError:
    return NotAllowedError(
        f"Only reviewers and owners of publisher '{contribution.catalog.publisher.slug}' may "
        "review contributions to it."
    )


def review_event_list(
    *, contribution: Contribution | None = None, reviewer: User = None
) -> QuerySet[ReviewEvent]:
    """The audit log, oldest first; of one contribution or of all (that ``reviewer`` reviews)."""
    qs = ReviewEvent.objects.select_related("actor", "contribution__catalog__publisher")
    if contribution is not None:
        qs = qs.filter(contribution=contribution)
    if reviewer is not None and not user_reviews_everything(user=reviewer):
        assert signed_in(reviewer)  # user_reviews_everything refuses nobody else
        qs = qs.filter(contribution__catalog__publisher__owners=reviewer)
    elif reviewer is not None:
        qs = qs.filter(catalogs_visible_q(reviewer, prefix="contribution__catalog__"))
    return qs


def contribution_comment_list(*, contribution: Contribution) -> QuerySet[ReviewEvent]:
    """The conversation of a contribution: its comments, oldest first."""
    return review_event_list(contribution=contribution).filter(action=ReviewEventAction.COMMENTED)


def _revision_contents(contribution: Contribution) -> dict[int, str]:
    """The definition of each revision that recorded one, by revision number."""
    rows = ReviewEvent.objects.filter(
        contribution=contribution,
        action__in=[ReviewEventAction.SUBMITTED, ReviewEventAction.RESUBMITTED],
    ).exclude(content="")
    contents = {revision: content for revision, content in rows.values_list("revision", "content")}
    contents[contribution.revision] = contribution.content
    return contents


def unified_diff(old: str, new: str, *, old_name: str, new_name: str) -> list[str]:
    """``old`` → ``new`` as unified diff lines, cut at REVISION_DIFF_LINES (for pages and API:
    plain text, which templates escape)."""
    lines = list(
        itertools.islice(
            difflib.unified_diff(
                old.splitlines(), new.splitlines(), old_name, new_name, lineterm=""
            ),
            REVISION_DIFF_LINES + 1,
        )
    )
    if len(lines) > REVISION_DIFF_LINES:
        lines[REVISION_DIFF_LINES:] = [f"… (cut at {REVISION_DIFF_LINES} lines)"]
    return lines


# Lines of a diff that pages and the API show (a definition or an output can be made huge).
REVISION_DIFF_LINES = 2000


@dataclass(frozen=True)
class RevisionDiff:
    """How the current revision's definition differs from the previous one's."""

    previous: int  # the revision compared against
    current: int
    lines: list[str]  # unified diff; empty when the definitions are the same
    recorded: bool  # False when the previous revision's definition was not kept


def contribution_revision_diff(*, contribution: Contribution) -> RevisionDiff | None:
    """The diff of the definition between the previous revision and the current one, or None
    for a first revision."""
    if contribution.revision <= 1:
        return None
    previous = contribution.revision - 1
    before = _revision_contents(contribution).get(previous)
    if before is None:
        return RevisionDiff(previous, contribution.revision, [], recorded=False)
    lines = unified_diff(
        before,
        contribution.content,
        old_name=f"revision {previous}",
        new_name=f"revision {contribution.revision}",
    )
    return RevisionDiff(previous, contribution.revision, lines, recorded=True)


# --------------------------------------------------------------------------- services


def _require_user(actor: User, what: str) -> None:
    if actor is None or not signed_in(actor):
        raise NotAllowedError(f"Sign in to {what}.")


def _log(
    contribution: Contribution,
    actor: User,
    action: str,
    *,
    reason: str = "",
    version: CatalogVersion | None = None,
    content: str = "",
) -> ReviewEvent:
    return ReviewEvent.objects.create(
        contribution=contribution,
        actor=actor if signed_in(actor) else None,
        action=action,
        reason=reason,
        revision=contribution.revision,
        catalog_version=version,
        content=content,
    )


def contribution_trials_enqueue(*, contribution: Contribution) -> None:
    """Queue trial runs of the contribution's current revision once the transaction commits."""
    if not settings.TRIAL_RUNS_ENABLED:
        return
    # A trial may take the sandbox's whole wall clock: never inside the contribution's request.
    job_enqueue_on_commit(
        "catalogs.tasks.contribution_trials_run_task", contribution.pk, background=True
    )


def _check_contribution_quota(actor: AuthUser, *, new: bool) -> None:
    """QuotaExceededError over the pending contributions quota or the contribution rate."""
    if new:
        limit = settings.CONTRIBUTIONS_PENDING_PER_USER
        pending = Contribution.objects.filter(
            author=actor, status=ContributionStatus.PENDING
        ).count()
        if pending >= limit:
            raise QuotaExceededError(
                f"You have {pending} contributions waiting for review, the most allowed "
                f"(CONTRIBUTIONS_PENDING_PER_USER): wait until one is reviewed."
            )
    rate = settings.CONTRIBUTION_RATE_LIMIT
    wait = rate_limit_hit(namespace="krm-contributions", key=str(actor.pk), limit=rate)
    if wait is not None:
        raise QuotaExceededError(
            f"Too many contributions: at most {rate} per user (CONTRIBUTION_RATE_LIMIT); try "
            f"again in {math.ceil(wait)} s."
        )


def _check_trial_urls(definition: ParsedDefinition) -> None:
    """Refuse URLs its trial runs would fetch from refused addresses, before anything is stored."""
    if settings.TRIAL_RUNS_ENABLED:
        version = definition.function.versions[-1]
        trial_urls_check(runtime=version.runtime, examples=version.examples)


@transaction.atomic
def contribution_submit(*, catalog: Catalog, content: str, actor: User) -> Contribution:
    """Propose a function definition for ``catalog``; any signed-in user may."""
    _require_user(actor, "contribute a function")
    assert signed_in(actor)  # _require_user let it through
    user_check_verified(user=actor, what="contribute a function")
    mirror = catalog_mirror_url(catalog=catalog)
    if mirror is not None:
        # A mirror serves exactly what upstream publishes; an approved contribution would not be.
        raise InvalidInputError(
            f"Catalog '{catalog}' is a mirror of {mirror}; contribute to its upstream instead."
        )
    definition = contribution_definition_parse(content=content)
    _check_trial_urls(definition)
    _check_contribution_quota(actor, new=True)
    contribution = Contribution.objects.create(
        catalog=catalog,
        author=actor,
        content=content,
        group=definition.function.group,
        kind=definition.function.kind,
    )
    _log(contribution, actor, ReviewEventAction.SUBMITTED, content=content)
    contribution_trials_enqueue(contribution=contribution)
    events.emit(ContributionSubmitted(contribution=contribution))
    return contribution


@transaction.atomic
def contribution_resubmit(*, contribution: Contribution, content: str, actor: User) -> Contribution:
    """Send a new revision of a contribution a reviewer asked changes of back to review (it is
    pending again); only its author may."""
    locked = Contribution.objects.select_for_update().get(pk=contribution.pk)
    contribution_check_may_edit(contribution=locked, actor=actor)
    contribution_check_may_resubmit(contribution=locked)
    definition = contribution_definition_parse(content=content)
    _check_trial_urls(definition)
    assert signed_in(actor)  # contribution_check_may_edit let it through
    _check_contribution_quota(actor, new=False)
    locked.content = content
    locked.group = definition.function.group
    locked.kind = definition.function.kind
    locked.status = ContributionStatus.PENDING
    locked.revision += 1
    locked.reviewer = None
    locked.reviewed_at = None
    locked.save()
    _log(locked, actor, ReviewEventAction.RESUBMITTED, content=content)
    contribution_trials_enqueue(contribution=locked)
    events.emit(ContributionSubmitted(contribution=locked, resubmitted=True))
    return locked


def contribution_check_may_edit(*, contribution: Contribution, actor: User) -> None:
    """NotAllowedError unless ``actor`` is the author (checked before the body is read)."""
    _require_user(actor, "edit a contribution")
    assert signed_in(actor)  # _require_user let it through
    if contribution.author_id != actor.pk:
        raise NotAllowedError("Only the author of a contribution may edit it.")


def contribution_check_may_resubmit(*, contribution: Contribution) -> None:
    """InvalidInputError unless a reviewer asked changes of ``contribution`` (a rejection is
    final; a pending or approved contribution has nothing to revise)."""
    if contribution.status == ContributionStatus.REJECTED:
        raise InvalidInputError(
            "A rejected contribution cannot be resubmitted: the rejection is final. "
            "Submit a new contribution instead."
        )
    if contribution.status != ContributionStatus.CHANGES_REQUESTED:
        raise InvalidInputError(
            "Only a contribution with changes requested can be resubmitted; this one is "
            f"{contribution.get_status_display().lower()}."
        )


def contribution_check_may_review(*, contribution: Contribution, actor: User) -> None:
    """NotAllowedError unless ``actor`` reviews the target catalog (a reviewer of everything,
    or an owner of its publisher) and is not the author."""
    if not user_can_review_catalog(user=actor, catalog=contribution.catalog):
        raise _not_a_reviewer(contribution)
    assert signed_in(actor)  # a reviewer
    if contribution.author_id == actor.pk:
        raise NotAllowedError("Nobody reviews their own contribution.")


def _check_can_review(contribution: Contribution, actor: User) -> None:
    contribution_check_may_review(contribution=contribution, actor=actor)
    if contribution.status != ContributionStatus.PENDING:
        raise InvalidInputError(
            f"Only a pending contribution can be reviewed; this one is {contribution.status}."
        )


@transaction.atomic
def contribution_approve(
    *, contribution: Contribution, actor: User, comment: str = ""
) -> Contribution:
    """Approve, with an optional comment for the author: publish a new version of the target
    catalog that includes the definition."""
    from catalogs.publishing.services import catalog_version_publish

    locked = (
        Contribution.objects.select_for_update().select_related("catalog").get(pk=contribution.pk)
    )
    _check_can_review(locked, actor)
    assert signed_in(actor)  # a reviewer
    definition = contribution_definition_parse(content=locked.content)
    merged = catalog_with_function(catalog=locked.catalog, function=definition.function)
    # The reviewer may not own the publisher: the review permission is what authorises this.
    version, created = catalog_version_publish(
        catalog=locked.catalog, content=merged.canonical_bytes(), actor=None
    )
    if created:
        CatalogVersion.objects.filter(pk=version.pk).update(created_by=actor)
    locked.status = ContributionStatus.APPROVED
    locked.reviewer = actor
    locked.reviewed_at = timezone.now()
    locked.reason = (comment or "").strip()
    locked.published_version = version
    locked.save()
    _log(locked, actor, ReviewEventAction.APPROVED, reason=locked.reason, version=version)
    events.emit(ContributionDecided(contribution=locked))
    return locked


def _decide_with_reason(
    contribution: Contribution, actor: User, reason: str, status: str, what: str
) -> Contribution:
    locked = Contribution.objects.select_for_update().get(pk=contribution.pk)
    _check_can_review(locked, actor)
    assert signed_in(actor)  # a reviewer
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInputError(f"A reason is required to {what}.")
    if len(reason) > COMMENT_MAX_CHARS:
        raise InvalidInputError(
            f"The reason is {len(reason)} characters long, over the limit of {COMMENT_MAX_CHARS}."
        )
    locked.status = status
    locked.reviewer = actor
    locked.reviewed_at = timezone.now()
    locked.reason = reason
    locked.save()
    _log(locked, actor, ReviewEventAction(status), reason=reason)
    events.emit(ContributionDecided(contribution=locked))
    return locked


@transaction.atomic
def contribution_reject(*, contribution: Contribution, actor: User, reason: str) -> Contribution:
    """Reject with a required reason the author sees; final (the author cannot resubmit)."""
    return _decide_with_reason(
        contribution, actor, reason, ContributionStatus.REJECTED, "reject a contribution"
    )


@transaction.atomic
def contribution_request_changes(
    *, contribution: Contribution, actor: User, reason: str
) -> Contribution:
    """Ask the author for changes, with a required reason: the author edits the definition and
    resubmits it as a new revision, which is pending again."""
    return _decide_with_reason(
        contribution,
        actor,
        reason,
        ContributionStatus.CHANGES_REQUESTED,
        "request changes to a contribution",
    )


# Characters of one comment (and of a decision's reason).
COMMENT_MAX_CHARS = 10_000


def contribution_check_may_comment(*, contribution: Contribution, actor: User) -> None:
    """NotAllowedError unless ``actor`` is the author or reviews the target catalog."""
    _require_user(actor, "comment on a contribution")
    assert signed_in(actor)  # _require_user let it through
    if contribution.author_id == actor.pk:
        return
    if not user_can_review_catalog(user=actor, catalog=contribution.catalog):
        raise NotAllowedError("Only its author and reviewers may comment on a contribution.")


@transaction.atomic
def contribution_comment_add(*, contribution: Contribution, author: User, body: str) -> ReviewEvent:
    """Add a message to the contribution's conversation (its author or a reviewer of the
    catalog, whatever the status); it is shown in order with the decisions."""
    locked = Contribution.objects.select_for_update().get(pk=contribution.pk)
    contribution_check_may_comment(contribution=locked, actor=author)
    body = (body or "").strip()
    if not body:
        raise InvalidInputError("A comment needs some text.")
    if len(body) > COMMENT_MAX_CHARS:
        raise InvalidInputError(
            f"The comment is {len(body)} characters long, over the limit of {COMMENT_MAX_CHARS}."
        )
    comment = _log(locked, author, ReviewEventAction.COMMENTED, reason=body)
    events.emit(ContributionCommented(comment=comment))
    return comment
