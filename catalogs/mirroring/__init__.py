"""The registry's mirroring app: mirror sources, sync runs, fetchers by scheme, runtime artifacts,
drift."""
