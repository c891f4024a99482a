"""Function images for trial runs of container functions: built with Debian's ``umoci`` from
``busybox-static`` and pushed with ``skopeo`` to a live ``docker-registry`` (the engine's test
images, ``tests/orchestrator/functions/images.py``), plus one that reaches for a loopback port."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from tests.orchestrator.functions import images
from tests.orchestrator.functions.conftest import REGISTRY, start_registry, stop_registry

needs_image_tools = pytest.mark.skipif(
    None in (REGISTRY, images.UMOCI, images.SKOPEO, images.BUSYBOX),
    reason="needs docker-registry, umoci, skopeo and busybox-static",
)


@dataclass
class Listener:
    """A real TCP listener on this machine's loopback: records whether anything connected."""

    port: int
    reached: list[bool] = field(default_factory=list)


@dataclass
class Images:
    host: str
    pushed: dict[str, images.Pushed]
    listener: Listener


@pytest.fixture(scope="module")
def pushed_images(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Images]:
    """The engine's good images and ``netprobe`` (the probe with ``PROBE_URL`` set to a loopback
    listener of this process), pushed once per module to a fresh docker-registry."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    listener = Listener(port=server.getsockname()[1])
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            listener.reached.append(True)
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    root = tmp_path_factory.mktemp("registry")
    proc, host = start_registry(root)
    try:
        scratch = tmp_path_factory.mktemp("build")
        pushed = images.build_images(scratch, host)
        layout = scratch / "layout"
        url = f"PROBE_URL=http://127.0.0.1:{listener.port}/"
        images._umoci(
            "config", "--image", f"{layout}:one", "--tag", "netprobe", "--config.env", url
        )
        ref = f"{host}/fn/netprobe:v1"
        pushed["netprobe"] = images.Pushed(ref, images.push(layout, "netprobe", ref, scratch))
        yield Images(host, pushed, listener)
    finally:
        stop_registry(proc)
        done.set()
        thread.join()
        server.close()
