"""Fixtures of contribution and web UI tests: users per role, a catalog, a pending contribution."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from catalogs.publishing import services
from catalogs.review import services as contributions
from tests.catalogs.factories import PublisherFactory, UserFactory, catalog_yaml

DEFINITION = """\
apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionDefinition
spec:
  group: contrib.example.org
  names:
    kind: SetOwner
  description: Sets an owner label on every resource.
  publisher: contrib.example.org
  tags: [labels, mutator]
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        type: object
        required: [owner]
        properties:
          owner:
            type: string
            description: The owner to set.
    runtime:
      container:
        image: registry.example.org/set-owner:v1
    usage: https://example.org/set-owner/README.md
    license: Apache-2.0
"""


@pytest.fixture
def reviewer(db):
    """A member of the ``reviewers`` group, owning nothing."""
    user = UserFactory(username="reviewer")
    group, _ = Group.objects.get_or_create(name=contributions.REVIEWERS_GROUP)
    user.groups.add(group)
    return user


@pytest.fixture
def contributor(db):
    """A signed-in user with no special rights, who contributes."""
    return UserFactory(username="contributor")


@pytest.fixture
def other_owner(db):
    """The owner of a different publisher."""
    user = UserFactory(username="other-owner")
    PublisherFactory(slug="other-co", display_name="Other Co", owners=[user])
    return user


@pytest.fixture
def published(catalog):
    """``example-co/functions`` with one published version (function example.co/Fn v1)."""
    services.catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "Fn", "v1")), actor=None
    )
    catalog.refresh_from_db()
    return catalog


@pytest.fixture
def pending(published, contributor):
    """A pending contribution of SetOwner to ``published``."""
    return contributions.contribution_submit(
        catalog=published, content=DEFINITION, actor=contributor
    )


@pytest.fixture
def as_user(client):
    """Log ``client`` in as the given user (or stay anonymous for None) and return it."""

    def login(user):
        client.logout()
        if user is not None:
            client.force_login(user)
        return client

    return login
