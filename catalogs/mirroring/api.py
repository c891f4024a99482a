"""API of mirror sources and their sync runs: serializers and viewsets (thin; see mirrors.py)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import permissions, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from catalogs.accounts.auth import TokenHasScope
from catalogs.api.cache import cached_list
from catalogs.mirroring import services as mirrors
from catalogs.mirroring.models import DriftEvent, MirrorSource, SyncRun
from catalogs.publishing.api.serializers import absolute_url, catalog_latest_url, fast_reverse
from catalogs.publishing.selectors import user_is_mirror_operator


class IsMirrorOperator(permissions.BasePermission):
    """Staff or holders of ``mirroring.operate_mirrors``, for every method (as the web pages)."""

    message = "Only staff or mirror operators may see or change mirror sources and their runs."

    def has_permission(self, request: Request, view: object) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and user_is_mirror_operator(user))


def sync_run_url(request, run: SyncRun) -> str:
    """Absolute URL of a run in the API (a list renders one per row: reversed once)."""
    return absolute_url(request, fast_reverse("api:sync-run-detail", pk=run.pk))


class DriftEventSerializer(serializers.ModelSerializer):
    """A container image tag that moved between syncs."""

    class Meta:
        model = DriftEvent
        fields = ["image", "old_digest", "new_digest", "detected_at", "run"]
        read_only_fields = fields


class SyncRunSerializer(serializers.ModelSerializer):
    """A sync run: status, timings, what it saw upstream and, on failure, why."""

    url = serializers.SerializerMethodField()
    # A declared field named like Field.source (the metaclass takes it off the class).
    source: serializers.SlugRelatedField[MirrorSource] = serializers.SlugRelatedField(  # type: ignore[assignment]
        slug_field="name", read_only=True
    )
    version = serializers.SerializerMethodField()
    drift_events = DriftEventSerializer(many=True, read_only=True)

    class Meta:
        model = SyncRun
        fields = [
            "id",
            "url",
            "source",
            "status",
            "reason",
            "digest",
            "bytes",
            "function_count",
            "artifact_count",
            "version",
            "provenance",
            "verification",
            "attempts",
            "deferrals",
            "deferred_until",
            "queued_at",
            "started_at",
            "finished_at",
            "drift_events",
        ]
        read_only_fields = fields

    def get_url(self, obj: SyncRun) -> str:
        return sync_run_url(self.context.get("request"), obj)

    def get_version(self, obj: SyncRun) -> int | None:
        return obj.catalog_version.number if obj.catalog_version else None


class MirrorSourceSerializer(serializers.ModelSerializer):
    """A source as shown by the API: where it comes from, how it is verified, where it is served."""

    publisher = serializers.SerializerMethodField()
    mirror = serializers.SerializerMethodField()
    upstream_url = serializers.CharField(source="url", read_only=True)
    catalog_url = serializers.SerializerMethodField()
    latest_version = serializers.SerializerMethodField()
    latest_digest = serializers.SerializerMethodField()
    runs_url = serializers.SerializerMethodField()
    sync_url = serializers.SerializerMethodField()

    class Meta:
        model = MirrorSource
        fields = [
            "id",
            "name",
            "kind",
            "url",
            "upstream_url",
            "digest",
            "cosign_public_key",
            "sigstore_identity",
            "sigstore_issuer",
            "upstream_root_sha256",
            "mirror_runtimes",
            "enabled",
            "interval_minutes",
            "publisher",
            "mirror",
            "catalog_url",
            "latest_version",
            "latest_digest",
            "last_digest",
            "last_synced_at",
            "verification",
            "image_digests",
            "runs_url",
            "sync_url",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_publisher(self, obj: MirrorSource) -> str:
        return obj.catalog.publisher.slug

    def get_mirror(self, obj: MirrorSource) -> bool:
        return True

    def get_catalog_url(self, obj: MirrorSource) -> str:
        return catalog_latest_url(self.context.get("request"), obj.catalog)

    def get_latest_version(self, obj: MirrorSource) -> int | None:
        latest = obj.catalog.latest_version
        return latest.number if latest else None

    def get_latest_digest(self, obj: MirrorSource) -> str | None:
        latest = obj.catalog.latest_version
        return latest.digest if latest else None

    def _url(self, name: str, obj: MirrorSource) -> str:
        return absolute_url(self.context.get("request"), fast_reverse(name, pk=obj.pk))

    def get_runs_url(self, obj: MirrorSource) -> str:
        return self._url("api:source-runs", obj)

    def get_sync_url(self, obj: MirrorSource) -> str:
        return self._url("api:source-sync", obj)


class MirrorSourceCreateSerializer(serializers.Serializer):
    """Input of source creation."""

    name = serializers.SlugField(max_length=100)
    kind = serializers.ChoiceField(
        choices=MirrorSource.Kind.choices, required=False, default=MirrorSource.Kind.CATALOG
    )
    url = serializers.CharField(max_length=2048)
    digest = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    cosign_public_key = serializers.CharField(required=False, allow_blank=True, default="")
    sigstore_identity = serializers.CharField(
        max_length=1024, required=False, allow_blank=True, default=""
    )
    sigstore_issuer = serializers.CharField(
        max_length=1024, required=False, allow_blank=True, default=""
    )
    upstream_root_sha256 = serializers.CharField(
        max_length=64, required=False, allow_blank=True, default=""
    )
    mirror_runtimes = serializers.BooleanField(required=False, default=False)
    enabled = serializers.BooleanField(required=False, default=True)
    interval_minutes = serializers.IntegerField(required=False, min_value=1, max_value=525600)


class MirrorSourceUpdateSerializer(serializers.Serializer):
    """Input of a source update: any subset of the changeable fields."""

    url = serializers.CharField(max_length=2048, required=False)
    digest = serializers.CharField(max_length=100, required=False, allow_blank=True)
    cosign_public_key = serializers.CharField(required=False, allow_blank=True)
    sigstore_identity = serializers.CharField(max_length=1024, required=False, allow_blank=True)
    sigstore_issuer = serializers.CharField(max_length=1024, required=False, allow_blank=True)
    upstream_root_sha256 = serializers.CharField(max_length=64, required=False, allow_blank=True)
    mirror_runtimes = serializers.BooleanField(required=False)
    enabled = serializers.BooleanField(required=False)
    interval_minutes = serializers.IntegerField(required=False, min_value=1, max_value=525600)


SyncAcceptedSerializer = inline_serializer(
    name="SyncAccepted", fields={"run_url": serializers.URLField(), "run": SyncRunSerializer()}
)


def _validated(serializer_class: type, data: object) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class MirrorSourceViewSet(viewsets.GenericViewSet):
    """Mirror sources: staff and mirror operators see, create, change and sync them."""

    serializer_class = MirrorSourceSerializer
    permission_classes = [IsMirrorOperator, TokenHasScope]

    def get_queryset(self):
        return mirrors.mirror_source_list()

    @cached_list("user")
    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def retrieve(self, request: Request, pk: int) -> Response:
        return Response(self.get_serializer(mirrors.mirror_source_get(pk=int(pk))).data)

    @extend_schema(request=MirrorSourceCreateSerializer)
    def create(self, request: Request) -> Response:
        data = _validated(MirrorSourceCreateSerializer, request.data)
        source = mirrors.mirror_source_create(actor=request.user, **data)
        body = self.get_serializer(mirrors.mirror_source_get(pk=source.pk)).data
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(request=MirrorSourceUpdateSerializer)
    def partial_update(self, request: Request, pk: int) -> Response:
        data = _validated(MirrorSourceUpdateSerializer, request.data)
        source = mirrors.mirror_source_get(pk=int(pk))
        mirrors.mirror_source_update(source=source, actor=request.user, **data)
        return Response(self.get_serializer(mirrors.mirror_source_get(pk=source.pk)).data)

    @extend_schema(request=None, responses={202: SyncAcceptedSerializer})
    def sync(self, request: Request, pk: int) -> Response:
        source = mirrors.mirror_source_get(pk=int(pk))
        run = mirrors.mirror_source_sync_request(source=source, actor=request.user)
        # With eager Celery the run has already finished here: show its current state.
        run = mirrors.sync_run_get(pk=run.pk)
        context = self.get_serializer_context()
        url = sync_run_url(request, run)
        body = {"run_url": url, "run": SyncRunSerializer(run, context=context).data}
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": url})

    @extend_schema(responses=SyncRunSerializer(many=True))
    @cached_list("user")
    def runs(self, request: Request, pk: int) -> Response:
        source = mirrors.mirror_source_get(pk=int(pk))
        page = self.paginate_queryset(
            mirrors.sync_run_list(source=source).prefetch_related("drift_events")
        )
        context = self.get_serializer_context()
        return self.get_paginated_response(SyncRunSerializer(page, many=True, context=context).data)


class SyncRunViewSet(viewsets.GenericViewSet):
    """One sync run, to follow after ``POST /sources/<id>/sync/``."""

    serializer_class = SyncRunSerializer
    permission_classes = [IsMirrorOperator, TokenHasScope]

    def get_queryset(self):
        return SyncRun.objects.all()

    def retrieve(self, request: Request, pk: int) -> Response:
        return Response(self.get_serializer(mirrors.sync_run_get(pk=int(pk))).data)
