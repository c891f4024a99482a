"""``python manage.py tuf_root``: show the TUF root, or sign its next version (a rotation)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalogs.exceptions import InvalidInputError
from catalogs.trust import services, tuf


class Command(BaseCommand):
    help = (
        "Show the registry's TUF root (version, keys, threshold, expiry); with --rotate, sign "
        "the next root version: the online signing key plus the root keys in "
        "TRUST_ROOT_KEY_FILES, TRUST_ROOT_THRESHOLD of them required. A threshold of the "
        "current root's keys must be at hand (mount the offline keys for the ceremony)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--rotate", action="store_true", help="sign the next root version")
        parser.add_argument(
            "--threshold", type=int, default=None, help="instead of TRUST_ROOT_THRESHOLD"
        )

    def handle(self, *args: object, **options: object) -> None:
        services.tuf_repository_ensure()
        if options["rotate"]:
            threshold = options["threshold"]
            try:
                version = tuf.root_rotate(
                    threshold=threshold if isinstance(threshold, int) else None
                )
            except InvalidInputError as exc:
                raise CommandError(exc.message) from None
            self.stdout.write(f"Signed TUF root version {version}.")
        row = tuf.current("root")
        assert row is not None
        root = tuf.Metadata.from_bytes(row.data.encode()).signed
        role = root.roles["root"]
        self.stdout.write(
            f"TUF root version {root.version}, expires {root.expires.isoformat()}, "
            f"{role.threshold} of {len(role.keyids)} key(s):"
        )
        online = tuf.online_signer().public_key.keyid
        for keyid in role.keyids:
            self.stdout.write(f"  {keyid}" + ("  (online signing key)" if keyid == online else ""))
