"""Catalog exec runtimes: download (HTTPS, loopback HTTP, file), verify, unpack, cache, run."""

from __future__ import annotations

import io
import os
import tarfile

import pytest

from orchestrator.functions import (
    CatalogSet,
    FetchError,
    FunctionError,
    TrustConfig,
    fetch,
    run_function_config,
)
from orchestrator.functions.resolve import host_platform
from orchestrator.resource import Resource

OS, ARCH = host_platform()


def _catalog(uri: str, sha: str, bin_: str = "bin/fn") -> str:
    return f"""apiVersion: config.kubernetes.io/v1alpha1
kind: Catalog
metadata:
  name: test-catalog
spec:
  krmFunctions:
  - group: example.com
    names:
      kind: Labeler
    versions:
    - name: v1
      runtime:
        exec:
          platforms:
          - bin: {bin_}
            os: {OS}
            arch: {ARCH}
            uri: {uri}
            sha256: {sha}
"""


CONFIG = {"apiVersion": "example.com/v1", "kind": "Labeler", "metadata": {"name": "l"}}


def _run(tmp_path, catalog_path, opts):
    trust = TrustConfig.load([str(catalog_path)], config=str(tmp_path / "no-config.yaml"))
    catalogs = CatalogSet.for_kustomization(
        [], kustomization_dir=str(tmp_path), trust=trust, options=opts
    )
    res = [Resource(obj={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})]
    return run_function_config(
        CONFIG,
        res,
        role="transformer",
        kustomization_dir=str(tmp_path),
        catalogs=catalogs,
        options=opts,
    )


def test_https_archive_verified_unpacked_cached_and_run(
    tmp_path, https_server, options, kit, write
):
    sha = kit.make_tgz(tmp_path / "fn.tgz", {"bin/fn": kit.LABEL_FN})
    https_server.files["/fn.tgz"] = (tmp_path / "fn.tgz").read_bytes()
    cat = write("catalog.yaml", _catalog(https_server.url("fn.tgz"), sha))
    marker = tmp_path / "marker"
    opts = options(ca_file=https_server.ca_file, env=[f"MARKER={marker}"])
    out = _run(tmp_path, cat, opts)
    assert out.resources[0].obj["metadata"]["labels"] == {"exec-fn": "ran"}
    assert marker.exists()
    assert (tmp_path / "cache" / "blobs" / "sha256" / sha).is_file()
    assert (tmp_path / "cache" / "exec" / sha / "bin" / "fn").is_file()
    # Second build: served from the cache, the server is not asked again.
    https_server.files.clear()
    before = len(https_server.requests)
    out = _run(tmp_path, cat, options(ca_file=https_server.ca_file, offline=True))
    assert out.resources[0].obj["metadata"]["labels"] == {"exec-fn": "ran"}
    assert len(https_server.requests) == before


def test_tampered_archive_fails_before_anything_runs(tmp_path, https_server, options, kit, write):
    sha = kit.make_tgz(tmp_path / "good.tgz", {"bin/fn": kit.LABEL_FN})
    marker = tmp_path / "marker"
    evil = f"#!/bin/sh\ntouch {marker}\ncat\n"
    kit.make_tgz(tmp_path / "evil.tgz", {"bin/fn": evil})
    https_server.files["/fn.tgz"] = (tmp_path / "evil.tgz").read_bytes()
    cat = write("catalog.yaml", _catalog(https_server.url("fn.tgz"), sha))
    with pytest.raises(FetchError) as exc:
        _run(tmp_path, cat, options(ca_file=https_server.ca_file))
    actual = kit.sha256_of(tmp_path / "evil.tgz")
    assert str(exc.value) == (
        f"sha256 mismatch for {https_server.url('fn.tgz')}: expected {sha}, got {actual}; "
        "nothing was unpacked or run"
    )
    assert not marker.exists()
    assert os.listdir(tmp_path / "cache" / "blobs" / "sha256") == []
    assert not (tmp_path / "cache" / "exec").exists()


