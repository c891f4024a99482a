"""The registry's distribution app: the OCI distribution endpoint /v2/: manifests, blobs, uploads,
tags, tokens."""
