"""Fixtures of the web UI tests (shared with the contribution service tests)."""

from tests.catalogs.review.contribution_fixtures import (  # noqa: F401
    as_user,
    contributor,
    other_owner,
    pending,
    published,
    reviewer,
)
