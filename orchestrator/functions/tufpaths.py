"""Which TUF target a catalog reference names on a registry of this kind (no network, no tuf).

A registry serves catalogs under ``<registry>/c/`` and its TUF metadata under
``<registry>/tuf/``; the target paths are the serving paths below ``/c/``:

- ``<publisher>/<catalog>/catalog.yaml``: the latest pointer (its hashes are the latest version's);
- ``<publisher>/<catalog>/versions/<n>/catalog.yaml``: one immutable version;
- ``<publisher>/<catalog>/revocations.yaml``: the catalog's revocation list;
- ``<publisher>/<catalog>/blobs/sha256/<hex>``: a runtime artifact (exec archive or binary,
  starlark script) the registry serves for the catalog, also served at ``/c/blobs/sha256/<hex>``
  (the URL mirrored catalogs name).

``oci://<host>/<publisher>/<catalog>`` is the same catalog on the same host: tag ``latest`` (or
none) is the latest pointer, ``v<n>`` version ``n``; any other tag, a digest, and the registry's
``sha256/<hex>/catalog.yaml`` URLs name bytes that must be one of the catalog's signed versions.

URLs are percent-decoded before they are mapped (``catalog%2Eyaml``, ``%66unctions``), so how a
URL is spelled never changes which target is checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from orchestrator.functions.fetch import is_loopback

_SLUG = r"[-\w]+"
_URL_PATH = re.compile(
    rf"^(?P<prefix>.*?)/c/(?P<publisher>{_SLUG})/(?P<catalog>{_SLUG})/"
    r"(?:versions/(?P<number>\d+)/|sha256/(?P<hexdigest>[0-9a-fA-F]{64})/)?catalog\.yaml$"
)
_OCI_REPO = re.compile(rf"^(?P<publisher>{_SLUG})/(?P<catalog>{_SLUG})$")
REVOCATIONS = "revocations.yaml"


@dataclass(frozen=True)
class RegistryTarget:
    """A catalog of a registry of this kind, and the target path its bytes must match."""

    registry: str  # scheme://host[:port][/prefix], no trailing slash
    publisher: str
    catalog: str
    # The target path, or "" when the bytes must match one of the catalog's signed versions.
    path: str

    @property
    def latest(self) -> str:
        """The catalog's latest pointer."""
        return f"{self.publisher}/{self.catalog}/catalog.yaml"

    @property
    def revocations(self) -> str:
        """The catalog's revocation list."""
        return f"{self.publisher}/{self.catalog}/{REVOCATIONS}"

    def number(self, path: str) -> int | None:
        """The version number ``path`` names, if it is one of this catalog's versions."""
        prefix = f"{self.publisher}/{self.catalog}/versions/"
        middle = path[len(prefix) : -len("/catalog.yaml")]
        if path.startswith(prefix) and path.endswith("/catalog.yaml") and middle.isdigit():
            return int(middle)
        return None

    def version(self, number: int) -> str:
        """Version ``number`` of the catalog."""
        return f"{self.publisher}/{self.catalog}/versions/{number}/catalog.yaml"


def for_url(url: str) -> RegistryTarget | None:
    """The target an https (or loopback http) catalog URL names, if it is a registry URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or parts.query or parts.fragment:
        return None
    # Decoded repeatedly: a double-encoded name reaches a server that decodes once per hop.
    path = parts.path
    for _ in range(3):
        decoded = unquote(path)
        if decoded == path:
            break
        path = decoded
    found = _URL_PATH.match(path)
    if found is None:
        return None
    registry = f"{parts.scheme}://{parts.netloc}{found['prefix']}".rstrip("/")
    publisher, catalog = found["publisher"], found["catalog"]
    if found["number"] is not None:
        target = f"{publisher}/{catalog}/versions/{int(found['number'])}/catalog.yaml"
    elif found["hexdigest"] is not None:
        target = ""
    else:
        target = f"{publisher}/{catalog}/catalog.yaml"
    return RegistryTarget(registry, publisher, catalog, target)


def oci_registry(host: str) -> str:
    """The https URL of an OCI host (plain http to loopback, as the OCI client does)."""
    scheme = "http" if is_loopback(urlsplit("//" + host).hostname or "") else "https"
    return f"{scheme}://{host}"


def for_oci(location: str) -> RegistryTarget | None:
    """The target of ``host/publisher/catalog[:tag|@digest]`` (``oci://`` stripped)."""
    host, slash, rest = location.partition("/")
    if not slash or not host:
        return None
    name, tag = rest, "latest"
    digest = ""
    if "@" in rest:
        name, digest = rest.split("@", 1)
    elif ":" in rest:
        name, tag = rest.rsplit(":", 1)
    found = _OCI_REPO.match(unquote(name))
    if found is None:
        return None
    publisher, catalog = found["publisher"], found["catalog"]
    if digest:
        target = ""
    elif tag == "latest":
        target = f"{publisher}/{catalog}/catalog.yaml"
    elif re.fullmatch(r"v\d+", tag):
        target = f"{publisher}/{catalog}/versions/{int(tag[1:])}/catalog.yaml"
    else:
        target = ""
    return RegistryTarget(oci_registry(host), publisher, catalog, target)


def revocations_url(registry: str, publisher: str, catalog: str) -> str:
    """Where the registry serves a catalog's revocation list."""
    return f"{registry}/c/{publisher}/{catalog}/{REVOCATIONS}"


_BLOB = re.compile(r"^blobs/sha256/(?P<hexdigest>[0-9a-f]{64})$")


def _decoded(path: str) -> str:
    for _ in range(3):
        decoded = unquote(path)
        if decoded == path:
            break
        path = decoded
    return path


def runtime_target(registry: str, publisher: str, catalog: str, uri: str) -> str | None:
    """The target path of runtime artifact ``uri`` named by ``publisher/catalog`` when the
    registry (``scheme://host[/prefix]``) serves it below ``/c/``; None for any other URL."""
    parts, base = urlsplit(uri), urlsplit(registry)
    if (parts.scheme, parts.netloc.lower()) != (base.scheme, base.netloc.lower()):
        return None
    if parts.query or parts.fragment:
        return None
    prefix = f"{base.path.rstrip('/')}/c/"
    path = _decoded(parts.path)
    if not path.startswith(prefix):
        return None
    rest = path[len(prefix) :]
    found = _BLOB.match(rest)
    if found is not None:
        return f"{publisher}/{catalog}/blobs/sha256/{found['hexdigest']}"
    return rest
