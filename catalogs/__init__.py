"""The registry's domain: publishers, catalogs, immutable versions, functions, and their serving."""
