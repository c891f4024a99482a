"""The registry as an OCI distribution endpoint (distribution-spec v1.1): manifests, blobs, tags,
referrers, pushes with ``oras``, and the token flow that OCI clients use.

Every catalog version is an OCI image manifest whose one layer is the served catalog bytes; the
manifest is built once when the version is published and stored, so its digest never changes.
"""
