"""The registry's trust app: signing keys in use, signatures, revocations, collisions, and the
registry's TUF repository (``/tuf/``)."""
