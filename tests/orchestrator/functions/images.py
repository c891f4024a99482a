"""Function images for the builtin container runtime's tests, made at test time with real tools.

The good images are built with Debian's ``umoci`` from ``busybox-static`` and pushed with
``skopeo`` to a live ``docker-registry``: one layer; two layers where the second deletes a
file of the first; an image index with two platforms; a non-root ``User``. Hostile layers no
image tool would make are written as an OCI image layout here (tar members by hand) and pushed
with the same ``skopeo``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

UMOCI = shutil.which("umoci")
SKOPEO = shutil.which("skopeo")
BUSYBOX = shutil.which("busybox")

# The probe: the items unchanged, after a ConfigMap "probe" holding what the function saw.
PROBE_FN = r"""#!/bin/busybox sh
set -e
if [ -n "$PROBE_URL" ]; then busybox wget -q -O /dev/null "$PROBE_URL"; fi
if [ -e /etc/removed.txt ]; then removed=present; else removed=absent; fi
if busybox touch /probe-write 2>/dev/null; then rootfs=writable; else rootfs=read-only; fi
if busybox touch /tmp/probe-write 2>/dev/null; then tmp=writable; else tmp=read-only; fi
mounted=none
if [ -e /data/in.txt ]; then mounted=$(busybox cat /data/in.txt); fi
busybox awk -v uid="$(busybox id -u)" -v gid="$(busybox id -g)" -v cwd="$(pwd)" \
    -v greeting="$GREETING" -v removed="$removed" -v rootfs="$rootfs" -v tmp="$tmp" \
    -v host="$(busybox hostname)" -v pid="$$" -v mounted="$mounted" -v extra="$EXTRA" '
function probe() {
    print "- apiVersion: v1"
    print "  kind: ConfigMap"
    print "  metadata:"
    print "    name: probe"
    print "  data:"
    printf "    uid: \"%s\"\n    gid: \"%s\"\n    cwd: \"%s\"\n", uid, gid, cwd
    printf "    greeting: \"%s\"\n    removed: \"%s\"\n", greeting, removed
    printf "    rootfs: \"%s\"\n    tmp: \"%s\"\n    hostname: \"%s\"\n", rootfs, tmp, host
    printf "    pid: \"%s\"\n    mounted: \"%s\"\n    extra: \"%s\"\n", pid, mounted, extra
}
$0 == "items: []" { print "items:"; probe(); next }
{ print }
$0 == "items:" { probe() }
'
"""

# The differential program: every item gets the annotation fn.example.com/ran: "yes".
ANNOTATE_FN = r"""#!/bin/busybox sh
exec busybox awk '{ print } $0 == "    annotations:" { print "      fn.example.com/ran: \"yes\"" }'
"""

PASSWD = "root:x:0:0:root:/root:/bin/sh\nfn:x:1000:1001:fn:/work:/bin/sh\n"
GROUP = "root:x:0:\nfngroup:x:1001:\n"


@dataclass(frozen=True)
class Pushed:
    """An image in the registry: its reference by tag and its digest."""

    ref: str  # host/repo:tag
    digest: str  # sha256:<hex>

    @property
    def hex(self) -> str:
        return self.digest.removeprefix("sha256:")


def _run(*argv: str, cwd: Path | None = None) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, check=False)
    assert proc.returncode == 0, f"{argv}: {proc.stderr}"
    return proc.stdout


def _umoci(*args: str) -> None:
    assert UMOCI is not None
    rootless = ["--rootless"] if os.geteuid() != 0 and args[0] in ("unpack", "repack") else []
    _run(UMOCI, args[0], *rootless, *args[1:])


def push(layout: Path, tag: str, dest: str, scratch: Path, *, all_platforms: bool = False) -> str:
    """skopeo copy oci:layout:tag docker://dest; returns the pushed manifest's digest."""
    assert SKOPEO is not None
    digestfile = scratch / f"digest-{tag}"
    argv = [SKOPEO, "copy", "--quiet", "--dest-tls-verify=false", "--digestfile", str(digestfile)]
    if all_platforms:
        argv.append("--all")
    _run(*argv, f"oci:{layout}:{tag}", f"docker://{dest}")
    return digestfile.read_text().strip()


