"""bench/oci_pull.py: its two setup steps against real servers (wrk: test_serve_catalog)."""

from __future__ import annotations

import hashlib
import shutil

import httpx
import pytest

from tests.scripts import load_script

bench = load_script("bench/oci_pull.py", "bench_oci_pull")  # it finds its sibling itself


@pytest.mark.skipif(shutil.which("docker-registry") is None, reason="docker-registry missing")
def test_oras_pushes_the_catalog_to_docker_registry(tmp_path):
    body = bench.common.generate_catalog(3)
    procs = bench.common.Processes()
    try:
        url = bench.push_with_oras(bench.start_docker_registry(procs, tmp_path), tmp_path, body)
        assert url.endswith("/blobs/sha256:" + hashlib.sha256(body).hexdigest())
        assert httpx.get(url).content == body
    finally:
        procs.stop()


@pytest.mark.django_db(transaction=True)
def test_registry_blob_url_is_the_catalog_layer(live_server):
    from catalogs.publishing.services import catalog_import

    body = bench.common.generate_catalog(3)
    version, _ = catalog_import(
        publisher_slug=bench.common.PUBLISHER, catalog_name=bench.common.CATALOG, content=body
    )
    served = bytes(version.content)
    url = f"{live_server.url}/c/{bench.common.PUBLISHER}/{bench.common.CATALOG}/catalog.yaml"
    blob = bench.registry_blob_url(url, served)
    assert blob == f"{live_server.url}/v2/bench/functions/blobs/{version.digest}"
    with pytest.raises(bench.common.BenchError, match="with other bytes"):
        bench.registry_blob_url(url, served + b"#")
