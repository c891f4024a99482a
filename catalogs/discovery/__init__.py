"""The registry's discovery app: search, function pages, the landing page."""
