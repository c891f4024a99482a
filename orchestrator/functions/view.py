"""``krm view catalog REF``: what a catalog would let a build run, for the trust decision."""

from __future__ import annotations

import json
import os
from typing import Any

from orchestrator.functions.catalogs import CatalogStore, LoadedCatalog, TrustConfig, parse_ref
from orchestrator.functions.options import FnOptions
from orchestrator.terminal import field


def load(ref: str, *, options: FnOptions, cwd: str | None = None) -> LoadedCatalog:
    """Fetch a catalog without any trust check (viewing is how one decides to trust).

    Its signature is looked up and checked with the keys that would apply in a build (the
    config file's key for it, else --catalog-key), and reported, never enforced.
    """
    cwd = cwd or os.getcwd()
    parsed = parse_ref(ref, cwd)
    keys = TrustConfig.load(keys=list(options.catalog_keys), cwd=cwd).keys_for(parsed)
    return CatalogStore(options).get(parsed, keys, report_only=True)


def _needs(version: Any) -> list[str]:
    needs = []
    if "exec" in version.runtime:
        needs.append("exec binary")
    if version.requires_network:
        needs.append("network")
    if version.requires_storage_mount:
        needs.append("storage mount")
    return needs


def _platforms(version: Any) -> list[str]:
    exec_ = version.runtime.get("exec") or {}
    return [f"{p['os']}/{p['arch']}" for p in exec_.get("platforms", [])]


def summary(loaded: LoadedCatalog) -> dict[str, Any]:
    """Plain data for -o yaml|json: publisher, name, digest, source and every function."""
    cat = loaded.catalog
    md = cat.metadata
    annotations = md.get("annotations") or {}
    publishers = sorted({f.publisher for f in cat.functions if f.publisher})
    publisher = annotations.get("publisher") or (", ".join(publishers) if publishers else None)
    functions = []
    for f in cat.functions:
        for v in f.versions:
            entry: dict[str, Any] = {
                "apiVersion": f"{f.group}/{v.name}" if f.group else v.name,
                "kind": f.kind,
                "runtimes": v.runtime_kinds,
                "needs": _needs(v),
            }
            if _platforms(v):
                entry["platforms"] = _platforms(v)
            container = v.runtime.get("container")
            if container:
                entry["image"] = container["image"]
                if container.get("sha256"):
                    entry["imageDigest"] = "sha256:" + container["sha256"]
            if f.publisher:
                entry["publisher"] = f.publisher
            if f.description:
                entry["description"] = f.description
            functions.append(entry)
    out: dict[str, Any] = {
        "name": cat.name,
        "publisher": publisher,
        # The sha256 of the bytes fetched: what a registry serves them under (its ETag and
        # /sha256/<hex>/ URL, its TUF target), and what krm.lock pins; a catalog pushed over
        # OCI keeps the pusher's bytes, which may not be the canonical form.
        "digest": loaded.bytes_digest or cat.digest,
        "source": loaded.source,
    }
    if loaded.etag:
        out["revision"] = loaded.etag
    status = loaded.signature
    if status is not None:
        out["signature"] = {
            "status": status.status,
            "keyId": status.key_id or None,
            "where": status.where or None,
        }
        if status.key_path:
            out["signature"]["key"] = status.key_path
        if status.detail:
            out["signature"]["detail"] = status.detail
    out["functions"] = functions
    listed = loaded.revocations
    if listed is not None:
        out["revocations"] = _revocations(listed)
    return out


def _revocations(listed: Any) -> dict[str, Any]:
    """The catalog's revocation list: where, sequence, signature and every entry."""
    data: dict[str, Any] = {"where": listed.where, "sequence": listed.sequence}
    if listed.signature is not None:
        data["signature"] = listed.signature.status
    data["entries"] = [
        {
            k: v
            for k, v in (
                ("sequence", e.sequence),
                ("revoked", e.target),
                ("reason", e.reason),
                ("detail", e.detail),
                ("replacement", e.replacement),
                ("revokedAt", e.revoked_at),
            )
            if v
        }
        for e in listed.entries
    ]
    return data


def render(loaded: LoadedCatalog, output: str | None = None) -> str:
    """Human table (default), or the summary as yaml or json.

    Every value in the table comes from the catalog (or its signature, revocation list and
    where it was fetched from): each is printed through ``terminal.field``, so a control
    sequence in a catalog cannot draw a line of its own, such as a forged ``Signature:``.
    The yaml and json forms escape control characters themselves.
    """
    data = summary(loaded)
    if output == "json":
        return json.dumps(data, indent=2) + "\n"
    if output == "yaml":
        from orchestrator import yamlio

        return yamlio.dump(data)
    if output not in (None, "", "table"):
        raise ValueError(f"unknown output format {output!r}: use yaml or json")
    lines = [
        f"Catalog:   {field(str(data['name']))}",
        f"Publisher: {field(str(data['publisher'] or '(not stated)'))}",
        f"Digest:    {field(str(data['digest']))}",
        f"Source:    {field(str(data['source']))}",
    ]
    if loaded.signature is not None:
        lines.append(f"Signature: {field(loaded.signature.describe())}")
    lines += [
        "",
    ]
    header = ("APIVERSION", "KIND", "RUNTIMES", "PLATFORMS", "NEEDS")
    rows = [header] + [
        (
            field(str(f["apiVersion"])),
            field(str(f["kind"])),
            field(",".join(f["runtimes"])),
            field(",".join(f.get("platforms", []))) or "-",
            ",".join(f["needs"]) or "-",
        )
        for f in data["functions"]
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for row in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    if not data["functions"]:
        lines.append("(no functions)")
    listed = loaded.revocations
    if listed is not None:
        lines += ["", f"Revocations: sequence {listed.sequence} [{field(str(listed.where))}]"]
        if listed.signature is not None:
            lines.append(f"  signature: {field(listed.signature.describe())}")
        for e in listed.entries:
            when = f", {e.revoked_at}" if e.revoked_at else ""
            lines.append("  " + field(f"#{e.sequence} {e.target}: {e.because()}{when}"))
        if not listed.entries:
            lines.append("  (none)")
    return "\n".join(lines) + "\n"


def main(ref: str, output: str | None, *, options: FnOptions) -> str:
    """What the CLI prints for ``krm view catalog REF``."""
    return render(load(ref, options=options), output)


def main_checked(ref: str, output: str | None, *, options: FnOptions) -> tuple[str, str | None]:
    """What ``krm view catalog REF`` prints, and why it then fails: with --catalog-key, a
    signature of the catalog or of its revocation list that is missing or INVALID."""
    loaded = load(ref, options=options)
    text = render(loaded, output)
    if not options.catalog_keys:
        return text, None
    problems = []
    for what, status in (
        ("catalog", loaded.signature),
        ("revocation list", getattr(loaded.revocations, "signature", None)),
    ):
        if status is None or status.status == "verified":
            continue
        if status.status == "missing":
            problems.append(f"its {what} has no signature ({status.where} not found)")
        elif status.status == "invalid":
            problems.append(f"its {what} signature is INVALID: {status.detail} ({status.where})")
        else:
            problems.append(f"its {what} signature was not verified ({status.describe()})")
    if not problems:
        return text, None
    return text, f"catalog {ref}: " + "; ".join(problems)
