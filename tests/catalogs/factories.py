"""factory_boy factories for the registry's records."""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

from catalogs.accounts.models import ALL_SCOPES
from catalogs.accounts.services import api_token_create
from catalogs.publishing import services
from catalogs.publishing.models import Catalog, CatalogVersion, Publisher


def api_token_key(user, *, scopes=ALL_SCOPES, expires_in_days: int | None = None) -> str:
    """The secret of a new API token of ``user`` (full scope unless told)."""
    name = f"test {user.api_tokens.count() + 1}"
    return api_token_create(user=user, name=name, scopes=scopes, expires_in_days=expires_in_days)[1]


def catalog_yaml(
    *functions: tuple[str, str, str], name: str = "test-catalog", runtime: str = "container"
) -> str:
    """A valid KEP-2906 catalog document with one function per (group, kind, version)."""
    lines = [
        "apiVersion: config.kubernetes.io/v1alpha1",
        "kind: Catalog",
        "metadata:",
        f"  name: {name}",
        "spec:",
        "  krmFunctions:",
    ]
    for group, kind, version in functions:
        lines += [
            f"  - group: {group}",
            "    names:",
            f"      kind: {kind}",
            f"    description: The {kind} function.",
            f"    publisher: {group}",
            "    tags: [mutator, test]",
            "    versions:",
            f"    - name: {version}",
            "      schema:",
            "        openAPIV3Schema:",
            "          type: object",
            "      idempotent: true",
            "      runtime:",
        ]
        if runtime == "container":
            lines += [
                "        container:",
                f"          image: registry.example.co/{kind.lower()}:{version}",
            ]
        else:
            lines += [
                "        exec:",
                "          platforms:",
                f"          - bin: {kind.lower()}",
                "            os: linux",
                "            arch: amd64",
                f"            uri: https://example.co/{kind.lower()}.tar.gz",
                "            sha256: " + "ab" * 32,
            ]
        lines += [
            f"      usage: https://example.co/{kind.lower()}/README.md",
            "      examples:",
            f"      - https://example.co/{kind.lower()}/example.md",
            "      license: Apache 2.0",
        ]
    return "\n".join(lines) + "\n"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.co")
    password = factory.django.Password("secret-password")


class PublisherFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Publisher
        django_get_or_create = ("slug",)
        skip_postgeneration_save = True

    slug = factory.Sequence(lambda n: f"publisher-{n}")
    display_name = factory.LazyAttribute(lambda p: p.slug.title())

    @factory.post_generation
    def owners(self, create: bool, extracted: list | None, **kwargs) -> None:
        if create and extracted:
            self.owners.add(*extracted)


class CatalogFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Catalog

    publisher = factory.SubFactory(PublisherFactory)
    name = factory.Sequence(lambda n: f"catalog-{n}")
    description = "A test catalog."


class CatalogVersionFactory(factory.django.DjangoModelFactory):
    """Publishes through the real service, so rows, digest and functions are consistent."""

    class Meta:
        model = CatalogVersion

    catalog = factory.SubFactory(CatalogFactory)
    content = factory.Sequence(lambda n: catalog_yaml(("example.co", f"Fn{n}", "v1")))

    @classmethod
    def _create(cls, model_class, catalog: Catalog, content: str, **kwargs) -> CatalogVersion:
        version, _ = services.catalog_version_publish(catalog=catalog, content=content, actor=None)
        return version
