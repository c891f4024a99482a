"""Catalog references, trust, KEP-2906 resolution order, ETag cache, --offline, git refs."""

from __future__ import annotations

import copy
import subprocess

import pytest

from orchestrator.functions import CatalogSet, FunctionError, TrustConfig
from orchestrator.functions.catalogs import CatalogTrustError, parse_ref, store_for
from orchestrator.functions.resolve import resolve


def _cat(name: str, *fns: tuple[str, str, str, str]) -> str:
    """A catalog whose functions are (group, kind, version, image)."""
    out = [
        "apiVersion: config.kubernetes.io/v1alpha1",
        "kind: Catalog",
        f"metadata:\n  name: {name}",
        "spec:\n  krmFunctions:",
    ]
    for group, kind, version, image in fns:
        out.append(
            f"  - group: {group}\n    names:\n      kind: {kind}\n    versions:\n"
            f"    - name: {version}\n      runtime:\n        container:\n          image: {image}"
        )
    return "\n".join(out) + "\n"


def _cfg(api_version: str = "example.com/v1", kind: str = "App") -> dict:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}


def _set(tmp_path, refs, trusted, opts, config=None):
    trust = TrustConfig.load(
        trusted, config=config or str(tmp_path / "none.yaml"), cwd=str(tmp_path)
    )
    return CatalogSet.for_kustomization(
        refs, kustomization_dir=str(tmp_path / "app"), trust=trust, options=opts
    )


def test_untrusted_reference_is_an_error_naming_it(tmp_path, write, options):
    write("app/catalog.yaml", _cat("a", ("example.com", "App", "v1", "img:a")))
    with pytest.raises(CatalogTrustError) as exc:
        _set(tmp_path, ["catalog.yaml"], [], options())
    assert str(exc.value) == (
        f"catalog catalog.yaml is not trusted: pass --trusted-catalog="
        f"{tmp_path / 'app' / 'catalog.yaml'} after reviewing it with 'krm view catalog'"
    )
    # trusted by the same file under another spelling (relative to the working directory)
    cs = _set(tmp_path, ["catalog.yaml"], ["app/catalog.yaml"], options())
    assert resolve(_cfg(), cs, options()).spec["image"] == "img:a"


def test_order_referenced_then_trusted_first_match_wins(tmp_path, write, options):
    write("app/one.yaml", _cat("one", ("example.com", "App", "v1", "img:one")))
    write(
        "two.yaml",
        _cat(
            "two",
            ("example.com", "App", "v1", "img:two"),
            ("example.com", "Other", "v1", "img:two-other"),
            ("example.com", "Other", "v1", "img:two-other-dup"),
        ),
    )
    opts = options()
    cs = _set(tmp_path, ["one.yaml"], ["two.yaml", "app/one.yaml"], opts)
    assert [r.raw for r in cs.refs] == ["one.yaml", "two.yaml"]
    assert resolve(_cfg(), cs, opts).origin == "catalog one.yaml"
    # the same function twice in one catalog: the first (parsed leniently)
    assert resolve(_cfg(kind="Other"), cs, opts).spec["image"] == "img:two-other"


def test_official_catalog_from_config_is_trusted_and_first(tmp_path, write, options):
    write("official.yaml", _cat("official", ("example.com", "App", "v1", "img:official")))
    write("app/mine.yaml", _cat("mine", ("example.com", "App", "v1", "img:mine")))
    config = write("config/krm/config.yaml", "officialCatalog: ../../official.yaml\n")
    opts = options()
    cs = _set(tmp_path, ["mine.yaml"], ["app/mine.yaml"], opts, config=str(config))
    assert resolve(_cfg(), cs, opts).spec["image"] == "img:official"


