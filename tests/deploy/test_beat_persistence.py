"""Both deployments run celery beat on the database scheduler: its schedule survives restarts."""

from __future__ import annotations

import yaml

from tests.deploy.test_compose import COMPOSE, command
from tests.deploy.test_k8s import pod_spec, production  # noqa: F401 (fixture)

SCHEDULER = "--scheduler django_celery_beat.schedulers:DatabaseScheduler"


def test_compose_beat_keeps_its_schedule_in_the_database():
    services = yaml.load(COMPOSE.read_text(), Loader=yaml.CSafeLoader)["services"]
    beat = services["beat"]
    assert SCHEDULER in command(beat)
    assert "--schedule " not in command(beat)  # no schedule file in the container's /tmp
    # The schedule's tables come with the migrations that web runs before it is healthy.
    assert beat["depends_on"]["web"]["condition"] == "service_healthy"
    assert beat["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_k8s_beat_keeps_its_schedule_in_the_database(production):  # noqa: F811
    beat = production[("Deployment", "krm-registry-beat")]
    line = " ".join(pod_spec(beat)["containers"][0]["command"])
    assert SCHEDULER in line
    assert "--schedule " not in line
