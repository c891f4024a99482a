"""Settings of a live registry that serves no TUF metadata (``urls_without_tuf``): for the tests
of what ``krm`` fetches over OCI itself, which a TUF registry's targets would otherwise answer."""

from registry.settings.base import *  # noqa: F403

ROOT_URLCONF = "tests.e2e.urls_without_tuf"
