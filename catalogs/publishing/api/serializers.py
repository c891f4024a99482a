"""API serializers: input ones validate shapes only; output ones render records."""

from __future__ import annotations

import functools

from django.contrib.auth.models import User
from django.db.models import Sum
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from catalogs.mirroring.models import MirrorSource
from catalogs.publishing.models import (
    Catalog,
    CatalogVersion,
    CatalogVersionPulls,
    FunctionDefinition,
    FunctionVersion,
    Publisher,
    SigningKey,
    Visibility,
)


def absolute_url(request, path: str) -> str:
    """``path`` as an absolute URL for this request (or the bare path with no request)."""
    if request is None:
        return path
    # The scheme and host once per request, not once per row of a list (host validation).
    base = getattr(request, "_absolute_base", None)
    if base is None:
        base = request.build_absolute_uri("/").removesuffix("/")
        request._absolute_base = base
    return base + path


# Placeholders that every URL converter used below accepts; replaced in the reversed path.
_SLOTS = {
    "publisher": "slot-publisher",
    "catalog": "slot-catalog",
    "pk": 918273645,
    "number": 918273646,
    "hexdigest": "f" * 63 + "e",
}


@functools.lru_cache(maxsize=64)
def _path_template(name: str, keys: tuple[str, ...]) -> str:
    """The path of URL ``name`` as a format string with one ``{key}`` field per keyword."""
    path = reverse(name, kwargs={key: _SLOTS[key] for key in keys})
    path = path.replace("{", "{{").replace("}", "}}")
    for key in keys:
        path = path.replace(str(_SLOTS[key]), "{" + key + "}", 1)
    return path


def fast_reverse(name: str, **kwargs: object) -> str:
    """``reverse(name, kwargs=kwargs)``, reversed once per URL name and then filled in.

    Lists render several URLs per row; Django's reverse costs a resolver walk each time. The
    values are slugs, integers and hex digests, which need no quoting.
    """
    return _path_template(name, tuple(sorted(kwargs))).format(**kwargs)


def catalog_latest_url(request, catalog: Catalog) -> str:
    """Absolute URL serving the latest version of ``catalog``."""
    path = fast_reverse("catalogs:latest", publisher=catalog.publisher.slug, catalog=catalog.name)
    return absolute_url(request, path)


def catalog_version_url(request, version: CatalogVersion) -> str:
    """Absolute URL serving ``version`` pinned by number."""
    catalog = version.catalog
    kwargs = {
        "publisher": catalog.publisher.slug,
        "catalog": catalog.name,
        "number": version.number,
    }
    return absolute_url(request, fast_reverse("catalogs:version", **kwargs))


def catalog_version_digest_url(request, version: CatalogVersion) -> str:
    """Absolute URL serving ``version`` pinned by digest."""
    catalog = version.catalog
    kwargs = {
        "publisher": catalog.publisher.slug,
        "catalog": catalog.name,
        "hexdigest": version.digest.removeprefix("sha256:"),
    }
    return absolute_url(request, fast_reverse("catalogs:digest", **kwargs))


def catalog_version_signature_url(request, version: CatalogVersion) -> str:
    """Absolute URL of the registry's signature beside ``version``'s pinned-by-number URL."""
    catalog = version.catalog
    kwargs = {
        "publisher": catalog.publisher.slug,
        "catalog": catalog.name,
        "number": version.number,
    }
    return absolute_url(request, fast_reverse("catalogs:version-sig", **kwargs))


class SignatureSerializer(serializers.Serializer):
    """The registry's signature of a version: who signed, with which key, where it is served."""

    signed_by = serializers.CharField()
    key_id = serializers.CharField()
    signature_url = serializers.URLField()
    summary = serializers.CharField()


def signature_data(request, version: CatalogVersion | None) -> dict | None:
    """The signature block of ``version`` (None if it is not signed yet)."""
    if version is None or not version.signing_key_id:
        return None
    assert version.signing_key is not None  # signing_key_id is set
    key_id = version.signing_key.key_id
    return {
        "signed_by": "this registry",
        "key_id": key_id,
        "signature_url": catalog_version_signature_url(request, version),
        "summary": f"signed by this registry (key id {key_id})",
    }


