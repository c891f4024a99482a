"""``python -m orchestrator`` runs the ``krm`` CLI."""

from orchestrator.cli import run

raise SystemExit(run())