def test_missing_or_malformed_sha256_refused(tmp_path, options):
    with pytest.raises(FetchError) as exc:
        fetch.fetch_blob("file:///x", None, options=options())
    assert str(exc.value) == "file:///x: no sha256 given; refusing to use an unverified download"
    with pytest.raises(FetchError) as exc:
        fetch.fetch_blob("file:///x", "abc", options=options())
    assert str(exc.value) == "file:///x: sha256 'abc' is not 64 hexadecimal digits"


def test_http_only_to_loopback(http_server, tmp_path, options, kit):
    sha = kit.make_tgz(tmp_path / "fn.tgz", {"bin/fn": kit.LABEL_FN})
    http_server.files["/fn.tgz"] = (tmp_path / "fn.tgz").read_bytes()
    path = fetch.fetch_blob(http_server.url("fn.tgz"), sha, options=options())
    assert fetch._file_sha256(path) == sha
    assert http_server.requests[-1] == ("/fn.tgz", "", 200)
    with pytest.raises(FetchError) as exc:
        fetch.check_url("http://example.com/fn.tgz")
    assert str(exc.value) == (
        "refusing to download http://example.com/fn.tgz: plain http is allowed only to loopback"
    )
    with pytest.raises(FetchError) as exc:
        fetch.check_url("ftp://127.0.0.1/fn.tgz")
    assert str(exc.value) == "refusing to download ftp://127.0.0.1/fn.tgz: unsupported scheme 'ftp'"


def test_file_uri_zip_and_plain_binary(tmp_path, options, kit, write):
    sha = kit.make_zip(tmp_path / "fn.zip", {"tool/run": kit.LABEL_FN})
    cat = write("catalog.yaml", _catalog(f"file://{tmp_path / 'fn.zip'}", sha, "tool/run"))
    out = _run(tmp_path, cat, options())
    assert out.resources[0].obj["metadata"]["labels"] == {"exec-fn": "ran"}
    plain = write("plain-fn", kit.LABEL_FN)
    cat2 = write("c2/catalog.yaml", _catalog(str(plain), kit.sha256_of(plain), "fn"))
    out = _run(tmp_path, cat2, options(cache_dir=str(tmp_path / "cache2")))
    assert out.resources[0].obj["metadata"]["labels"] == {"exec-fn": "ran"}


def _tar_with(path, member: tarfile.TarInfo, data: bytes = b"") -> str:
    with tarfile.open(path, "w:gz") as tar:
        tar.addfile(member, io.BytesIO(data) if data else None)
    return fetch._file_sha256(str(path))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: (tarfile.TarInfo("../evil"), b"x"), "unsafe path '../evil' in archive {uri}"),
        (lambda: (tarfile.TarInfo("/etc/evil"), b"x"), "unsafe path '/etc/evil' in archive {uri}"),
        (
            lambda: (_link("bin/fn", "../../../../etc/passwd", tarfile.SYMTYPE), b""),
            "link 'bin/fn' in archive {uri} points outside it",
        ),
        (
            lambda: (_link("bin/fn", "/etc/passwd", tarfile.LNKTYPE), b""),
            "link 'bin/fn' in archive {uri} points outside it",
        ),
        (
            lambda: (_link("bin/fn", "", tarfile.CHRTYPE), b""),
            "archive {uri} holds a special file 'bin/fn'",
        ),
    ],
)
def test_unsafe_archives_refused(tmp_path, options, make, message):
    member, data = make()
    member.size = len(data)
    archive = tmp_path / "fn.tgz"
    sha = _tar_with(archive, member, data)
    uri = f"file://{archive}"
    with pytest.raises(FetchError) as exc:
        fetch.exec_binary(
            {"uri": uri, "sha256": sha, "bin": "bin/fn", "os": OS, "arch": ARCH},
            options=options(),
            base_dir=None,
        )
    assert str(exc.value) == message.format(uri=uri)
    assert not (tmp_path / "evil").exists()
    assert not (tmp_path / "cache" / "exec" / sha).exists()


