"""schemathesis against the live OpenAPI schema of a real server (gunicorn, SQLite), anonymous
and with a token: no server error, and every status code, content type and response body as the
schema documents it. Bounded (a few examples per operation, no deadline) to stay within minutes.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.live_registry import live_registry

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
EXAMPLES = 15


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
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
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
                case.call_and_validate(base_url=base, headers=headers, checks=CHECKS)
            except (FailureGroup, Exception) as exc:  # FailureGroup: what this case broke
                failures.append(f"{case.operation.label}: {_summary(exc)}")

        check()
    return sorted(set(failures))


def _summary(exc: Exception) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return " | ".join(ln for ln in lines[1:4])


def test_anonymous_calls_do_what_the_schema_says(registry):
    assert _failures(registry.base, {}) == []


def test_calls_with_a_token_do_what_the_schema_says(registry):
    assert _failures(registry.base, {"Authorization": f"Token {registry.token}"}) == []
