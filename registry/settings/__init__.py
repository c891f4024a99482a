"""Settings: ``base`` (development defaults), ``test`` and ``production``."""