class SigningKeySerializer(serializers.ModelSerializer):
    """A key the registry signs (current) or signed (retired) with; public half only."""

    class Meta:
        model = SigningKey
        fields = ["key_id", "public_key_pem", "current", "created_at", "retired_at"]
        read_only_fields = fields


# --- Publishers ---


class PublisherSerializer(serializers.ModelSerializer):
    """A publisher as shown by the API."""

    owners: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username", many=True, read_only=True
    )

    class Meta:
        model = Publisher
        fields = [
            "slug",
            "display_name",
            "verified",
            "visibility",
            "owners",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class PublisherCreateSerializer(serializers.Serializer):
    """Input of publisher creation."""

    slug = serializers.SlugField(max_length=100)
    display_name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    visibility = serializers.ChoiceField(
        choices=Visibility.choices,
        required=False,
        default=Visibility.PUBLIC,
        help_text="private: only the publisher's owners (and staff) see it and its catalogs.",
    )


class PublisherUpdateSerializer(serializers.Serializer):
    """Input of a publisher update; owners are user names and replace the current owners."""

    display_name = serializers.CharField(max_length=200, required=False)
    owners = serializers.ListField(child=serializers.CharField(max_length=150), required=False)
    visibility = serializers.ChoiceField(
        choices=Visibility.choices,
        required=False,
        help_text="private: only the owners (and staff) see the publisher and all its catalogs.",
    )


# --- Catalogs ---


class CatalogMirrorSerializer(serializers.ModelSerializer):
    """Provenance of a mirror's catalog: its source, upstream and the served version's check."""

    # A declared field named like Field.source (the metaclass takes it off the class).
    source = serializers.IntegerField(source="pk", read_only=True)  # type: ignore[assignment]
    source_url = serializers.SerializerMethodField()
    upstream_url = serializers.CharField(source="url", read_only=True)

    class Meta:
        model = MirrorSource
        fields = ["source", "name", "source_url", "upstream_url", "verification", "last_synced_at"]
        read_only_fields = fields

    def get_source_url(self, obj: MirrorSource) -> str:
        path = fast_reverse("api:source-detail", pk=obj.pk)
        return absolute_url(self.context.get("request"), path)


class CatalogSerializer(serializers.ModelSerializer):
    """A catalog with where its latest version is served; ``mirror`` is null unless mirrored."""

    publisher: serializers.SlugRelatedField[Publisher] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    latest_version = serializers.SerializerMethodField()
    latest_digest = serializers.SerializerMethodField()
    catalog_url = serializers.SerializerMethodField()
    mirror = CatalogMirrorSerializer(source="mirror_source", read_only=True, allow_null=True)
    signature = serializers.SerializerMethodField()
    private = serializers.BooleanField(
        read_only=True, help_text="The catalog or its publisher is private."
    )
    pulls = serializers.SerializerMethodField(
        help_text="Pulls of every version, over HTTPS (/c/) and OCI (/v2/ manifest GETs)."
    )

    class Meta:
        model = Catalog
        fields = [
            "publisher",
            "name",
            "description",
            "visibility",
            "private",
            "latest_version",
            "latest_digest",
            "catalog_url",
            "mirror",
            "signature",
            "pulls",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_latest_version(self, obj: Catalog) -> int | None:
        return obj.latest_version.number if obj.latest_version else None

    def get_latest_digest(self, obj: Catalog) -> str | None:
        return obj.latest_version.digest if obj.latest_version else None

    def get_catalog_url(self, obj: Catalog) -> str:
        return catalog_latest_url(self.context.get("request"), obj)

    @extend_schema_field(SignatureSerializer(allow_null=True))
    def get_signature(self, obj: Catalog) -> dict | None:
        return signature_data(self.context.get("request"), obj.latest_version)

    def get_pulls(self, obj: Catalog) -> int:
        pulls = getattr(obj, "pulls", None)
        if pulls is None:  # a catalog just created or updated: not read through catalog_list
            pulls = CatalogVersionPulls.objects.filter(version__catalog=obj).aggregate(
                n=Sum("count")
            )["n"]
        return int(pulls or 0)


class CatalogCreateSerializer(serializers.Serializer):
    """Input of catalog creation."""

    publisher = serializers.SlugField(max_length=100)
    name = serializers.SlugField(max_length=100)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    visibility = serializers.ChoiceField(
        choices=Visibility.choices,
        required=False,
        default=Visibility.PUBLIC,
        help_text="private: only the publisher's owners (and staff) see the catalog.",
    )


class CatalogUpdateSerializer(serializers.Serializer):
    """Input of a catalog update."""

    description = serializers.CharField(required=False, allow_blank=True)
    visibility = serializers.ChoiceField(
        choices=Visibility.choices,
        required=False,
        help_text="private: only the publisher's owners (and staff) see the catalog.",
    )
    latest_version = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text="Make this (older) version the latest again: catalog.yaml, the OCI tag "
        "'latest' and the TUF latest pointer name it until the next publish.",
    )


class CatalogVersionUpdateSerializer(serializers.Serializer):
    """Input of a version update: its deprecation (npm's ``deprecate``)."""

    deprecation = serializers.CharField(
        allow_blank=True,
        trim_whitespace=True,
        help_text="A message for whoever still uses this version; empty withdraws it.",
    )


# --- Versions and functions ---


class FunctionVersionNestedSerializer(serializers.ModelSerializer):
    """A function version inside a catalog version's detail."""

    class Meta:
        model = FunctionVersion
        fields = [
            "name",
            "runtime",
            "runtime_kinds",
            "requires_network",
            "requires_storage_mount",
            "schema",
            "idempotent",
            "usage",
            "examples",
            "license",
            "maintainers",
        ]
        read_only_fields = fields


class FunctionDefinitionSerializer(serializers.ModelSerializer):
    """A function definition inside a catalog version's detail."""

    versions = FunctionVersionNestedSerializer(many=True, read_only=True)

    class Meta:
        model = FunctionDefinition
        fields = [
            "group",
            "kind",
            "description",
            "publisher",
            "home",
            "maintainers",
            "tags",
            "versions",
        ]
        read_only_fields = fields


class CatalogVersionSerializer(serializers.ModelSerializer):
    """A published catalog version and where it is served."""

    version = serializers.IntegerField(source="number", read_only=True)
    created_by: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username", read_only=True
    )
    version_url = serializers.SerializerMethodField()
    digest_url = serializers.SerializerMethodField()
    signature = serializers.SerializerMethodField()
    pulls = serializers.IntegerField(
        read_only=True,
        help_text="Pulls of this version, over HTTPS (/c/) and OCI (/v2/ manifest GETs).",
    )
    latest = serializers.SerializerMethodField(help_text="Whether catalog.yaml serves it.")

    class Meta:
        model = CatalogVersion
        fields = [
            "version",
            "digest",
            "size",
            "document_name",
            "created_by",
            "created_at",
            "version_url",
            "digest_url",
            "signature",
            "pulls",
            "latest",
            "deprecation",
            "deprecated_at",
        ]
        read_only_fields = fields

    def get_latest(self, obj: CatalogVersion) -> bool:
        return obj.catalog.latest_version_id == obj.pk

    @extend_schema_field(SignatureSerializer(allow_null=True))
    def get_signature(self, obj: CatalogVersion) -> dict | None:
        return signature_data(self.context.get("request"), obj)

    def get_version_url(self, obj: CatalogVersion) -> str:
        return catalog_version_url(self.context.get("request"), obj)

    def get_digest_url(self, obj: CatalogVersion) -> str:
        return catalog_version_digest_url(self.context.get("request"), obj)


