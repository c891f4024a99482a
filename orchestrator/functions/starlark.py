"""The starlark runtime: scripts run in process with the kustomize/kpt ``ctx`` API.

Interpreter: ``starlark-pyo3`` (starlark-rust). Measured here on 1,000 ConfigMaps with a script
that annotates every item: starlark-pyo3 ~27 ms per run (ResourceList passed as JSON and
decoded inside), starlark-go (Python bindings to Go starlark, the interpreter kustomize and kpt
embed) ~110 ms, and starlark-go freezes every global after each ``exec``, so the kpt idiom of
mutating ``ctx.resource_list`` in place needs a workaround there. The pure-Python ``starlark``
package installs under the same module name as starlark-pyo3 and is slower still. Both
binding packages install from PyPI as wheels. Compatibility: starlark-rust follows the same
language spec; with the ``extended`` dialect, top-level ``for``/``if`` (kpt scripts use them)
and the ``struct``/``json`` builtins are available, as in kpt's runtime.

``ctx.resource_list`` is a dict with ``items`` and ``functionConfig``; the script mutates it in
place (or sets ``results``). ``ctx.environment`` is the --env entries; ``ctx.open_api()`` returns
the build's OpenAPI schema (a dict, empty when the build has none). ``print`` goes to the
function's stderr text, never to the build's stdout.
"""

from __future__ import annotations

import json
import time
from typing import Any, cast

from orchestrator.errors import YamlError
from orchestrator.functions.options import FnOptions, FunctionError
from orchestrator.yamllimits import MAX_DEPTH, check_depth

_PRELUDE = (
    "_rl = json.decode(_krm_input)\n"
    "ctx = struct(resource_list = _rl, environment = json.decode(_krm_env), "
    "open_api = lambda: json.decode(_krm_openapi))\n"
)
# Its resources may nest MAX_DEPTH levels below the ResourceList and its item list.
OUTPUT_DEPTH = MAX_DEPTH + 2
# starlark's json.encode recurses on the native stack and crashes the process (SIGSEGV) a few
# hundred levels down, so the depth is checked first, level by level (Starlark has no recursion).
_EPILOGUE = """
def _krm_deeper_than(value, limit):
    level = [value]
    for _ in range(limit):
        below = []
        for x in level:
            t = type(x)
            if t == "dict":
                below.extend(x.values())
            elif t == "list" or t == "tuple":
                below.extend(x)
        if not below:
            return False
        level = below
    return True
"""
_OUTPUT = f'"" if _krm_deeper_than(_rl, {OUTPUT_DEPTH}) else json.encode(_rl)'
_GLOBALS: Any = None


def _globals() -> Any:
    global _GLOBALS
    if _GLOBALS is None:
        import starlark as sl

        _GLOBALS = sl.Globals.extended_by(
            [
                sl.LibraryExtension.StructType,
                sl.LibraryExtension.Json,
                sl.LibraryExtension.Map,
                sl.LibraryExtension.Filter,
            ]
        )
    return _GLOBALS


def run(
    script: str,
    *,
    filename: str,
    resource_list: dict[str, Any],
    options: FnOptions,
    function: str,
    openapi: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], str]:
    """Run a script on a ResourceList dict; returns (the ResourceList after, printed text)."""
    import starlark as sl  # starlark-pyo3, pinned in requirements.txt

    printed: list[str] = []
    module = sl.Module()
    # JSON in and out: converting nested dicts through the bindings object by object is ~5x
    # slower than one json.decode/json.encode inside the interpreter.
    module["_krm_input"] = json.dumps(resource_list)
    module["_krm_env"] = json.dumps(options.env_pairs())
    module["_krm_openapi"] = json.dumps(openapi or {})
    module.add_callable(
        "print", lambda *args, **_kw: printed.append(" ".join(str(a) for a in args))
    )
    deadline = time.monotonic() + options.timeout
    eval_options = sl.EvalOptions(
        check_cancelled=lambda: time.monotonic() > deadline, max_callstack_size=1000
    )
    dialect = sl.Dialect.extended()
    try:
        sl.eval(module, sl.parse("<prelude>", _PRELUDE, dialect), _globals())
        ast = sl.parse(filename, script, dialect)
        sl.eval_with(eval_options, module, ast, _globals())
        sl.eval(module, sl.parse("<epilogue>", _EPILOGUE, dialect), _globals())
        text = sl.eval(module, sl.parse("<epilogue>", _OUTPUT, dialect), _globals())
    except sl.StarlarkError as exc:
        if time.monotonic() > deadline:
            raise FunctionError(f"{function}: timed out after {options.timeout:g}s") from None
        detail = "\n".join(printed + [str(exc).strip()])
        raise FunctionError(f"{function} failed:\n{detail}") from None
    try:
        if not text:
            raise YamlError("deeper than the starlark check allows")
        out = json.loads(cast(str, text))  # _OUTPUT always evaluates to a string
        check_depth(out, limit=OUTPUT_DEPTH)
    except (RecursionError, YamlError):
        raise FunctionError(
            f"{function}: output nested deeper than {MAX_DEPTH} levels in a resource"
        ) from None
    if not isinstance(out, dict):
        raise FunctionError(f"{function}: ctx.resource_list is no longer a dict")
    return out, "\n".join(printed)
