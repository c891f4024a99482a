"""OpenAPI schema post-processing: document the error answers every operation can give.

drf-spectacular documents the success answers it sees in the views; the refusals (bad input,
not signed in, not allowed, not found, conflict, body too large, database busy) come from the
one exception handler, the middleware and DRF, and are the same for every operation. They are
added here, each as a JSON problem (``{"detail": …}``, or a field → messages map for invalid
input), so that the schema says what the API does.
"""

from __future__ import annotations

from typing import Any

PROBLEM = "Problem"
_PROBLEM_SCHEMA = {
    "type": "object",
    "description": "Why the request was refused: `detail`, or for invalid input a map of "
    "field names to messages (and `problems` for an invalid catalog document).",
    "properties": {
        "detail": {"type": "string"},
        "problems": {"type": "array", "items": {"type": "object"}},
        "limit": {"type": "integer"},
    },
    "additionalProperties": True,
}
_ANSWERS = {
    "400": "Invalid input (bad query parameter or body); nothing changed.",
    "401": "Not signed in (a missing or bad token).",
    "403": "Not allowed to do this.",
    "404": "No such object (or page).",
    "405": "Method not allowed.",
    "406": "The Accept header asks for a format the API does not serve.",
}
_WRITE_ANSWERS = {
    "409": "Conflicts with the current state (already exists, a mirror's catalog, in progress).",
    "411": "A chunked body this server cannot read: send a Content-Length.",
    "413": "The request body is over the limit (twice CATALOG_MAX_BYTES); `limit` names it.",
    "415": "Unsupported media type of the request body.",
    "503": "The database is busy (SQLite's write lock); retry after `Retry-After` seconds.",
}


# Django refuses the NUL character in every text it validates (form and serializer fields:
# "Null characters are not allowed."), so the schema says a text input cannot carry one.
NO_NUL = "^[^\\x00]*$"


def _no_nul(schema: dict[str, Any], components: dict[str, Any], seen: set[str]) -> None:
    """Give every free-text string of an input schema the NO_NUL pattern (following $refs)."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name not in seen and name in components:
            seen.add(name)
            _no_nul(components[name], components, seen)
        return
    if schema.get("type") == "string" and not {"pattern", "enum", "format"} & schema.keys():
        schema["pattern"] = NO_NUL
    for key in ("properties", "patternProperties"):
        for child in (schema.get(key) or {}).values():
            _no_nul(child, components, seen)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            _no_nul(schema[key], components, seen)
    for key in ("oneOf", "anyOf", "allOf"):
        for child in schema.get(key) or []:
            _no_nul(child, components, seen)


def forbid_nul_in_inputs(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: query parameters and JSON/form request bodies."""
    components = result.get("components", {}).get("schemas", {})
    seen: set[str] = set()
    for item in result.get("paths", {}).values():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "query":
                    _no_nul(parameter.get("schema", {}), components, seen)
            content = (operation.get("requestBody") or {}).get("content", {})
            for media_type, body in content.items():
                if "json" in media_type or "form" in media_type:
                    _no_nul(body.get("schema", {}), components, seen)
    return result


def add_problem_responses(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: add the problem answers to every API operation."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas[PROBLEM] = _PROBLEM_SCHEMA
    ref = {"$ref": f"#/components/schemas/{PROBLEM}"}
    for path, item in result.get("paths", {}).items():
        if not path.startswith("/api/v1/"):
            continue
        for method, operation in item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            answers = dict(_ANSWERS)
            if method != "get":
                answers.update(_WRITE_ANSWERS)
            responses = operation.setdefault("responses", {})
            for code, description in answers.items():
                responses.setdefault(
                    code,
                    {"description": description, "content": {"application/json": {"schema": ref}}},
                )
    return result


def empty_query_choices_mean_any(result: dict[str, Any], **_: Any) -> dict[str, Any]:
    """A choice query parameter sent empty (``?runtime=``, as an HTML form sends "any") counts as
    not given: the schema says so by listing the empty value in its enum."""
    for path in result.get("paths", {}).values():
        for operation in path.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                if parameter.get("in") == "query" and "enum" in schema and "" not in schema["enum"]:
                    schema["enum"] = [*schema["enum"], ""]
                    note = "Sent empty, it counts as not given."
                    text = parameter.get("description", "")
                    parameter["description"] = f"{text}\n\n{note}" if text else note
    return result