def build_images(scratch: Path, host: str) -> dict[str, Pushed]:
    """Build the good images with umoci and push them to ``host``: one, two, multi, user."""
    assert BUSYBOX is not None
    layout = scratch / "layout"
    _umoci("init", "--layout", str(layout))
    _umoci("new", "--image", f"{layout}:empty")
    bundle = scratch / "bundle-one"
    _umoci("unpack", "--image", f"{layout}:empty", str(bundle))
    rootfs = bundle / "rootfs"
    for d in ("bin", "etc", "work", "data"):
        (rootfs / d).mkdir(exist_ok=True)
    shutil.copy(BUSYBOX, rootfs / "bin" / "busybox")
    (rootfs / "bin" / "sh").symlink_to("busybox")
    for name, text in (("fn", PROBE_FN), ("annotate", ANNOTATE_FN)):
        (rootfs / "bin" / name).write_text(text)
        (rootfs / "bin" / name).chmod(0o755)
    (rootfs / "etc" / "passwd").write_text(PASSWD)
    (rootfs / "etc" / "group").write_text(GROUP)
    (rootfs / "etc" / "removed.txt").write_text("the second layer deletes me\n")
    _umoci("repack", "--image", f"{layout}:one", str(bundle))
    config = ["--config.entrypoint", "/bin/fn", "--config.workingdir", "/work"]
    _umoci("config", "--image", f"{layout}:one", *config, "--config.env", "GREETING=hello")
    # two layers: the second deletes /etc/removed.txt (umoci writes a .wh. whiteout)
    bundle2 = scratch / "bundle-two"
    _umoci("unpack", "--image", f"{layout}:one", str(bundle2))
    (bundle2 / "rootfs" / "etc" / "removed.txt").unlink()
    _umoci("repack", "--image", f"{layout}:two", str(bundle2))
    # a non-root user, by name (the image's /etc/passwd and /etc/group give 1000:1001)
    _umoci("config", "--image", f"{layout}:one", "--tag", "user", "--config.user", "fn:fngroup")
    # the annotating program as the entrypoint, for the differential test
    _umoci(
        "config",
        "--image",
        f"{layout}:one",
        "--tag",
        "annotate",
        "--config.entrypoint",
        "/bin/annotate",
    )
    # an arm64 variant that says so, and an index of both platforms
    _umoci(
        "config",
        "--image",
        f"{layout}:one",
        "--tag",
        "arm64",
        "--architecture",
        "arm64",
        "--config.env",
        "GREETING=arm64",
    )
    _add_index(layout, "multi", {"one": ("linux", "amd64"), "arm64": ("linux", "arm64")})
    pushed = {}
    for tag, all_platforms in (
        ("one", False),
        ("two", False),
        ("user", False),
        ("annotate", False),
        ("multi", True),
    ):
        ref = f"{host}/fn/{tag}:v1"
        pushed[tag] = Pushed(ref, push(layout, tag, ref, scratch, all_platforms=all_platforms))
    return pushed


def _index_json(layout: Path) -> dict:
    return json.loads((layout / "index.json").read_text())


