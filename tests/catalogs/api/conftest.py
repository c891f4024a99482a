"""API fixtures: clients logged in as each kind of user."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient


@pytest.fixture
def as_user(owner, other_user, staff_user):
    """``as_user(name)``: an API client for "anonymous", "other", "owner" or "staff"."""

    def make(name: str) -> APIClient:
        client = APIClient()
        users = {"owner": owner, "other": other_user, "staff": staff_user}
        if name != "anonymous":
            client.force_authenticate(users[name])
        return client

    return make


@pytest.fixture
def client_for(contributor, other_user, reviewer, staff_user, owner):
    """``client_for(name)``: an API client for anonymous, author, other, reviewer, staff or
    owner (of the target publisher, example-co), for the modules that have the contribution
    fixtures (``contributor``, ``reviewer``: tests.catalogs.review.contribution_fixtures)."""

    def make(name: str) -> APIClient:
        client = APIClient()
        users = {
            "author": contributor,
            "other": other_user,
            "reviewer": reviewer,
            "staff": staff_user,
            "owner": owner,
        }
        if name != "anonymous":
            client.force_authenticate(users[name])
        return client

    return make
