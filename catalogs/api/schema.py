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
