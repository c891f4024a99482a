"""Selectors: permission checks and the serving cache."""

import pytest
from django.contrib.auth.models import AnonymousUser

from catalogs.exceptions import NotFoundError
from catalogs.publishing import selectors
from catalogs.publishing.content import ContentCache

pytestmark = pytest.mark.django_db


def test_user_is_owner_or_staff(publisher, owner, other_user, staff_user):
    check = selectors.user_is_owner_or_staff
    assert check(publisher=publisher, user=owner) is True
    assert check(publisher=publisher, user=staff_user) is True
    assert check(publisher=publisher, user=other_user) is False
    assert check(publisher=publisher, user=AnonymousUser()) is False
    assert check(publisher=publisher, user=None) is False


def test_get_selectors_raise_not_found(db):
    with pytest.raises(NotFoundError, match="^Publisher 'x' does not exist.$"):
        selectors.publisher_get(slug="x")
    with pytest.raises(NotFoundError, match="^Catalog 'x/y' does not exist.$"):
        selectors.catalog_get(publisher_slug="x", name="y")


def test_content_cache_evicts_least_recently_used_within_its_byte_budget():
    cache = ContentCache(max_bytes=10)
    cache.put("a", b"aaaa")
    cache.put("b", b"bbbb")
    assert cache.get("a") == b"aaaa"  # a is now the most recently used
    cache.put("c", b"cccc")  # 12 bytes > 10: evicts b
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (b"aaaa", None, b"cccc")
    cache.put("big", b"x" * 11)  # larger than the whole budget: not cached at all
    assert cache.get("big") is None and cache.get("c") == b"cccc"
