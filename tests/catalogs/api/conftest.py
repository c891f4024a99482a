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
