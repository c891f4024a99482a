"""A real local SMTP server (aiosmtpd) for tests of e-mail: the ``smtp`` fixture points Django's
SMTP backend at it and yields its mailbox."""

from __future__ import annotations

import email
import email.policy
import socket

import pytest
from aiosmtpd.controller import Controller


class Mailbox:
    """aiosmtpd's handler: keeps every message it accepts."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[str], str]] = []

    async def handle_DATA(self, server, session, envelope) -> str:
        self.messages.append((list(envelope.rcpt_tos), envelope.content.decode()))
        return "250 Message accepted for delivery"

    def bodies_to(self, address: str) -> list[tuple[str, str]]:
        """(subject, decoded text body) of each message to ``address``, oldest first."""
        found = []
        for to, raw in self.messages:
            if address in to:
                message = email.message_from_string(raw, policy=email.policy.default)
                body = message.get_body(preferencelist=("plain",))
                assert body is not None
                found.append((str(message["Subject"]), body.get_content()))
        return found


@pytest.fixture
def smtp(settings, jobs_in_this_process):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mailbox = Mailbox()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    yield mailbox
    controller.stop()
