"""A small client of the OCI distribution API: image references, registry auth, verified pulls.

Pulls: ``GET /v2/<name>/manifests/<ref>`` and ``GET /v2/<name>/blobs/<digest>``, every answer
checked against the digest it was asked for before anything keeps it. Pushes (``krm push``): a
monolithic blob upload (``POST`` then ``PUT ?digest=``) and a manifest ``PUT``. Credentials come
from the docker CLI's ``config.json`` (``$DOCKER_CONFIG/config.json``, else
``~/.docker/config.json``; ``auths`` entries with ``auth`` or ``username``/``password``); a
registry that answers 401 with a ``Bearer`` challenge gets a token from its realm (with those
credentials when there are any), one with a ``Basic`` challenge gets the credentials themselves.
Plain http is used only for loopback registries, as everywhere else in the engine; redirects are
re-checked at every hop and never carry the registry's ``Authorization`` header to another host.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from dataclasses import dataclass
from typing import Any, BinaryIO
from urllib.parse import urlencode, urlsplit

from orchestrator.functions.fetch import CHUNK, MAX_REDIRECTS, FetchError, check_url, is_loopback
from orchestrator.functions.options import FnOptions

MAX_MANIFEST_BYTES = 4 * 1024 * 1024
MAX_TOKEN_BYTES = 1024 * 1024

INDEX_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
ACCEPT = ", ".join(INDEX_TYPES + MANIFEST_TYPES)

DOCKER_HUB = "docker.io"
DOCKER_HUB_API = "registry-1.docker.io"
_HUB_KEYS = ("https://index.docker.io/v1/", "index.docker.io", "docker.io", DOCKER_HUB_API)

_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_CHALLENGE_PARAM = re.compile(r'(\w+)="([^"]*)"')


class NotFoundError(FetchError):
    """The registry answered 404: no such manifest or blob (or repository)."""


@dataclass(frozen=True)
class ImageRef:
    """A parsed image reference: registry host, repository, tag and/or ``sha256:`` digest."""

    registry: str
    repository: str
    tag: str | None = None
    digest: str | None = None

    def __str__(self) -> str:
        text = f"{self.registry}/{self.repository}"
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text

    @property
    def api_host(self) -> str:
        """The host the API is on (Docker Hub's differs from its name)."""
        return DOCKER_HUB_API if self.registry == DOCKER_HUB else self.registry

    def with_digest(self, digest: str) -> ImageRef:
        """The same image pinned to ``digest``."""
        return ImageRef(self.registry, self.repository, self.tag, digest)


def parse_image(text: str) -> ImageRef:
    """Parse ``[host[:port]/]path[:tag][@sha256:<hex>]`` as the docker CLI does."""
    rest, _, digest = text.partition("@")
    if digest:
        algorithm, _, hexdigits = digest.partition(":")
        if algorithm != "sha256":
            raise FetchError(f"image {text!r}: only sha256 digests are supported")
        if not _HEX64.fullmatch(hexdigits):
            raise FetchError(f"image {text!r}: the digest is not 64 lower-case hex digits")
    tag = None
    colon = rest.rfind(":")
    if colon > rest.rfind("/"):  # a colon in the last component starts the tag, not a port
        rest, tag = rest[:colon], rest[colon + 1 :]
        if not _TAG.fullmatch(tag):
            raise FetchError(f"image {text!r}: invalid tag {tag!r}")
    first, slash, remainder = rest.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        registry, path = first, remainder
    else:
        registry, path = DOCKER_HUB, rest
        if "/" not in path:
            path = f"library/{path}"
    if not path or not all(_COMPONENT.fullmatch(p) for p in path.split("/")):
        raise FetchError(f"image {text!r}: invalid repository name {path!r}")
    return ImageRef(registry, path, tag, digest or None)


def docker_config_path() -> str:
    """``$DOCKER_CONFIG/config.json``, else ``~/.docker/config.json``."""
    base = os.environ.get("DOCKER_CONFIG") or os.path.join(os.path.expanduser("~"), ".docker")
    return os.path.join(base, "config.json")


def _auth_key(key: str) -> str:
    parts = urlsplit(key if "://" in key else f"//{key}")
    return (parts.netloc or parts.path).lower()


def credentials(registry: str) -> tuple[str, str] | None:
    """(user, password) for ``registry`` from the docker config's ``auths``, or None."""
    path = docker_config_path()
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise FetchError(f"cannot read registry credentials from {path}: {exc}") from None
    auths = config.get("auths") if isinstance(config, dict) else None
    if not isinstance(auths, dict):
        return None
    wanted = {registry.lower()}
    if registry == DOCKER_HUB:
        wanted.update(_auth_key(k) for k in _HUB_KEYS)
    for key, entry in auths.items():
        if _auth_key(str(key)) not in wanted or not isinstance(entry, dict):
            continue
        if entry.get("auth"):
            try:
                user, sep, password = base64.b64decode(entry["auth"]).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                sep = ""
            if not sep:
                raise FetchError(f"{path}: the auth entry for {key} is not base64 of user:password")
            return user, password
        if entry.get("username") and "password" in entry:
            return str(entry["username"]), str(entry["password"])
    return None


def sha256_digest(data: bytes) -> str:
    """``sha256:<hex>`` of data."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


class RegistryClient:
    """Pulls from (and pushes to) one repository of one registry, answering auth challenges
    as they come."""

    def __init__(self, ref: ImageRef, *, options: FnOptions, actions: str = "pull") -> None:
        import httpx  # imported here: only builds that pull images pay for it

        from orchestrator.functions.fetch import _ssl_context

        self.ref = ref
        self.options = options
        host = ref.api_host
        scheme = "http" if is_loopback(host.rsplit(":", 1)[0]) else "https"
        self.base = f"{scheme}://{host}/v2/{ref.repository}"
        self.authorization: str | None = None
        self.actions = actions  # the token scope's actions: "pull", or "pull,push" to push
        self._client = httpx.Client(
            verify=_ssl_context(options), timeout=60.0, trust_env=False, follow_redirects=False
        )
        self._httpx = httpx

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def manifest(self, reference: str) -> tuple[bytes, str, str]:
        """(bytes, media type, sha256 digest of the bytes) of a manifest or index.

        When ``reference`` is a digest the bytes must hash to it.
        """
        what = f"manifest {self.ref.registry}/{self.ref.repository}@{reference}"
        if ":" not in reference:
            what = f"manifest {self.ref.registry}/{self.ref.repository}:{reference}"
        chunks: list[bytes] = []
        headers = self._fetch(
            f"{self.base}/manifests/{reference}",
            {"Accept": ACCEPT},
            chunks.append,
            MAX_MANIFEST_BYTES,
            what,
        )
        data = b"".join(chunks)
        digest = sha256_digest(data)
        if reference.startswith("sha256:") and digest != reference:
            raise FetchError(f"{what}: the registry sent bytes with digest {digest}; refusing them")
        media_type = headers.get("content-type", "").split(";", 1)[0].strip()
        return data, media_type, digest

    def blob(self, digest: str, size: int, sink: BinaryIO) -> None:
        """Stream blob ``digest`` into ``sink``; it must be exactly ``size`` bytes and hash to
        ``digest`` (the caller discards the sink on error)."""
        h = hashlib.sha256()
        count = 0

        def take(chunk: bytes) -> None:
            nonlocal count
            count += len(chunk)
            h.update(chunk)
            sink.write(chunk)

        what = f"blob {digest} of {self.ref.registry}/{self.ref.repository}"
        self._fetch(f"{self.base}/blobs/{digest}", {}, take, size, what)
        if count != size:
            raise FetchError(f"{what}: got {count} bytes, the manifest says {size}")
        actual = "sha256:" + h.hexdigest()
        if actual != digest:
            raise FetchError(f"{what}: the registry sent bytes with digest {actual}; refusing them")

    def _fetch(
        self, url: str, headers: dict[str, str], take: Any, max_bytes: int, what: str
    ) -> dict[str, str]:
        """GET url (answering one auth challenge, following checked redirects), feeding the
        body to ``take`` chunk by chunk; returns the final response's headers."""
        if self.options.offline:
            raise FetchError(f"cannot pull {what}: --offline and not in the cache")
        httpx = self._httpx
        current = url
        challenged = False
        hops = 0
        while True:
            try:
                check_url(current)
            except FetchError as exc:
                raise FetchError(f"pulling {what}: {exc.message}") from None
            sent = dict(headers)
            same_host = urlsplit(current).netloc == urlsplit(url).netloc
            if self.authorization and same_host:
                sent["Authorization"] = self.authorization
            try:
                with self._client.stream("GET", current, headers=sent) as resp:
                    if resp.status_code == 401 and same_host and not challenged:
                        challenged = True
                        self._authorize(resp.headers.get("www-authenticate", ""), what)
                        continue
                    if resp.is_redirect:
                        hops += 1
                        if hops > MAX_REDIRECTS:
                            raise FetchError(f"pulling {what}: more than {MAX_REDIRECTS} redirects")
                        current = str(resp.url.join(resp.headers.get("location", "")))
                        continue
                    if resp.status_code == 404:
                        raise NotFoundError(f"pulling {what}: {_status_text(resp)}")
                    if resp.status_code != 200:
                        raise FetchError(f"pulling {what}: {_status_text(resp)}")
                    declared = resp.headers.get("content-length")
                    if declared and declared.isdigit() and int(declared) > max_bytes:
                        raise FetchError(
                            f"pulling {what}: {declared} bytes is over the limit of "
                            f"{max_bytes} bytes"
                        )
                    size = 0
                    for chunk in resp.iter_bytes(CHUNK):
                        size += len(chunk)
                        if size > max_bytes:
                            raise FetchError(f"pulling {what}: over the limit of {max_bytes} bytes")
                        take(chunk)
                    return {k.lower(): v for k, v in resp.headers.items()}
            except httpx.HTTPError as exc:
                raise FetchError(f"pulling {what}: {exc}") from None

    def _send(
        self, method: str, url: str, what: str, *, content: bytes = b"", headers: dict[str, str]
    ) -> Any:
        """One push request (``content`` in full), answering one auth challenge; the response.
        Redirects are not followed: the push API answers with ``Location`` headers instead."""
        challenged = False
        while True:
            try:
                check_url(url)
            except FetchError as exc:
                raise FetchError(f"pushing {what}: {exc.message}") from None
            sent = dict(headers)
            if self.authorization:
                sent["Authorization"] = self.authorization
            try:
                resp = self._client.request(method, url, content=content, headers=sent)
            except self._httpx.HTTPError as exc:
                raise FetchError(f"pushing {what}: {exc}") from None
            if resp.status_code == 401 and not challenged:
                challenged = True
                self._authorize(resp.headers.get("www-authenticate", ""), what)
                continue
            return resp

    def blob_exists(self, digest: str) -> bool:
        """Whether the repository has blob ``digest`` (``HEAD``)."""
        resp = self._send("HEAD", f"{self.base}/blobs/{digest}", f"blob {digest}", headers={})
        return bool(resp.status_code == 200)

    def push_blob(self, data: bytes) -> str:
        """Upload ``data`` as a blob of the repository (unless there already); its digest."""
        digest = sha256_digest(data)
        what = f"blob {digest} to {self.ref.registry}/{self.ref.repository}"
        if self.blob_exists(digest):
            return digest
        resp = self._send("POST", f"{self.base}/blobs/uploads/", what, headers={})
        if resp.status_code != 202 or not resp.headers.get("location"):
            raise FetchError(f"pushing {what}: starting the upload: {_status_text(resp)}")
        location = str(resp.url.join(resp.headers["location"]))
        sep = "&" if "?" in location else "?"
        resp = self._send(
            "PUT",
            f"{location}{sep}{urlencode({'digest': digest})}",
            what,
            content=data,
            headers={"Content-Type": "application/octet-stream"},
        )
        if resp.status_code != 201:
            raise FetchError(f"pushing {what}: {_status_text(resp)}")
        return digest

    def push_manifest(self, reference: str, data: bytes, media_type: str) -> str:
        """PUT a manifest at ``reference`` (a tag or its digest); its digest, as the registry
        confirms it."""
        digest = sha256_digest(data)
        what = f"manifest {self.ref.registry}/{self.ref.repository}:{reference}"
        resp = self._send(
            "PUT",
            f"{self.base}/manifests/{reference}",
            what,
            content=data,
            headers={"Content-Type": media_type},
        )
        if resp.status_code != 201:
            raise FetchError(f"pushing {what}: {_status_text(resp)}")
        stated = resp.headers.get("docker-content-digest")
        if stated and stated != digest:
            raise FetchError(
                f"pushing {what}: the registry says its digest is {stated}, not {digest}"
            )
        return digest

    def _authorize(self, challenge: str, what: str) -> None:
        """Set ``self.authorization`` from a 401's ``WWW-Authenticate`` challenge."""
        scheme, _, params_text = challenge.strip().partition(" ")
        params = dict(_CHALLENGE_PARAM.findall(params_text))
        creds = credentials(self.ref.registry)
        basic = None
        if creds is not None:
            basic = "Basic " + base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode()
        if scheme.lower() == "basic":
            if basic is None:
                raise FetchError(
                    f"pulling {what}: the registry asks for a login and {docker_config_path()} "
                    f"has none for {self.ref.registry}"
                )
            self.authorization = basic
            return
        if scheme.lower() != "bearer" or not params.get("realm"):
            raise FetchError(f"pulling {what}: HTTP 401 with an unusable challenge {challenge!r}")
        realm = params["realm"]
        scope = params.get("scope") or f"repository:{self.ref.repository}:{self.actions}"
        query = {"scope": scope}
        if params.get("service"):
            query["service"] = params["service"]
        token_url = realm + ("&" if "?" in realm else "?") + urlencode(query)
        try:
            check_url(token_url)
        except FetchError as exc:
            raise FetchError(f"pulling {what}: token realm: {exc.message}") from None
        try:
            resp = self._client.get(token_url, headers={"Authorization": basic} if basic else {})
        except self._httpx.HTTPError as exc:
            raise FetchError(f"pulling {what}: token request to {realm}: {exc}") from None
        if resp.status_code != 200:
            raise FetchError(
                f"pulling {what}: the token service {realm} answered {_status_text(resp)}"
                + (
                    ""
                    if basic
                    else f" (no login for {self.ref.registry} in {docker_config_path()})"
                )
            )
        try:
            body = json.loads(resp.content[:MAX_TOKEN_BYTES])
            token = body.get("token") or body.get("access_token")
        except (ValueError, AttributeError):
            token = None
        if not isinstance(token, str) or not token:
            raise FetchError(f"pulling {what}: the token service {realm} sent no token")
        self.authorization = f"Bearer {token}"


def _status_text(resp: Any) -> str:
    """``HTTP 404 (MANIFEST_UNKNOWN: manifest unknown)`` from a registry's error body."""
    text = f"HTTP {resp.status_code}"
    try:
        resp.read()
        errors = json.loads(resp.content[:65536]).get("errors") or []
        first = errors[0]
        return f"{text} ({first.get('code')}: {first.get('message')})"
    except (ValueError, AttributeError, IndexError, TypeError, KeyError):
        return text
    except Exception:  # a stream that cannot be read any more: the status says enough
        return text
