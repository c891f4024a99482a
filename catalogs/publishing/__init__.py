"""The registry's publishing app: publishers and owners, catalogs, immutable versions, function
definitions, the blob store and serving /c/…."""