def _link(name: str, target: str, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


def test_size_limits(tmp_path, options, kit):
    sha = kit.make_tgz(tmp_path / "big.tgz", {"bin/fn": "x" * 5000})
    uri = f"file://{tmp_path / 'big.tgz'}"
    with pytest.raises(FetchError) as exc:
        fetch.fetch_blob(uri, sha, options=options(max_download=100))
    assert str(exc.value) == f"{uri} is over the limit of 100 bytes"
    with pytest.raises(FetchError) as exc:
        fetch.exec_binary(
            {"uri": uri, "sha256": sha, "bin": "bin/fn"},
            options=options(max_unpacked=1000),
            base_dir=None,
        )
    assert str(exc.value) == f"archive {uri} unpacks to over the limit of 1000 bytes"


def test_relative_uri_in_https_catalog_is_relative_to_it(tmp_path, https_server, options, kit):
    sha = kit.make_tgz(tmp_path / "fn.tgz", {"bin/fn": kit.LABEL_FN})
    https_server.files["/blobs/fn.tgz"] = (tmp_path / "fn.tgz").read_bytes()
    https_server.files["/c/catalog.yaml"] = _catalog("../blobs/fn.tgz", sha).encode()
    opts = options(ca_file=https_server.ca_file)
    trust = TrustConfig.load([https_server.url("c/catalog.yaml")], config=str(tmp_path / "none"))
    catalogs = CatalogSet.for_kustomization(
        [], kustomization_dir=str(tmp_path), trust=trust, options=opts
    )
    res = [Resource(obj={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})]
    out = run_function_config(
        CONFIG,
        res,
        role="transformer",
        kustomization_dir=str(tmp_path),
        catalogs=catalogs,
        options=opts,
    )
    assert out.resources[0].obj["metadata"]["labels"] == {"exec-fn": "ran"}
    assert ("/blobs/fn.tgz", "", 200) in https_server.requests


@pytest.mark.parametrize(
    ("need", "allow", "message"),
    [
        (
            "requireNetwork",
            {"network": True},
            "requires network access: pass --network to allow it",
        ),
        (
            "requireStorageMount",
            {"mounts": ["type=bind,src=/data,dst=/data"]},
            "requires a storage mount: pass --mount to provide one",
        ),
    ],
)
def test_needs_apply_to_every_runtime_before_fetching(
    tmp_path, options, kit, write, need, allow, message
):
    # The version offers exec (chosen here) and a container that states the need.
    sha = kit.make_tgz(tmp_path / "fn.tgz", {"bin/fn": kit.LABEL_FN})
    text = _catalog(f"file://{tmp_path / 'fn.tgz'}", sha) + (
        f"        container:\n          image: example/fn:v1\n          {need}: true\n"
    )
    cat = write("catalog.yaml", text)
    marker = tmp_path / "marker"
    with pytest.raises(FunctionError) as exc:
        _run(tmp_path, cat, options(env=[f"MARKER={marker}"]))
    assert str(exc.value) == (
        f"function example.com/v1/Labeler 'l' (exec file://{tmp_path / 'fn.tgz'}, from catalog "
        f"{cat}) {message}"
    )
    assert not marker.exists()
    assert not (tmp_path / "cache").exists()  # nothing was even fetched
    out = _run(tmp_path, cat, options(env=[f"MARKER={marker}"], **allow))
    assert out.resources[0].obj["metadata"]["labels"] == {"exec-fn": "ran"}
    assert marker.exists()


def _zip_entry(path, name: str, data: bytes, mode: int) -> str:
    import zipfile

    with zipfile.ZipFile(path, "w") as zf:
        info = zipfile.ZipInfo(name)
        info.external_attr = mode << 16
        zf.writestr(info, data)
    return fetch._file_sha256(str(path))


@pytest.mark.parametrize(
    ("name", "data", "mode", "limits", "message"),
    [
        ("../evil", b"x", 0o100755, {}, "unsafe path '../evil' in archive {uri}"),
        ("/tmp/evil", b"x", 0o100755, {}, "unsafe path '/tmp/evil' in archive {uri}"),
        (
            "bin/fn",
            b"/etc/passwd",
            0o120777,
            {},
            "archive {uri} holds a symbolic link 'bin/fn'",
        ),
        (
            "bin/fn",
            b"x" * 5000,
            0o100755,
            {"max_unpacked": 1000},
            "archive {uri} unpacks to over the limit of 1000 bytes",
        ),
    ],
)
def test_unsafe_zip_archives_refused(tmp_path, options, name, data, mode, limits, message):
    archive = tmp_path / "fn.zip"
    sha = _zip_entry(archive, name, data, mode)
    uri = f"file://{archive}"
    with pytest.raises(FetchError) as exc:
        fetch.exec_binary(
            {"uri": uri, "sha256": sha, "bin": "bin/fn"}, options=options(**limits), base_dir=None
        )
    assert str(exc.value) == message.format(uri=uri)
    assert not (tmp_path / "evil").exists()
    assert os.listdir(tmp_path / "cache" / "exec") == []  # the partial unpack was removed


def test_entry_count_limit(tmp_path, options, kit):
    files = {f"bin/f{i}": "x" for i in range(3)}
    sha = kit.make_tgz(tmp_path / "many.tgz", {**files, "bin/fn": kit.LABEL_FN})
    uri = f"file://{tmp_path / 'many.tgz'}"
    with pytest.raises(FetchError) as exc:
        fetch.exec_binary(
            {"uri": uri, "sha256": sha, "bin": "bin/fn"},
            options=options(max_files=3),
            base_dir=None,
        )
    assert str(exc.value) == f"archive {uri} has over 3 entries"
    path = fetch.exec_binary(
        {"uri": uri, "sha256": sha, "bin": "bin/fn"}, options=options(max_files=4), base_dir=None
    )
    assert path.endswith("/bin/fn")


def test_download_size_limit_over_https(tmp_path, https_server, options):
    https_server.files["/big"] = b"x" * 5000
    url = https_server.url("big")
    opts = options(ca_file=https_server.ca_file, max_download=100)
    with pytest.raises(FetchError) as exc:  # any well-formed digest: the limit fails first
        fetch.fetch_blob(url, "0" * 64, options=opts)
    assert str(exc.value) == f"downloading {url}: 5000 bytes is over the limit of 100 bytes"
    assert os.listdir(tmp_path / "cache" / "blobs" / "sha256") == []
    # --offline: a blob that is not cached is an error, and the server is not asked
    n = len(https_server.requests)
    with pytest.raises(FetchError) as exc:
        fetch.fetch_blob(url, "0" * 64, options=options(offline=True))
    assert str(exc.value) == f"cannot download {url}: --offline and not in the cache"
    assert len(https_server.requests) == n


def test_redirect_to_plain_http_elsewhere_refused(tmp_path, http_server, https_server, options):
    # Every hop is checked: loopback http may not hand the download on to a remote http host,
    # and neither may https.
    http_server.redirects["/fn.tgz"] = "http://example.com/fn.tgz"
    https_server.redirects["/fn.tgz"] = "http://example.com/fn.tgz"
    for server in (http_server, https_server):
        with pytest.raises(FetchError) as exc:
            fetch.fetch_blob(
                server.url("fn.tgz"), "0" * 64, options=options(ca_file=https_server.ca_file)
            )
        assert str(exc.value) == (
            "refusing to download http://example.com/fn.tgz: plain http is allowed only to loopback"
        )
        assert server.requests == [("/fn.tgz", "", 302)]
