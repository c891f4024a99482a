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

Isolation: starlark-rust walks values recursively on the native stack (its garbage collector,
``json.encode``, comparisons), so a script that builds a value nested ~100,000 levels deep
crashes the process with SIGSEGV, whatever it does with the value afterwards. Where ``os.fork``
exists, each run therefore happens in a forked child (~1-3 ms) that sends the output back through
a pipe; a child killed by a signal becomes the function's error, and so does a child that
outlives its timeout. Without fork (or when fork is refused), the script runs in this process.
"""

from __future__ import annotations

import json
import os
import select
import signal
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


# Seconds a forked run may outlive its own timeout (check_cancelled) before it is killed.
_KILL_GRACE = 5.0


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
    args = (script, filename, resource_list, options, function, openapi)
    text, printed = _run_forked(*args) if hasattr(os, "fork") else _evaluate(*args)
    try:
        if not text:
            raise YamlError("deeper than the starlark check allows")
        out = json.loads(text)
        check_depth(out, limit=OUTPUT_DEPTH)
    except (RecursionError, YamlError):
        raise FunctionError(
            f"{function}: output nested deeper than {MAX_DEPTH} levels in a resource"
        ) from None
    if not isinstance(out, dict):
        raise FunctionError(f"{function}: ctx.resource_list is no longer a dict")
    return out, printed


def _run_forked(
    script: str,
    filename: str,
    resource_list: dict[str, Any],
    options: FnOptions,
    function: str,
    openapi: dict[str, Any] | None,
) -> tuple[str, str]:
    """``_evaluate`` in a forked child; its crash or hang is this function's error."""
    _globals()  # imported and built once, here: a child's work is lost when it exits
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # e.g. a process limit in a sandbox: run here instead
        os.close(read_fd)
        os.close(write_fd)
        return _evaluate(script, filename, resource_list, options, function, openapi)
    if pid == 0:  # the child: evaluate, write one JSON reply, exit without any cleanup
        code = 0
        try:
            os.close(read_fd)
            try:
                text, printed = _evaluate(
                    script, filename, resource_list, options, function, openapi
                )
                answer = {"text": text, "printed": printed}
            except FunctionError as exc:
                answer = {"error": exc.message}
            data = json.dumps(answer).encode("utf-8")
            view = memoryview(data)
            while view:
                view = view[os.write(write_fd, view) :]
        except BaseException:
            code = 70
        finally:
            os._exit(code)
    os.close(write_fd)
    chunks: list[bytes] = []
    deadline = time.monotonic() + options.timeout + _KILL_GRACE
    timed_out = False
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([pipe], [], [], left)[0]:
                timed_out = True
                os.kill(pid, signal.SIGKILL)
                break
            chunk = pipe.read(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if timed_out:
        raise FunctionError(f"{function}: timed out after {options.timeout:g}s")
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        running = "" if filename in function else f" running {filename}"
        raise FunctionError(
            f"{function} crashed the starlark interpreter ({name}){running}: "
            "starlark-rust walks values recursively, so a value nested tens of thousands of "
            "levels deep (a list or dict built inside itself in a loop) does this"
        )
    try:
        reply: Any = json.loads(b"".join(chunks))
    except ValueError:
        reply = None
    if not isinstance(reply, dict) or os.waitstatus_to_exitcode(status) != 0:
        raise FunctionError(f"{function}: the starlark run ended without an answer")
    if "error" in reply:
        raise FunctionError(str(reply["error"]))
    return str(reply["text"]), str(reply["printed"])


def _evaluate(
    script: str,
    filename: str,
    resource_list: dict[str, Any],
    options: FnOptions,
    function: str,
    openapi: dict[str, Any] | None,
) -> tuple[str, str]:
    """Evaluate the script here: (the ResourceList as JSON text, "" if too deep; printed)."""
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
    return cast(str, text), "\n".join(printed)  # _OUTPUT always evaluates to a string
