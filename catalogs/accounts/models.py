"""API tokens: many per user, named, scoped, expiring, and stored as a SHA-256 digest only."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class TokenScope(models.TextChoices):
    """What a token may do: read (GET), publish (every write but review), review (decisions)."""

    READ = "read", "read"
    PUBLISH = "publish", "publish"
    REVIEW = "review", "review"


ALL_SCOPES: tuple[str, ...] = tuple(TokenScope.values)


class ApiToken(models.Model):
    """One named token of a user. The secret is shown once; the row keeps its SHA-256 only."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    # hex SHA-256 of the whole secret ("krm_…", or a key DRF issued before tokens were hashed).
    digest = models.CharField(max_length=64, unique=True)
    # The first characters of the secret, enough to recognise it in a list and in a leak report.
    hint = models.CharField(max_length=16)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="accounts_token_user_name"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id}:{self.name}"

    def is_expired(self, now=None) -> bool:
        """Whether the token's expiry has passed."""
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())

    def has_scope(self, scope: str) -> bool:
        """Whether the token grants ``scope``."""
        return scope in self.scopes


class EmailVerification(models.Model):
    """The e-mail address a user gave at sign-up, and when they proved it is theirs.

    Only self-signed-up accounts have one: an account an administrator created is vouched for by
    the administrator. While ``verified_at`` is empty the user may sign in and read, but neither
    create a publisher nor contribute (``user_check_verified``).
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="email_verification"
    )
    email = models.EmailField()
    created_at = models.DateTimeField(default=timezone.now)
    verified_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        state = "verified" if self.verified_at else "unverified"
        return f"{self.user_id}:{self.email} ({state})"