def test_official_catalog_default_location_ignores_env_trust(tmp_path, write, monkeypatch):
    write("xdg/krm/config.yaml", f"officialCatalog: {tmp_path / 'o.yaml'}\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("KRM_TRUSTED_CATALOG", str(tmp_path / "evil.yaml"))
    trust = TrustConfig.load([])
    assert trust.official is not None and trust.official.location == str(tmp_path / "o.yaml")
    assert trust.trusted == []
    assert not trust.is_trusted(parse_ref(str(tmp_path / "evil.yaml"), "/"))


def test_no_match_names_apiversion_kind_and_every_catalog(tmp_path, write, options):
    write("a.yaml", _cat("a", ("example.com", "App", "v2", "img")))
    write("b.yaml", _cat("b", ("other.com", "App", "v1", "img")))
    opts = options()
    cs = _set(tmp_path, [], ["a.yaml", "b.yaml"], opts)
    with pytest.raises(FunctionError) as exc:
        resolve(_cfg(), cs, opts)
    assert str(exc.value) == (
        "no runtime for example.com/v1 App: no catalog defines it; catalogs searched: "
        "a.yaml, b.yaml"
    )
    with pytest.raises(FunctionError) as exc:
        resolve(_cfg(), None, opts)
    assert str(exc.value) == (
        "no runtime for example.com/v1 App: no catalog defines it; catalogs searched: "
        "none (add catalogs: or --trusted-catalog)"
    )


def test_explicit_runtime_wins_over_catalog(tmp_path, write, options):
    write("a.yaml", _cat("a", ("example.com", "App", "v1", "img:catalog")))
    # An image the repository names itself runs only with kustomize's opt-in.
    opts = options(enable_alpha_plugins=True)
    cs = _set(tmp_path, [], ["a.yaml"], opts)
    cfg = _cfg()
    cfg["runtime"] = {"container": {"image": "img:explicit"}}
    r = resolve(cfg, cs, opts)
    assert (r.spec["image"], r.origin, r.explicit) == ("img:explicit", "runtime field", True)
    # the annotation comes after the runtime field and before the catalogs
    cfg["metadata"]["annotations"] = {
        "config.kubernetes.io/function": "container:\n  image: img:annotation\n"
    }
    assert resolve(cfg, cs, opts).spec["image"] == "img:explicit"
    del cfg["runtime"]
    r = resolve(cfg, cs, opts)
    assert (r.spec["image"], r.origin) == ("img:annotation", "annotation")


def test_unreachable_catalog_is_an_error_only_when_needed(
    tmp_path, https_server, options, monkeypatch
):
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    url = https_server.url("missing.yaml")
    opts = options(ca_file=https_server.ca_file)
    cs = _set(tmp_path, [], [url], opts)  # building with no function never fetches it
    assert https_server.requests == []
    with pytest.raises(FunctionError) as exc:
        resolve(_cfg(), cs, opts)
    assert str(exc.value) == (
        f"cannot fetch catalog {url}: downloading {url}: HTTP 404: not found or you lack "
        f"access; krm reads credentials from ~/.netrc ({tmp_path / 'no-netrc'}: no entry for "
        "machine 127.0.0.1)"
    )


def test_https_catalog_etag_revalidation_and_offline(tmp_path, https_server, options):
    https_server.files["/c.yaml"] = _cat("c", ("example.com", "App", "v1", "img:1")).encode()
    url = https_server.url("c.yaml")
    opts = options(ca_file=https_server.ca_file)
    assert resolve(_cfg(), _set(tmp_path, [], [url], opts), opts).spec["image"] == "img:1"
    opts2 = options(ca_file=https_server.ca_file)
    assert resolve(_cfg(), _set(tmp_path, [], [url], opts2), opts2).spec["image"] == "img:1"
    (_, inm1, st1), (_, inm2, st2) = https_server.requests
    assert (inm1, st1) == ("", 200)
    assert inm2 and st2 == 304
    assert store_for(opts2).get(parse_ref(url, "/")).from_cache
    # a new version is picked up on revalidation
    https_server.files["/c.yaml"] = _cat("c", ("example.com", "App", "v1", "img:2")).encode()
    opts3 = options(ca_file=https_server.ca_file)
    assert resolve(_cfg(), _set(tmp_path, [], [url], opts3), opts3).spec["image"] == "img:2"
    # --offline: the cache only, the server is not asked
    n = len(https_server.requests)
    off = options(ca_file=https_server.ca_file, offline=True)
    assert resolve(_cfg(), _set(tmp_path, [], [url], off), off).spec["image"] == "img:2"
    assert len(https_server.requests) == n
    other = https_server.url("never.yaml")
    with pytest.raises(FunctionError) as exc:
        resolve(_cfg(), _set(tmp_path, [], [other], off), off)
    assert str(exc.value) == (
        f"cannot fetch catalog {other}: {other} is not in the cache and --offline forbids "
        "downloading"
    )


def _git_repo(path, files: dict[str, str]) -> str:
    path.mkdir(parents=True)
    run = lambda *a: subprocess.run(  # noqa: E731
        ["git", "-C", str(path), *a], check=True, capture_output=True
    )
    run("init", "-q", "-b", "main")
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    run("add", ".")
    run("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "one")
    run("tag", "v1")
    return str(path)


def test_git_references_local_and_git_file_url(tmp_path, options):
    repo = _git_repo(
        tmp_path / "repo", {"cat/catalog.yaml": _cat("g", ("example.com", "App", "v1", "img:g1"))}
    )
    (tmp_path / "repo" / "cat" / "catalog.yaml").write_text(
        _cat("g", ("example.com", "App", "v1", "img:uncommitted"))
    )
    opts = options()
    local = f"{repo}//cat/catalog.yaml?ref=v1"
    assert resolve(_cfg(), _set(tmp_path, [], [local], opts), opts).spec["image"] == "img:g1"
    remote = f"git+file://{repo}//cat/catalog.yaml?ref=v1"
    opts2 = options()
    assert resolve(_cfg(), _set(tmp_path, [], [remote], opts2), opts2).spec["image"] == "img:g1"
    assert list((tmp_path / "cache" / "git").iterdir())  # cloned into the cache
    bad = f"git+file://{repo}//cat/catalog.yaml?ref=nope"
    opts3 = options()
    with pytest.raises(FunctionError) as exc:
        resolve(_cfg(), _set(tmp_path, [], [bad], opts3), opts3)
    assert str(exc.value).startswith(f"cannot fetch catalog {bad}: {bad}: no such ref 'nope'")


def test_invalid_catalog_reports_problems(tmp_path, write, options):
    write("bad.yaml", "apiVersion: v1\nkind: Catalog\n")
    opts = options()
    with pytest.raises(FunctionError) as exc:
        resolve(_cfg(), _set(tmp_path, [], ["bad.yaml"], opts), opts)
    assert str(exc.value) == (
        "catalog bad.yaml is invalid:\napiVersion: must be config.kubernetes.io/v1alpha1, got 'v1'"
    )


def test_bad_references(tmp_path, options):
    with pytest.raises(FunctionError) as exc:
        parse_ref("git+https://host/repo.git", "/")
    assert str(exc.value) == (
        "git catalog reference 'https://host/repo.git' needs '//' between the repository and "
        "the file, e.g. git+https://host/repo.git//catalog.yaml?ref=v1"
    )
    with pytest.raises(FunctionError) as exc:
        parse_ref("git+http://example.com/repo.git//catalog.yaml", "/")
    assert str(exc.value) == (
        "catalog git+http://example.com/repo.git//catalog.yaml: plain http is allowed only to "
        "loopback"
    )
    assert parse_ref("git+http://127.0.0.1:8080/r.git//c.yaml", "/").location == (
        "http://127.0.0.1:8080/r.git"
    )
    marker = tmp_path / "pwned"
    with pytest.raises(FunctionError) as exc:  # git's ext:: transport would run a command
        parse_ref(f"git+ext::sh -c touch% {marker}//catalog.yaml", "/")
    assert str(exc.value) == (
        f"catalog git+ext::sh -c touch% {marker}//catalog.yaml: unsupported git scheme 'ext' "
        "(use https, ssh or file)"
    )
    assert not marker.exists()
    with pytest.raises(FunctionError) as exc:
        _set(tmp_path, "catalog.yaml", [], options())
    assert str(exc.value) == "catalogs must be a list of references, got 'catalog.yaml'"


@pytest.mark.parametrize("how", ["runtime", "annotation"])
def test_an_inline_container_needs_enable_alpha_plugins(tmp_path, write, options, how):
    write("a.yaml", _cat("a", ("example.com", "App", "v1", "img:catalog")))
    opts = options()
    cs = _set(tmp_path, [], ["a.yaml"], opts)
    cfg = _cfg()
    if how == "runtime":
        cfg["runtime"] = {"container": {"image": "img:explicit"}}
    else:
        cfg["metadata"]["annotations"] = {
            "config.kubernetes.io/function": "container:\n  image: img:explicit\n"
        }
    before = copy.deepcopy(cfg)
    with pytest.raises(FunctionError) as exc:
        resolve(cfg, cs, opts)
    origin = "runtime field" if how == "runtime" else "annotation"
    assert str(exc.value) == (
        "function example.com/v1/App 'x': external plugins disabled; unable to run container "
        f"image img:explicit named by its {origin} without --enable-alpha-plugins (or resolve "
        "it from a --trusted-catalog)"
    )
    assert cfg == before  # the config is left as it was
    # The catalog's runtime for the same kind needs no flag: that is what trust is for.
    cfg["metadata"].pop("annotations", None)
    cfg.pop("runtime", None)
    assert resolve(cfg, cs, opts).spec["image"] == "img:catalog"
