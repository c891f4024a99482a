"""The registry's one way for a lower app to tell the apps above it that something happened.

Apps depend one way (publishing ← distribution ← trust ← mirroring ← review ← discovery): a lower
app never imports a higher one. When a higher app must act on what a lower one did (a version was
published: distribution stores its OCI manifest, trust signs it), the lower app defines a typed
event (a frozen dataclass in its ``events.py``) and emits it; the higher app subscribes a handler
in its ``AppConfig.ready()``.

Handlers run synchronously, in the emitter's thread and transaction, in the order they subscribed
(``INSTALLED_APPS`` order, lowest app first). An exception from a handler reaches the emitter, so
a failed handler rolls the write back: "published" means "published, stored and signed". An event
whose name ends in ``Requested`` asks the subscribers to check a write before it happens; a handler
refuses it by raising the domain error. Nothing else in the registry uses Django signals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

E = TypeVar("E")

_handlers: dict[type, list[Callable[[Any], None]]] = {}


def subscribe(event_type: type[E], handler: Callable[[E], None]) -> None:
    """Call ``handler`` with every event of ``event_type`` emitted from now on (once per
    handler)."""
    handlers = _handlers.setdefault(event_type, [])
    if handler not in handlers:
        handlers.append(handler)


def emit(event: object) -> None:
    """Call the handlers of ``type(event)`` in subscription order; their errors propagate."""
    for handler in _handlers.get(type(event), ()):
        handler(event)


def subscribers(event_type: type) -> list[Callable[[Any], None]]:
    """The handlers subscribed to ``event_type``, in call order (for tests and diagnostics)."""
    return list(_handlers.get(event_type, ()))
