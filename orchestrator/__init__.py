"""The KRM build engine: builds Kustomizations, Components and Compositions like
``kustomize build``. Importable without Django; the CLI is :mod:`orchestrator.cli`.
"""
