"""The function page in a real browser, at desktop and phone sizes: it fits a phone, stays
within the weight budget with every asset it loads, and its Copy buttons copy the snippets.

Screenshots: ``fn-<page>-desktop.png`` and ``fn-<page>-phone.png``.
"""

from __future__ import annotations

import pytest
import yaml

from catalogs.publishing import services
from tests.browser.conftest import DESKTOP, PHONE
from tests.catalogs.factories import CatalogFactory, PublisherFactory
from tests.catalogs.web.test_function_page import HEAD, NAMESPACE_SCHEMA, _function, _version

pytestmark = pytest.mark.django_db(transaction=True)

BUDGET = 100 * 1024

USAGE = """\
# SetNamespace

Sets `metadata.namespace` on **every** namespaced resource, and rewrites the
`subjects[].namespace` of RoleBindings that point at a ServiceAccount it moved.

## Fields

| field | type | meaning |
|---|---|---|
| `spec.namespace` | string | the namespace to set (a DNS label, at most 63 characters long) |
| `spec.mode` | `strict` or `lenient` | `strict` fails on cluster-scoped resources with one |
| `spec.zone` | integer | the availability zone index the namespace is labelled with |

## Example

```yaml
apiVersion: example.co/v2
kind: SetNamespace
metadata:
  name: team-payments-production-namespace-setter-with-a-very-long-name
spec:
  namespace: team-payments-production
  zone: 3
```

> Cluster-scoped resources (Namespaces, ClusterRoles, CRDs) are left alone.

See the [design notes](https://example.co/set-namespace/design-notes-with-a-rather-long-address.html).
"""


@pytest.fixture
def rich_function(db):
    """A function with two versions, Markdown usage and three catalog versions of history."""
    catalog = CatalogFactory(
        publisher=PublisherFactory(slug="example-co", verified=True), name="functions"
    )
    v2_schema = NAMESPACE_SCHEMA.replace(
        "required: [namespace, mode]", "required: [namespace, zone]"
    ).replace("mode: {type: string, enum: [strict, lenient]}", "zone: {type: integer}")
    long_image = "registry.example.co/platform-team/functions/set-namespace"
    for i, sha in enumerate(("a", "b", "c")):
        versions = _version(
            "v2",
            image=f"{long_image}:v2.{i}",
            sha=sha * 64,
            schema=v2_schema,
            usage=USAGE,
            extra_runtime="          requireNetwork: true\n" if i == 2 else "",
        ) + _version("v1", image=f"{long_image}:v1", schema=NAMESPACE_SCHEMA)
        services.catalog_version_publish(
            catalog=catalog,
            content=HEAD
            + _function("SetNamespace", versions=versions, tags="[mutator, namespace]"),
            actor=None,
        )
    return "/catalogs/example-co/functions/functions/example.co/SetNamespace/"


@pytest.fixture
def demo_function(db):
    from io import StringIO

    from django.core.management import call_command

    call_command("load_demo", stdout=StringIO())
    return "/catalogs/demo/functions/functions/example.com/SetNamespace/"


def _load(page, path: str) -> int:
    """Open ``path``; the bytes of every response the page needed (HTML, CSS, JS, icon)."""
    sizes: list[int] = []
    page.on("requestfinished", lambda r: sizes.append(r.sizes()["responseBodySize"]))
    response = page.goto(path)
    assert response.status == 200
    page.wait_for_load_state("networkidle")
    return sum(sizes)


@pytest.mark.parametrize("which", ["rich", "demo"])
def test_the_function_page_at_desktop_and_phone_size(
    which, request, new_page, screenshots, live_server
):
    path = request.getfixturevalue(f"{which}_function")
    for size, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
        page = new_page()
        page.set_viewport_size(viewport)
        transferred = _load(page, path)
        assert transferred <= BUDGET, f"{size}: {transferred} bytes"
        print(f"{which} function page, {size}: {transferred} bytes with its assets")
        page.screenshot(path=str(screenshots / f"fn-{which}-{size}.png"), full_page=True)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= viewport["width"], f"{size}: {width}px wide"
        # The three steps are there, in order, and visible.
        steps = page.locator("ol.steps > li h3").all_inner_texts()
        assert [s.split()[0] for s in steps] == ["Save", "Name", "Build,"]
        assert page.locator("#cfg-use").is_visible()
        page.locator("#use").screenshot(path=str(screenshots / f"fn-{which}-use-{size}.png"))


def test_copy_buttons_copy_what_the_page_shows(rich_function, new_page):
    page = new_page()
    page.goto(rich_function)
    for target in ("cfg-use", "kustomization", "build-latest", "build-pinned"):
        button = page.locator(f'button.copy-button[data-copy="#{target}"]')
        button.click()
        page.wait_for_function("b => b.textContent === 'Copied'", arg=button.element_handle())
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied == page.locator(f"#{target}").inner_text().strip(), target
    assert page.evaluate("navigator.clipboard.readText()").startswith("krm build . --trusted")
    page.locator('button.copy-button[data-copy="#cfg-use"]').click()
    config = yaml.safe_load(page.evaluate("navigator.clipboard.readText()"))
    assert config["apiVersion"] == "example.co/v2" and config["kind"] == "SetNamespace"


def test_rendered_usage_and_changes_are_visible(rich_function, new_page, screenshots):
    page = new_page()
    page.set_viewport_size(PHONE)
    page.goto(rich_function)
    assert page.locator("#usage .markdown table").is_visible()
    assert page.locator("#usage .markdown h4", has_text="Fields").is_visible()
    history = page.locator("#history")
    history.scroll_into_view_if_needed()
    assert history.locator("text=now needs network").first.is_visible()
    history.screenshot(path=str(screenshots / "fn-rich-history-phone.png"))
    page.locator("#versions").screenshot(path=str(screenshots / "fn-rich-versions-phone.png"))
