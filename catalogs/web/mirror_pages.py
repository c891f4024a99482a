"""Mirror pages for operators: sources with status, "sync now", run history, drift events."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from catalogs import mirrors
from catalogs.exceptions import AlreadyExistsError, NotAllowedError
from catalogs.models import DriftEvent, SyncRun
from catalogs.web.views import _render, domain_errors


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
    return _render(request, "mirror_list.html", {"sources": sources})


def _last_success(runs) -> SyncRun | None:
    """The newest run that served upstream's catalog (succeeded, or found it unchanged)."""
    ok = (SyncRun.Status.SUCCEEDED, SyncRun.Status.UNCHANGED)
    return runs.filter(status__in=ok).order_by("-finished_at", "-pk").first()


@login_required
@domain_errors
def mirror_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One source: settings, verification, run history with reasons, drift events."""
    _require_operator(request)
    source = mirrors.mirror_source_get(pk=pk)
    runs = mirrors.sync_run_list(source=source)
    context = {
        "source": source,
        "last_success": _last_success(runs),
        "runs": runs[:50],
        "drift": DriftEvent.objects.filter(source=source).select_related("run")[:50],
    }
    return _render(request, "mirror_detail.html", context)


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
        messages.success(request, f"Sync run {run.pk} queued for {source.name}.")
    return redirect("web:mirror", pk=pk)
