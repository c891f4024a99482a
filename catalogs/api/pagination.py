"""Pagination of API lists."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request


def _whole_number(request: Request, name: str) -> int | None:
    """Query parameter ``name`` as a whole number of at least 1 (None when absent); 400 else."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
        raise ValidationError({name: [f"Give {name} as a whole number of at least 1."]})
    return int(raw)


class StandardPagination(PageNumberPagination):
    """Pages of 50 by default; clients may ask for up to 500 with ``page_size``.

    Both parameters must be whole numbers of at least 1 (``page`` may also be ``last``): anything
    else is refused with 400, as the schema says, instead of being taken for the default.
    """

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_size(self, request: Request) -> int:
        wanted = _whole_number(request, self.page_size_query_param)
        return self.page_size if wanted is None else min(wanted, self.max_page_size)

    def get_page_number(self, request: Request, paginator: Any) -> int | str:
        if request.query_params.get(self.page_query_param) in self.last_page_strings:
            return paginator.num_pages
        return _whole_number(request, self.page_query_param) or 1

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        page, page_size = super().get_schema_operation_parameters(view)
        page["schema"] = {"oneOf": [{"type": "integer", "minimum": 1}, {"enum": ["last"]}]}
        page["description"] = "A page number within the paginated result set, or `last`."
        page_size["schema"] = {"type": "integer", "minimum": 1}
        page_size["description"] = (
            f"Number of results to return per page (default {self.page_size}; "
            f"more than {self.max_page_size} return {self.max_page_size})."
        )
        return [page, page_size]
