"""The registry's web UI: server-rendered pages over the same services as the API."""
