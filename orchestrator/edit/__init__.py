"""``krm edit`` and ``krm create``: change a kustomization file the way kustomize's commands do.

``kustfile`` reads and writes the file (kustomize's field order, comments kept before the
fields they precede); ``commands`` holds one function per subcommand; ``parser`` adds the
argparse subcommands and imports nothing else, so building the CLI parser stays cheap.
"""
