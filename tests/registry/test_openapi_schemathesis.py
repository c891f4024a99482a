"""schemathesis against the live OpenAPI schema of a real server (gunicorn, SQLite), anonymous
and with a token: no server error, and every status code, content type, header and response body
as the schema documents it. Every default check of schemathesis runs, on valid inputs (positive:
the API must accept what the schema allows) and on invalid ones (negative: the API must refuse
what the schema does not allow, e.g. ``page_size=null``). Bounded (a few examples per operation
and mode, no deadline) to stay within minutes.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.core.failures import FailureGroup

from tests.live_registry import live_registry

EXAMPLES = 10


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    with live_registry(tmp_path_factory.mktemp("schemathesis"), workers=1, threads=4) as server:
        yield server


def _failures(base: str, headers: dict[str, str]) -> list[str]:
    """Run every operation of the live schema; one line per operation that broke a check.

    schemathesis's own pytest integration (``from_fixture``) does not run on this pytest, so
    its Python API is driven directly: each operation's hypothesis strategy, each case called
    and validated. Failures are collected (not raised) so one run reports every operation.
    """
    schema = schemathesis.openapi.from_url(f"{base}/api/schema/?format=json")
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    for operation, mode in [(op, m) for op in operations for m in GenerationMode]:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            phases=[Phase.explicit, Phase.generate],
            database=None,
        )
        def check(case) -> None:
            try:
                # checks=None: schemathesis's default set, every check it has.
                case.call_and_validate(base_url=base, headers=headers)
            except (FailureGroup, Exception) as exc:  # FailureGroup: what this case broke
                generated = case.meta.generation.mode.value if case.meta else "explicit"
                label = f"{case.operation.label} [{generated}]"
                failures.append(f"{label}: {_summary(exc)}")

        try:
            check()
        except Unsatisfiable:  # negative mode, nothing to make invalid (no parameters, no body)
            assert mode is GenerationMode.NEGATIVE, operation.label
    return sorted(set(f for f in failures if not _semantic_refusal(f)))


# A schema cannot describe which strings are valid public keys, which webhook URLs the network
# policy lets through (a random URL's host is private or does not resolve), nor that a
# subscription names exactly one of a catalog that exists and a function: a random body that has
# the schema's shape is rightly refused with 400 or 404 (tests/catalogs/trust/
# test_publisher_keys.py and tests/catalogs/notifications/ check each refusal's message). Only
# that check, on those operations, is set aside.
SEMANTIC_BODIES = (
    "POST /api/v1/publishers/{publisher}/keys/",
    "POST /api/v1/publishers/{publisher}/webhooks/",
    "POST /api/v1/subscriptions/",
)


def _semantic_refusal(failure: str) -> bool:
    return failure.startswith(SEMANTIC_BODIES) and "ST202" in failure and failure.count(" - ") == 1


def _summary(exc: Exception) -> str:
    """What failed and on which input, without the response body or the curl line."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    kept = [ln for ln in lines[1:] if not ln.startswith(("curl ", "[", "{", "Reproduce"))]
    return " | ".join(kept[:5])


def test_anonymous_calls_do_what_the_schema_says(registry):
    failures = _failures(registry.base, {})
    assert not failures, "\n".join(failures)


def test_calls_with_a_token_do_what_the_schema_says(registry):
    failures = _failures(registry.base, {"Authorization": f"Token {registry.token}"})
    assert not failures, "\n".join(failures)
