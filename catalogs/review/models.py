"""Records of review: contributions of functions to catalogs, their review conversation and the
trial runs of contributed functions."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from catalogs.publishing.models import Catalog, CatalogVersion


class ContributionStatus(models.TextChoices):
    """Where a contribution is in review; transitions are guarded by catalogs.review.services."""

    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


class Contribution(models.Model):
    """A KRMFunctionDefinition proposed by any signed-in user for a catalog they need not own."""

    catalog = models.ForeignKey(Catalog, on_delete=models.PROTECT, related_name="contributions")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="contributions"
    )
    # The definition as the author wrote it (YAML text), kept verbatim for review and editing.
    content = models.TextField()
    group = models.CharField(max_length=253)
    kind = models.CharField(max_length=253)
    status = models.CharField(
        max_length=20, choices=ContributionStatus.choices, default=ContributionStatus.PENDING
    )
    reason = models.TextField(blank=True)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="reviewed_contributions",
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    published_version = models.ForeignKey(
        CatalogVersion, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    revision = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "catalogs_contribution"
        ordering = ["-updated_at", "-pk"]
        permissions = [("review_contribution", "Can approve or reject contributions")]
        indexes = [models.Index(fields=["status", "catalog"], name="contribution_status")]

    def __str__(self) -> str:
        return f"{self.group}/{self.kind} → {self.catalog} ({self.status})"


class ReviewEventAction(models.TextChoices):
    """What happened to a contribution."""

    SUBMITTED = "submitted", "Submitted"
    RESUBMITTED = "resubmitted", "Resubmitted"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    COMMENTED = "commented", "Commented"


class ReviewEvent(models.Model):
    """One entry of the audit log: who did what to a contribution, when and why."""

    contribution = models.ForeignKey(Contribution, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    action = models.CharField(max_length=20, choices=ReviewEventAction.choices)
    reason = models.TextField(blank=True)
    revision = models.PositiveIntegerField(default=1)
    catalog_version = models.ForeignKey(
        CatalogVersion, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "catalogs_reviewevent"
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.action} #{self.contribution_id} by {self.actor_id}"


class TrialRunStatus(models.TextChoices):
    """How one sandboxed trial run of a contributed function ended (catalogs.review.sandbox)."""

    OK = "ok", "OK"
    FAILED = "failed", "Failed"
    TIMEOUT = "timeout", "Timed out"
    OUTPUT_LIMIT = "output_limit", "Output limit"
    INVALID_OUTPUT = "invalid_output", "Invalid output"
    NOT_RUN = "not_run", "Not run here"


class TrialRun(models.Model):
    """One run of a contribution's function on one example input, inside the trial sandbox."""

    contribution = models.ForeignKey(
        Contribution, on_delete=models.CASCADE, related_name="trial_runs"
    )
    revision = models.PositiveIntegerField()
    # The version of the function that ran (each new or changed version of a contribution runs).
    version = models.CharField(max_length=100, blank=True)
    example = models.CharField(max_length=200)
    runtime = models.CharField(max_length=20)  # exec | starlark | container
    status = models.CharField(max_length=20, choices=TrialRunStatus.choices)
    flagged = models.BooleanField(default=False)
    flags = models.JSONField(default=list, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    duration = models.FloatField(default=0.0)
    stderr = models.TextField(blank=True)
    results = models.JSONField(default=list, blank=True)
    diff = models.JSONField(default=dict, blank=True)
    tried_network = models.BooleanField(default=False)
    tried_write_outside = models.BooleanField(default=False)
    detail = models.TextField(blank=True)
    jail = models.CharField(max_length=200, blank=True)
    # Times the trial was held back by an upstream host's rate limit before it ran.
    deferrals = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "catalogs_trialrun"
        ordering = ["-created_at", "pk"]

    def __str__(self) -> str:
        return (
            f"trial #{self.contribution_id} r{self.revision} {self.version} {self.example}: "
            f"{self.status}"
        )
