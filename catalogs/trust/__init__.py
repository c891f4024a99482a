"""The registry's trust app: signing keys in use, signatures, revocations, collisions."""
