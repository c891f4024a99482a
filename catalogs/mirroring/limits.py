"""The limits every mirror fetch runs under, from settings (size, time, redirects, destinations,
credentials)."""

from __future__ import annotations

from django.conf import settings

from catalogs.mirroring.fetchers import Limits
from catalogs.mirroring.fetchers.base import credentials_parse


def mirror_limits(*, max_bytes: int | None = None, credentials: bool = True) -> Limits:
    """Fetch limits from settings; without ``credentials`` (a check that sends none) a bad
    MIRROR_CREDENTIALS is not read (the sync reports it)."""
    return Limits(
        max_bytes=max_bytes if max_bytes is not None else settings.MIRROR_MAX_BYTES,
        timeout=float(settings.MIRROR_TIMEOUT),
        max_redirects=int(settings.MIRROR_MAX_REDIRECTS),
        allowed_hosts=tuple(settings.MIRROR_ALLOWED_HOSTS),
        allowed_networks=tuple(settings.MIRROR_ALLOWED_NETWORKS),
        allow_local_paths=bool(settings.MIRROR_ALLOW_LOCAL_PATHS),
        ca_bundle=str(settings.MIRROR_CA_BUNDLE or ""),
        oci_plain_http_hosts=tuple(settings.MIRROR_OCI_PLAIN_HTTP_HOSTS),
        credentials=credentials_parse(settings.MIRROR_CREDENTIALS) if credentials else (),
        netrc_file=str(settings.MIRROR_NETRC_FILE or "") if credentials else "",
    )
