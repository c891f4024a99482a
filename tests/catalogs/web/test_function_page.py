"""The function page (issue 14): config to paste, kustomization and build lines, usage as
sanitized Markdown, versions side by side and what changed; within the page-weight budget."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from catalogs.publishing import services
from catalogs.publishing.models import Catalog

pytestmark = pytest.mark.django_db

URL = "/catalogs/example-co/functions/functions/example.co/{kind}/"
HEAD = (
    "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: m\n"
    "spec:\n  krmFunctions:\n"
)


def _function(
    kind: str,
    *,
    versions: str,
    tags: str = "[mutator]",
) -> str:
    return (
        f"  - group: example.co\n    names:\n      kind: {kind}\n"
        f"    description: The {kind} function.\n    publisher: example.co\n"
        f"    tags: {tags}\n    versions:\n{versions}"
    )


def _version(
    name: str = "v1",
    *,
    image: str = "registry.example.co/fn:v1",
    sha: str = "a" * 64,
    schema: str = "",
    extra_runtime: str = "",
    usage: str = "https://example.co/fn/README.md",
    examples: list[str] | None = None,
) -> str:
    text = f"    - name: {name}\n"
    if schema:
        text += "      schema:\n        openAPIV3Schema:\n" + schema
    text += (
        f"      runtime:\n        container:\n          image: {image}\n"
        f'          sha256: "{sha}"\n{extra_runtime}'
    )
    text += (
        f"      usage: {yaml.safe_dump(usage, width=1000).strip().removesuffix('...').strip()}\n"
    )
    if examples:
        text += "      examples:\n" + "".join(
            f"      - {yaml.safe_dump(e, width=1000).strip().removesuffix('...').strip()}\n"
            for e in examples
        )
    return text + "      license: Apache 2.0\n"


NAMESPACE_SCHEMA = (
    "          type: object\n          properties:\n            spec:\n"
    "              type: object\n              required: [namespace, mode]\n"
    "              properties:\n                namespace: {type: string}\n"
    "                mode: {type: string, enum: [strict, lenient]}\n"
)


def _publish(catalog: Catalog, *functions: str) -> None:
    services.catalog_version_publish(catalog=catalog, content=HEAD + "".join(functions), actor=None)
    catalog.refresh_from_db()


def _asset_bytes(body: str) -> int:
    """The size of every static file the page links (stylesheets, scripts, icon)."""
    from django.conf import settings
    from django.contrib.staticfiles import finders

    paths = re.findall(r'(?:href|src)="' + re.escape(settings.STATIC_URL) + r'([^"]+)"', body)
    assert any(p.endswith(".css") for p in paths) and any(p.endswith(".js") for p in paths)
    return sum(Path(finders.find(p)).stat().st_size for p in set(paths))


def _code(body: str, element_id: str) -> str:
    """The text of the element with ``element_id`` (what its Copy button copies)."""

    class Finder(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.depth = 0
            self.text: list[str] = []

        def handle_starttag(self, tag, attrs):
            if self.depth:
                self.depth += 1
            elif dict(attrs).get("id") == element_id:
                self.depth = 1

        def handle_endtag(self, tag):
            if self.depth:
                self.depth -= 1

        def handle_data(self, data):
            if self.depth:
                self.text.append(data)

    finder = Finder()
    finder.feed(body)
    assert finder.text, f"no element #{element_id}"
    return "".join(finder.text)


def test_a_generated_config_the_kustomization_and_both_build_lines(client, catalog):
    _publish(catalog, _function("SetNamespace", versions=_version(schema=NAMESPACE_SCHEMA)))
    response = client.get(URL.format(kind="SetNamespace"))
    assert response.status_code == 200
    body = response.content.decode()

    config = yaml.safe_load(_code(body, "cfg-use"))
    assert config == {
        "apiVersion": "example.co/v1",
        "kind": "SetNamespace",
        "metadata": {"name": "set-namespace"},
        "spec": {"namespace": "my-namespace", "mode": "strict"},
    }
    assert "Generated from the schema: replace the placeholders." in body
    assert "✓ matches the schema" in body
    assert "set-namespace.yaml" in body

    kustomization = yaml.safe_load(_code(body, "kustomization"))
    assert kustomization["transformers"] == ["set-namespace.yaml"]
    assert kustomization["kind"] == "Kustomization"

    digest = catalog.latest_version.digest.removeprefix("sha256:")
    assert _code(body, "build-latest") == (
        "krm build . --trusted-catalog=http://testserver/c/example-co/functions/catalog.yaml"
    )
    assert _code(body, "build-pinned") == (
        "krm build . --trusted-catalog="
        f"http://testserver/c/example-co/functions/sha256/{digest}/catalog.yaml"
    )
    # Every Copy button points at an element of the page.
    targets = re.findall(r'class="copy-button" data-copy="#([\w-]+)"', body)
    assert {"cfg-use", "kustomization", "build-latest", "build-pinned"} <= set(targets)
    for target in targets:
        assert f'id="{target}"' in body
    # The usage README is a link: the registry fetches nothing at page time.
    assert 'href="https://example.co/fn/README.md"' in body


def test_the_pinned_line_serves_this_exact_catalog(client, catalog):
    _publish(catalog, _function("SetNamespace", versions=_version(schema=NAMESPACE_SCHEMA)))
    body = client.get(URL.format(kind="SetNamespace")).content.decode()
    pinned = _code(body, "build-pinned").split("=", 1)[1].removeprefix("http://testserver")
    latest = _code(body, "build-latest").split("=", 1)[1].removeprefix("http://testserver")
    assert client.get(pinned).content == bytes(catalog.latest_version.content)
    assert client.get(latest).content == bytes(catalog.latest_version.content)


def test_a_generator_and_a_function_that_needs_network_and_a_mount(client, catalog):
    needs = "          requireNetwork: true\n          requireStorageMount: true\n"
    _publish(
        catalog,
        _function("MakeApp", versions=_version(extra_runtime=needs), tags="[generator, java]"),
    )
    body = client.get(URL.format(kind="MakeApp")).content.decode()
    kustomization = yaml.safe_load(_code(body, "kustomization"))
    assert kustomization["generators"] == ["make-app.yaml"] and "transformers" not in kustomization
    assert _code(body, "build-latest").endswith("/catalog.yaml --network")
    assert "--mount type=bind,src=…,dst=…" in body
    # No schema: a skeleton that says so.
    assert yaml.safe_load(_code(body, "cfg-use")) == {
        "apiVersion": "example.co/v1",
        "kind": "MakeApp",
        "metadata": {"name": "make-app"},
    }
    assert "this version has no schema" in body


def test_a_validator_is_named_under_validators(client, catalog):
    _publish(catalog, _function("CheckLabels", versions=_version(), tags="[validator]"))
    body = client.get(URL.format(kind="CheckLabels")).content.decode()
    kustomization = yaml.safe_load(_code(body, "kustomization"))
    assert kustomization["validators"] == ["check-labels.yaml"]
    assert "transformers" not in kustomization and "generators" not in kustomization
    assert kustomization["resources"] == ["deployment.yaml"]
    assert "under <code>validators:</code>" in body


def test_an_inline_example_is_the_config_to_paste(client, catalog):
    example = (
        "apiVersion: example.co/v1\nkind: SetNamespace\nmetadata:\n  name: team-a\n"
        "spec:\n  namespace: team-a  # your team's\n  mode: lenient\n"
    )
    _publish(
        catalog,
        _function("SetNamespace", versions=_version(schema=NAMESPACE_SCHEMA, examples=[example])),
    )
    body = client.get(URL.format(kind="SetNamespace")).content.decode()
    assert _code(body, "cfg-use") == example
    assert "From the catalog&#x27;s example 1." in body and "✓ matches the schema" in body


HOSTILE_USAGE = """\
# SetNamespace

