"""Runs one starlark script inside the trial sandbox (``catalogs.review.sandbox.run_starlark``).

Started as a separate Python process inside the jail, with no Django: it reads
``{"script", "resource_list", "timeout"}`` as JSON on stdin, runs the engine's starlark runtime
and writes ``{"resource_list", "printed"}`` or ``{"error"}`` as JSON on stdout.
"""

from __future__ import annotations

import json
import sys

from orchestrator.functions import starlark
from orchestrator.functions.options import FnOptions, FunctionError


def main() -> int:
    doc = json.loads(sys.stdin.buffer.read())
    options = FnOptions(timeout=float(doc.get("timeout") or 10))
    try:
        out, printed = starlark.run(
            doc["script"],
            filename="function.star",
            resource_list=doc["resource_list"],
            options=options,
            function="trial",
        )
    except FunctionError as exc:
        json.dump({"error": exc.message}, sys.stdout)
        return 0
    json.dump({"resource_list": out, "printed": printed}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
