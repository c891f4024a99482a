"""Django admin: publishers and catalogs are editable; published versions are read-only."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin
from django.contrib.admin import helpers
from django.http import HttpRequest

from catalogs.exceptions import RegistryError
from catalogs.publishing import services
from catalogs.publishing.models import (
    Catalog,
    CatalogVersion,
    FunctionDefinition,
    FunctionVersion,
    Publisher,
)
from catalogs.publishing.selectors import publisher_slug_is_reserved


class ReadOnlyAdminMixin:
    """Show records without any way to add, change or delete them (they are immutable)."""

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class PublisherAdminForm(forms.ModelForm):
    """Publisher form: a new or renamed slug passes the same checks as ``publisher_create``."""

    class Meta:
        model = Publisher
        fields = ["slug", "display_name", "owners", "verified"]

    def clean_slug(self) -> str:
        slug = self.cleaned_data["slug"]
        if self.instance.pk is None or slug != self.instance.slug:
            try:
                slug = services.publisher_slug_check(
                    slug=slug, publisher=self.instance if self.instance.pk else None
                )
            except RegistryError as err:
                raise forms.ValidationError(err.message)
        return slug

    def clean(self) -> dict:
        super().clean()
        cleaned = self.cleaned_data
        slug = cleaned.get("slug") or self.instance.slug
        if slug and publisher_slug_is_reserved(slug) and cleaned.get("owners"):
            self.add_error(
                "owners", f"Publisher '{slug}' is reserved: it is owned by the registry, not users."
            )
        return cleaned


@admin.register(Publisher)
class PublisherAdmin(admin.ModelAdmin):
    form = PublisherAdminForm
    list_display = ["slug", "display_name", "verified", "created_at"]
    list_filter = ["verified"]
    search_fields = ["slug", "display_name"]
    filter_horizontal = ["owners"]


class CatalogAdminForm(forms.ModelForm):
    """Catalog form: no catalog moves into the mirror publisher except through a mirror source."""

    class Meta:
        model = Catalog
        fields = ["publisher", "name", "description"]

    def clean_publisher(self) -> Publisher:
        publisher = self.cleaned_data["publisher"]
        moved = self.instance.pk is None or publisher.pk != self.instance.publisher_id
        if moved and publisher.slug == settings.MIRROR_PUBLISHER_SLUG:
            raise forms.ValidationError(
                f"Catalogs of publisher '{publisher.slug}' are created by adding a mirror source "
                "(POST /api/v1/sources/)."
            )
        return publisher


@admin.register(Catalog)
class CatalogAdmin(admin.ModelAdmin):
    form = CatalogAdminForm
    list_display = ["__str__", "latest_version", "updated_at"]
    list_select_related = ["publisher", "latest_version"]
    search_fields = ["name", "publisher__slug", "description"]
    readonly_fields = ["latest_version", "created_at", "updated_at"]


class FunctionDefinitionInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = FunctionDefinition
    fields = ["position", "group", "kind", "publisher", "description"]
    extra = 0


@admin.register(CatalogVersion)
class CatalogVersionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["catalog", "number", "digest", "size", "created_by", "created_at"]
    list_select_related = ["catalog__publisher", "created_by"]
    search_fields = ["digest", "catalog__name", "catalog__publisher__slug"]
    fields = (
        "catalog",
        "number",
        "digest",
        "size",
        "document_name",
        "created_by",
        "created_at",
        "content_text",
    )
    readonly_fields = fields
    inlines = [FunctionDefinitionInline]

    @admin.display(description="content")
    def content_text(self, obj: CatalogVersion) -> str:
        from catalogs.publishing.content import catalog_version_bytes

        return catalog_version_bytes(version=obj).decode("utf-8", errors="replace")

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return request.user.is_active and request.user.is_staff


@admin.register(FunctionVersion)
class FunctionVersionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["group", "kind", "name", "catalog_version", "runtime_kinds", "requires_network"]
    list_filter = ["requires_network", "requires_storage_mount"]
    list_select_related = ["catalog_version__catalog__publisher"]
    search_fields = ["group", "kind", "search_text"]

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return request.user.is_active and request.user.is_staff


# --- Contributions: the review actions call the same services as the web UI. ---

from django import forms as _forms  # noqa: E402
from django.contrib import messages as _messages  # noqa: E402
from django.template.response import TemplateResponse  # noqa: E402

from catalogs.exceptions import RegistryError as _RegistryError  # noqa: E402
from catalogs.review import services as _contributions  # noqa: E402
from catalogs.review.models import Contribution, ReviewEvent  # noqa: E402


class _RejectReasonForm(_forms.Form):
    reason = _forms.CharField(widget=_forms.Textarea(attrs={"rows": 3}))


class ReviewEventInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = ReviewEvent
    fields = ("created_at", "actor", "action", "revision", "reason", "catalog_version")
    readonly_fields = fields
    extra = 0


@admin.register(Contribution)
class ContributionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["pk", "group", "kind", "catalog", "author", "status", "revision", "updated_at"]
    list_filter = ["status", "catalog"]
    list_select_related = ["catalog__publisher", "author"]
    search_fields = ["group", "kind", "author__username"]
    fields = ("catalog", "author", "group", "kind", "status", "revision", "reason", "content")
    readonly_fields = fields
    inlines = [ReviewEventInline]
    actions = ["approve_selected", "reject_selected"]

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return _contributions.user_can_review(user=request.user)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return _contributions.user_can_review(user=request.user)

    def _each(self, request: HttpRequest, queryset, call) -> None:
        done = 0
        for contribution in queryset:
            try:
                call(contribution)
                done += 1
            except _RegistryError as err:
                self.message_user(request, f"#{contribution.pk}: {err.message}", _messages.ERROR)
        if done:
            self.message_user(request, f"{done} contribution(s) done.", _messages.SUCCESS)

    @admin.action(description="Approve (publish a new catalog version)")
    def approve_selected(self, request: HttpRequest, queryset) -> None:
        self._each(
            request,
            queryset,
            lambda c: _contributions.contribution_approve(contribution=c, actor=request.user),
        )

    @admin.action(description="Reject (a reason is required)")
    def reject_selected(self, request: HttpRequest, queryset):
        form = _RejectReasonForm(request.POST if "reason" in request.POST else None)
        if not form.is_bound or not form.is_valid():
            # Ask for the reason first; the same action runs again with it.
            context = {
                **self.admin_site.each_context(request),
                "title": "Reject contributions",
                "queryset": queryset,
                "form": form,
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                "opts": self.model._meta,
            }
            return TemplateResponse(request, "admin/catalogs/contribution/reject.html", context)
        reason = form.cleaned_data["reason"]
        self._each(
            request,
            queryset,
            lambda c: _contributions.contribution_reject(
                contribution=c, actor=request.user, reason=reason
            ),
        )
        return None


# --- Mirroring: sources are managed through the API's services; runs are records. ---

from catalogs.mirroring.models import DriftEvent, MirrorSource, RuntimeArtifact, SyncRun  # noqa: E402


@admin.register(MirrorSource)
class MirrorSourceAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["name", "url", "enabled", "mirror_runtimes", "last_digest", "last_synced_at"]
    list_filter = ["enabled", "mirror_runtimes"]
    search_fields = ["name", "url"]


@admin.register(SyncRun)
class SyncRunAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["id", "source", "status", "digest", "queued_at", "finished_at"]
    list_filter = ["status"]
    search_fields = ["source__name", "reason", "digest"]


@admin.register(RuntimeArtifact)
class RuntimeArtifactAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["digest", "size", "source_uri", "created_at"]
    search_fields = ["digest", "source_uri"]


@admin.register(DriftEvent)
class DriftEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["source", "image", "old_digest", "new_digest", "detected_at"]
    search_fields = ["image", "source__name"]


# --- People: requests for the verified badge and publisher audit entries are records; staff
# decide on requests at /verification/ (catalogs.publishing.publishers), which keeps the audit log.
# ---

from catalogs.publishing.models import PublisherEvent, VerificationRequest  # noqa: E402


@admin.register(VerificationRequest)
class VerificationRequestAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["publisher", "status", "requested_by", "created_at", "decided_by"]
    list_filter = ["status"]
    search_fields = ["publisher__slug", "message", "reason"]


@admin.register(PublisherEvent)
class PublisherEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["publisher", "action", "actor", "detail", "created_at"]
    list_filter = ["action"]
    search_fields = ["publisher__slug", "detail"]


from catalogs.trust.models import Revocation, RevocationList  # noqa: E402


class RevocationAdminForm(forms.ModelForm):
    """Revoke through ``revocation_create`` (same checks, same signed list) as the admin user."""

    class Meta:
        model = Revocation
        fields = [
            "catalog",
            "group",
            "kind",
            "version",
            "runtime_digest",
            "reason",
            "detail",
            "replacement",
        ]

    user: Any = None  # set by RevocationAdmin.get_form

    def clean(self) -> dict[str, Any]:
        from catalogs.trust import revocations

        data = super().clean()
        assert data is not None  # ModelForm.clean returns cleaned_data
        if self.errors:
            return data
        fields = {k: data.get(k) or "" for k in self.Meta.fields if k != "catalog"}
        try:
            self.created = revocations.revocation_create(
                catalog=data["catalog"], actor=self.user, **fields
            )
        except RegistryError as err:
            raise forms.ValidationError(err.message) from None
        return data


@admin.register(Revocation)
class RevocationAdmin(admin.ModelAdmin):
    """Revocations are added (never changed or deleted): each one is a signed list sequence."""

    form = RevocationAdminForm
    list_display = ["catalog", "sequence", "__str__", "reason", "created_by", "created_at"]
    list_filter = ["reason"]
    search_fields = ["catalog__name", "kind", "runtime_digest"]

    def get_form(self, request: HttpRequest, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.user = request.user  # type: ignore[attr-defined]  # RevocationAdminForm's attribute
        return form

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj, form, change: bool) -> None:
        obj.pk = form.created.pk  # the service created it in clean()
        obj.sequence = form.created.sequence


@admin.register(RevocationList)
class RevocationListAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["catalog", "sequence", "digest", "signing_key", "created_at"]


from catalogs.accounts import verification as _verification  # noqa: E402
from catalogs.accounts.models import EmailVerification  # noqa: E402


@admin.register(EmailVerification)
class EmailVerificationAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Addresses given at sign-up; staff may vouch for one whose link never arrived."""

    list_display = ["user", "email", "created_at", "verified_at"]
    list_filter = [("verified_at", admin.EmptyFieldListFilter)]
    search_fields = ["user__username", "email"]
    actions = ["vouch"]

    @admin.action(description="Mark the selected addresses verified")
    def vouch(self, request: HttpRequest, queryset) -> None:
        done = sum(
            _verification.email_verification_vouch(user=record.user, actor=request.user)
            for record in queryset.select_related("user")
        )
        self.message_user(request, f"{done} address(es) marked verified.")
