"""``python -m orchestrator`` runs the ``krm`` CLI."""

from orchestrator.cli import main

raise SystemExit(main())