def _write_blob(layout: Path, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    (layout / "blobs" / "sha256" / digest).write_bytes(data)
    return f"sha256:{digest}"


def _tag(layout: Path, tag: str, media_type: str, digest: str, size: int) -> None:
    index = _index_json(layout)
    index["manifests"] = [
        m
        for m in index["manifests"]
        if m.get("annotations", {}).get("org.opencontainers.image.ref.name") != tag
    ]
    index["manifests"].append(
        {
            "mediaType": media_type,
            "digest": digest,
            "size": size,
            "annotations": {"org.opencontainers.image.ref.name": tag},
        }
    )
    (layout / "index.json").write_text(json.dumps(index))


def _add_index(layout: Path, tag: str, platforms: dict[str, tuple[str, str]]) -> None:
    by_tag = {
        m["annotations"]["org.opencontainers.image.ref.name"]: m
        for m in _index_json(layout)["manifests"]
    }
    manifests = []
    for source, (os_name, arch) in platforms.items():
        m = by_tag[source]
        manifests.append(
            {
                "mediaType": m["mediaType"],
                "digest": m["digest"],
                "size": m["size"],
                "platform": {"os": os_name, "architecture": arch},
            }
        )
    media_type = "application/vnd.oci.image.index.v1+json"
    data = json.dumps({"schemaVersion": 2, "mediaType": media_type, "manifests": manifests})
    digest = _write_blob(layout, data.encode())
    _tag(layout, tag, media_type, digest, len(data))


# Hostile layers ---------------------------------------------------------------------------


def tar_layer(
    members: list[tuple[tarfile.TarInfo, bytes | None]], *, raw_tail: bytes = b""
) -> bytes:
    """An uncompressed tar of the members (None: no data, as for links and directories);
    ``raw_tail`` replaces the end-of-archive blocks (for a header that lies about its size)."""
    buf = io.BytesIO()
    if raw_tail:
        for info, data in members:
            buf.write(info.tobuf(format=tarfile.GNU_FORMAT))
            if data:
                buf.write(data + b"\0" * (-len(data) % 512))
        buf.write(raw_tail)
        return buf.getvalue()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def many_files_layer(count: int) -> bytes:
    """A tar of ``count`` empty files ``f0000000``… (headers patched from one template: tarfile
    takes seconds to write a hundred thousand members)."""
    template = bytearray(member("f0000000")[0].tobuf(format=tarfile.USTAR_FORMAT))
    out = bytearray()
    for i in range(count):
        header = bytearray(template)
        header[0:8] = f"f{i:07d}".encode()
        header[148:156] = b" " * 8
        header[148:156] = f"{sum(header):06o}\0 ".encode()
        out += header
    return bytes(out + b"\0" * 1024)


def member(
    name: str,
    kind: bytes = tarfile.REGTYPE,
    *,
    data: bytes = b"",
    link: str = "",
    size: int | None = None,
) -> tuple[tarfile.TarInfo, bytes | None]:
    """One tar member: a file (with data), a directory, a symlink or a hard link."""
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    info.linkname = link
    info.size = len(data) if size is None else size
    return info, data if kind == tarfile.REGTYPE else None


def layout_image(
    scratch: Path,
    name: str,
    layers: list[bytes],
    *,
    entrypoint: list[str],
    diff_ids: list[str] | None = None,
) -> Path:
    """An OCI image layout (tag ``v1``) of gzip layers made from the given tars."""
    layout = scratch / f"layout-{name}"
    (layout / "blobs" / "sha256").mkdir(parents=True)
    (layout / "oci-layout").write_text('{"imageLayoutVersion":"1.0.0"}')
    (layout / "index.json").write_text('{"schemaVersion":2,"manifests":[]}')
    descs = []
    for tar in layers:
        gz = gzip.compress(tar, compresslevel=1, mtime=0)
        descs.append(
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                "digest": _write_blob(layout, gz),
                "size": len(gz),
            }
        )
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Entrypoint": entrypoint},
        "rootfs": {
            "type": "layers",
            "diff_ids": diff_ids or [f"sha256:{hashlib.sha256(t).hexdigest()}" for t in layers],
        },
    }
    config_data = json.dumps(config).encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": _write_blob(layout, config_data),
            "size": len(config_data),
        },
        "layers": descs,
    }
    data = json.dumps(manifest).encode()
    _tag(layout, "v1", manifest["mediaType"], _write_blob(layout, data), len(data))
    return layout


def registry_blob_path(storage: Path, digest: str) -> Path:
    """Where docker-registry's filesystem driver keeps a blob's bytes."""
    hexdigits = digest.removeprefix("sha256:")
    return storage / "docker/registry/v2/blobs/sha256" / hexdigits[:2] / hexdigits / "data"
