"""``python manage.py sync_source NAME``: sync one mirror source in the foreground."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalogs.exceptions import RegistryError
from catalogs.mirroring import services as mirrors


class Command(BaseCommand):
    help = "Sync a mirror source now, in this process, with a progress bar."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="name of the mirror source")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args: object, **options: object) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TaskID, TextColumn

        try:
            source = mirrors.mirror_source_get_by_name(name=str(options["name"]))
            run = mirrors.mirror_source_sync_request(source=source, actor=None, enqueue=False)
        except RegistryError as exc:
            raise CommandError(exc.message)
        # Detect the terminal: the bar shows on a tty and stays out of logs and pipes.
        # OutputWrapper._out is the wrapped stream (the stubs type it as a callable).
        console = Console(file=self.stderr._out)  # type: ignore[arg-type]
        progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            console=console,
            disable=bool(options["no_progress"]),
            transient=True,
        )
        tasks: dict[str, TaskID] = {}

        def report(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task(stage, total=total)
            progress.update(tasks[stage], completed=done, total=total)

        with progress:
            run = mirrors.sync_run_execute(run_pk=run.pk, progress=report)
        if run.status == run.Status.FAILED:
            raise CommandError(f"Run {run.pk} of '{source.name}' failed: {run.reason}")
        version = run.catalog_version.number if run.catalog_version else None
        self.stdout.write(
            f"Run {run.pk} of '{source.name}' {run.status}: version {version}, "
            f"upstream {run.digest}, {_count(run.function_count, 'function')}, "
            f"{_count(run.artifact_count, 'artifact')}, {run.bytes} bytes"
        )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