Sets the namespace of **every** resource.

<script>alert('usage')</script>
<img src="https://tracker.example/p.gif" onerror="alert(1)">
<a href="javascript:alert(2)" onclick="alert(3)">click</a>

[docs](https://example.co/docs) [bad](javascript:alert(4))

```yaml
apiVersion: example.co/v1
kind: SetNamespace
metadata:
  name: from-usage
spec:
  namespace: a
  mode: strict
```
"""


def test_usage_text_is_rendered_as_sanitized_markdown(client, catalog):
    hostile_example = (
        "## Example <b onmouseover=alert(5)>one</b>\n\n<script>alert('example')</script>\n\n"
        "[run](javascript:alert(6)) <iframe src=https://evil.example/></iframe>\n"
    )
    versions = _version(schema=NAMESPACE_SCHEMA, usage=HOSTILE_USAGE, examples=[hostile_example])
    _publish(catalog, _function("SetNamespace", versions=versions))
    body = client.get(URL.format(kind="SetNamespace")).content.decode()
    usage = body[body.index('id="usage"') : body.index("</section>", body.index('id="usage"'))]
    assert "<h3>SetNamespace</h3>" in usage and "<strong>every</strong>" in usage
    assert '<a href="https://example.co/docs" rel="nofollow noopener noreferrer">docs</a>' in usage
    assert "<script" not in body.replace('<script src="/static/', "")
    assert "alert('usage')" not in body and "tracker.example" not in body
    assert "alert('example')" not in body and "<iframe" not in body and "evil.example" not in body
    assert "<h5>Example <b>one</b></h5>" in body  # its own heading, made harmless
    assert "onerror" not in body and "onclick" not in body
    assert 'href="javascript:' not in body
    # Its YAML block is a functionConfig of this kind: the one to paste.
    assert yaml.safe_load(_code(body, "cfg-use"))["metadata"]["name"] == "from-usage"
    assert "From the usage text." in body


def test_versions_side_by_side_and_what_changed(client, catalog):
    v2_schema = NAMESPACE_SCHEMA.replace(
        "required: [namespace, mode]", "required: [namespace, mode, zone]"
    ).replace("mode: {type: string, enum: [strict, lenient]}", "zone: {type: integer}")
    network = "          requireNetwork: true\n"
    versions = _version(
        "v2",
        image="registry.example.co/fn:v2",
        sha="b" * 64,
        schema=v2_schema,
        extra_runtime=network,
    ) + _version("v1", schema=NAMESPACE_SCHEMA)
    _publish(catalog, _function("SetNamespace", versions=versions))
    response = client.get(URL.format(kind="SetNamespace"))
    body = response.content.decode()
    assert [item["row"].name for item in response.context["versions"]] == ["v2", "v1"]
    # The preferred version (v2) is the one to use.
    assert yaml.safe_load(_code(body, "cfg-use"))["apiVersion"] == "example.co/v2"
    assert yaml.safe_load(_code(body, "cfg-2"))["apiVersion"] == "example.co/v1"
    assert 'class="grid side-by-side"' in body
    assert "Changes in v2" in body and "from v1" in body
    changes = [c.text for c in response.context["versions"][0]["changes"]]
    assert changes == [
        "image registry.example.co/fn:v1 → registry.example.co/fn:v2"
        f" (digest sha256:{'a' * 12}… → sha256:{'b' * 12}…)",
        "required field spec.zone added (integer)",
        "field spec.mode removed",
        "now needs network (krm build needs --network)",
    ]
    for text in changes:
        assert text in body


def test_history_lists_what_changed_in_each_catalog_version(client, catalog):
    _publish(catalog, _function("SetNamespace", versions=_version(schema=NAMESPACE_SCHEMA)))
    _publish(
        catalog,
        _function(
            "SetNamespace",
            versions=_version(
                image="registry.example.co/fn:v1.1", sha="c" * 64, schema=NAMESPACE_SCHEMA
            ),
        ),
    )
    _publish(
        catalog,
        _function(
            "SetNamespace",
            versions=_version(
                image="registry.example.co/fn:v1.1", sha="c" * 64, schema=NAMESPACE_SCHEMA
            ),
        ),
        _function("Other", versions=_version()),
    )
    body = client.get(URL.format(kind="SetNamespace")).content.decode()
    history = body[body.index('id="history"') :]
    assert history.index("Catalog version 3") < history.index("Catalog version 2")
    assert "No change to this function since version 2." in history
    assert (
        "image registry.example.co/fn:v1 → registry.example.co/fn:v1.1"
        f" (digest sha256:{'a' * 12}… → sha256:{'c' * 12}…)" in history
    )
    assert "First published in this catalog." in history
    assert "/c/example-co/functions/versions/1/catalog.yaml" in history


def test_badges_for_a_verified_publisher_and_a_signed_catalog(client, catalog, settings):
    _publish(catalog, _function("SetNamespace", versions=_version()))
    body = client.get(URL.format(kind="SetNamespace")).content.decode()
    assert "unverified publisher" in body
    assert ("✓ signed by this registry" in body) == bool(catalog.latest_version.signing_key_id)
    catalog.publisher.verified = True
    catalog.publisher.save()
    body = client.get(URL.format(kind="SetNamespace")).content.decode()
    assert "✓ verified publisher" in body and "unverified" not in body


def test_a_large_function_stays_within_the_page_weight_budget(client, catalog):
    """Long usage text, a wide schema and many catalog versions: the HTML and every stylesheet,
    script and icon it loads (uncompressed, as the development server sends them) stay ≤ 100 KB.
    The browser test measures the same in chromium."""
    props = "".join(
        f"                f{i}: {{type: string, description: Field number {i} of many.}}\n"
        for i in range(120)
    )
    schema = (
        "          type: object\n          properties:\n            spec:\n"
        "              type: object\n              properties:\n" + props
    )
    usage = "# Usage\n\n" + "".join(f"Paragraph {i} " + "word " * 60 + "\n\n" for i in range(400))
    for i in range(15):
        # Two versions with the same schema and usage: shown once, the other says so.
        versions = "".join(
            _version(
                name,
                image=f"registry.example.co/big:{name}.{i}",
                sha=f"{i:02x}" * 32,
                schema=schema,
                usage=usage,
            )
            for name in ("v2", "v1")
        )
        _publish(catalog, _function("Big", versions=versions))
    body = client.get(URL.format(kind="Big")).content
    total = len(body) + _asset_bytes(body.decode())
    assert total <= 100 * 1024, (len(body), total)
    assert b"and 71 more fields" in body  # spec and its 120 fields, 50 shown
    assert b"longer than this page shows" in body
    assert b"Older catalog versions are listed on" in body
    assert b'The same fields as <a href="#version-v2">v2</a>.' in body
    assert body.count(b"longer than this page shows") == 1
    print(f"function page: HTML {len(body)} bytes, with its assets {total} bytes")
