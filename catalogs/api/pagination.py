"""Pagination of API lists."""

from rest_framework.pagination import PageNumberPagination


class StandardPagination(PageNumberPagination):
    """Pages of 50 by default; clients may ask for up to 500 with ``page_size``."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
