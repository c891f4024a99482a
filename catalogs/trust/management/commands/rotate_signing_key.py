"""``python manage.py rotate_signing_key``: a new signing key; old public keys stay verifiable."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalogs.exceptions import InvalidInputError
from catalogs.trust import services, signing, tuf


class Command(BaseCommand):
    help = (
        "Generate a new ECDSA P-256 signing key into SIGNING_KEY_FILE and make it current. "
        "Old public keys stay listed at /api/v1/signing-keys/, so old signatures still verify. "
        "The TUF root is rotated to the new key, signed by the old one too (with offline root "
        "keys, mount them first: TRUST_ROOT_KEY_FILES)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--resign",
            action="store_true",
            help="also re-sign every catalog version with the new key",
        )

    def handle(self, *args: object, **options: object) -> None:
        try:
            old = signing.signing_key_list().filter(current=True).first()
            old_signer = tuf.online_signer() if tuf.current("root") is not None else None
            if old_signer is not None:
                # Refused before the key changes when the old root's threshold is out of reach.
                tuf.root_rotation_check(signers=[old_signer, *tuf.configured_root_signers()])
            key = signing.signing_key_rotate()
            before = f" (was {old.key_id})" if old is not None else ""
            self.stdout.write(f"Current signing key: {key.key_id}{before}")
            if old_signer is not None:
                version = tuf.root_rotate(old_signers=[old_signer])
                self.stdout.write(f"TUF root version {version}: signed by the old and the new key.")
        except (signing.SigningKeyError, InvalidInputError) as exc:
            raise CommandError(str(exc))
        if options["resign"]:
            count = services.catalog_versions_sign(resign=True)
            self.stdout.write(f"Re-signed {count} catalog version(s) with {key.key_id}.")