class CatalogVersionDetailSerializer(CatalogVersionSerializer):
    """A catalog version with its functions."""

    functions = FunctionDefinitionSerializer(many=True, read_only=True)

    class Meta(CatalogVersionSerializer.Meta):
        fields = [*CatalogVersionSerializer.Meta.fields, "functions"]
        read_only_fields = fields


class CatalogPullsDaySerializer(serializers.Serializer):
    """One day (UTC) of a catalog's pulls."""

    day = serializers.DateField()
    https = serializers.IntegerField(help_text="GETs of /c/ catalog URLs that sent the bytes.")
    oci = serializers.IntegerField(help_text="GETs of the versions' OCI manifests.")
    total = serializers.IntegerField()


class CatalogVersionContentSerializer(serializers.Serializer):
    """A publish body sent as JSON: the YAML document as one string."""

    content = serializers.CharField(allow_blank=True, trim_whitespace=False)


class CatalogVersionPublishedSerializer(serializers.Serializer):
    """Answer to a publish: the version, its digest and its absolute serving URLs.

    ``catalog_url`` serves the latest version (the ``--trusted-catalog`` URL); ``version_url`` and
    ``digest_url`` pin this version.
    """

    version = serializers.IntegerField()
    digest = serializers.CharField()
    unchanged = serializers.BooleanField(
        help_text="True when this content was already published: nothing new was published, "
        "``version`` is the existing one (200 instead of 201)."
    )
    latest = serializers.BooleanField(help_text="Whether catalog.yaml serves this version.")
    detail = serializers.CharField(help_text="What happened, in a sentence.")
    catalog_url = serializers.URLField()
    version_url = serializers.URLField()
    digest_url = serializers.URLField()


class MirrorUpstreamSerializer(serializers.Serializer):
    """A mirrored catalog's upstream and how the last good sync verified what it fetched (what
    the mirror badge of the web pages says)."""

    upstream = serializers.CharField(help_text="The upstream URL this registry mirrors.")
    verified_by = serializers.CharField(
        allow_null=True,
        help_text="tuf, cosign, cosign-blob or sigstore; null when nothing upstream verified "
        "it (this registry's signature then only says it served what it fetched).",
    )


def mirror_upstream_data(upstream: str | None, verification_type: str | None) -> dict | None:
    """``{"upstream", "verified_by"}`` of a mirrored catalog; None for a catalog that is no
    mirror (``upstream`` None)."""
    if upstream is None:
        return None
    kind = verification_type or ""
    return {"upstream": upstream, "verified_by": kind if kind not in ("", "none") else None}


class FunctionVersionSerializer(serializers.ModelSerializer):
    """A search result: one version of one function in a catalog's latest version."""

    version = serializers.CharField(source="name", read_only=True)
    description = serializers.CharField(source="function.description", read_only=True)
    publisher = serializers.CharField(source="function.publisher", read_only=True)
    home = serializers.CharField(source="function.home", read_only=True)
    tags = serializers.JSONField(source="function.tags", read_only=True)
    catalog = serializers.SerializerMethodField()
    catalog_version = serializers.IntegerField(source="catalog_version.number", read_only=True)
    catalog_url = serializers.SerializerMethodField()
    signature = serializers.SerializerMethodField()
    mirror = serializers.SerializerMethodField()

    class Meta:
        model = FunctionVersion
        fields = [
            "id",
            "group",
            "kind",
            "version",
            "description",
            "publisher",
            "home",
            "tags",
            "runtime",
            "runtime_kinds",
            "requires_network",
            "requires_storage_mount",
            "idempotent",
            "license",
            "usage",
            "examples",
            "maintainers",
            "schema",
            "catalog",
            "catalog_version",
            "catalog_url",
            "signature",
            "mirror",
        ]
        read_only_fields = fields

    @extend_schema_field(SignatureSerializer(allow_null=True))
    def get_signature(self, obj: FunctionVersion) -> dict | None:
        return signature_data(self.context.get("request"), obj.catalog_version)

    @extend_schema_field(MirrorUpstreamSerializer(allow_null=True))
    def get_mirror(self, obj: FunctionVersion) -> dict | None:
        # Annotated by the view (FunctionVersionViewSet): no query per row.
        return mirror_upstream_data(
            getattr(obj, "mirror_upstream", None), getattr(obj, "mirror_verification", None)
        )

    def get_catalog(self, obj: FunctionVersion) -> str:
        return str(obj.catalog_version.catalog)

    def get_catalog_url(self, obj: FunctionVersion) -> str:
        return catalog_latest_url(self.context.get("request"), obj.catalog_version.catalog)
