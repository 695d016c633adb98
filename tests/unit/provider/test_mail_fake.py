"""The mail fake: smtplib against the real aiosmtpd server on the test's event loop."""

from __future__ import annotations

import asyncio
import smtplib
import socket
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from fake_providers.payment import create_app
from fake_providers.payment.fakes.mail import start_mail_server
from fake_providers.payment.server import bind
from fake_providers.upstreams import KEY_IN_TEXT, ReferenceSource, Upstream, upstreams_to_json
from harness.workflow.manifest import case_key

from .conftest import inprocess_config

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

MAIL = Upstream("smtp", "mail", ReferenceSource("subject", r"Order (\S+)"))


@dataclass
class MailFake:
    port: int
    control: httpx.AsyncClient

    def send(
        self, subject: str, *, login: bool = False, body: str = "Thanks for your order."
    ) -> dict[str, tuple[int, bytes]]:
        """Blocking: run it in a thread (the server shares the test's loop)."""
        message = EmailMessage()
        message["From"] = "shop@x.test"
        message["To"] = "ada@x.test"
        message["Subject"] = subject
        message["X-Order"] = "hdr-7"
        message.set_content(body, cte="quoted-printable")
        with smtplib.SMTP("127.0.0.1", self.port, timeout=10) as client:
            if login:
                client.login("n8n", "secret")
            return client.send_message(message)  # type: ignore[return-value]

    async def commits(self) -> list[dict[str, object]]:
        rows: list[dict[str, object]] = (await self.control.get("/_control/commits")).json()
        return rows


@pytest_asyncio.fixture
async def mail(tmp_path: Path) -> AsyncIterator[MailFake]:
    provider = create_app(inprocess_config(tmp_path))
    server = await start_mail_server(provider.runtime, bind(0))
    control = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=provider.control), base_url="http://control"
    )
    async with control:
        await control.put("/_control/upstreams", json=upstreams_to_json([MAIL]))
        yield MailFake(server.sockets[0].getsockname()[1], control)
    server.close()
    provider.close()


async def test_each_message_is_an_email_commit(mail: MailFake) -> None:
    refused = await asyncio.to_thread(mail.send, "Order A-17 confirmed", login=True)
    assert refused == {}
    await asyncio.to_thread(mail.send, "Order A-17 confirmed")
    commits = await mail.commits()
    assert [(c["effect"], c["reference"]) for c in commits] == [("email", "A-17")] * 2
    health = (await mail.control.get("/_control/health")).json()
    assert health["smtp_port"] == mail.port


async def test_reference_from_a_header(mail: MailFake) -> None:
    upstream = Upstream("smtp", "mail", ReferenceSource("header", "X-Order"), effect="receipt")
    await mail.control.put("/_control/upstreams", json=upstreams_to_json([upstream]))
    await asyncio.to_thread(mail.send, "Your receipt")
    [commit] = await mail.commits()
    assert (commit["effect"], commit["reference"]) == ("receipt", "hdr-7")


async def test_error_before_commit_is_451_and_commits_nothing(mail: MailFake) -> None:
    await mail.control.post("/_control/faults", json={"kind": "error_before_commit"})
    with pytest.raises(smtplib.SMTPDataError) as refused:
        await asyncio.to_thread(mail.send, "Order B-1")
    assert refused.value.smtp_code == 451
    assert await mail.commits() == []
    await asyncio.to_thread(mail.send, "Order B-1")  # attempt 2: no fault
    assert len(await mail.commits()) == 1


async def test_commit_then_close_commits_then_drops_the_connection(mail: MailFake) -> None:
    await mail.control.post("/_control/faults", json={"kind": "commit_then_close"})
    with pytest.raises((smtplib.SMTPServerDisconnected, ConnectionError)):
        await asyncio.to_thread(mail.send, "Order C-1")
    [commit] = await mail.commits()
    assert commit["reference"] == "C-1"


async def test_barrier_holds_a_message_at_committed(mail: MailFake) -> None:
    armed = await mail.control.post(
        "/_control/barriers", json={"reference": "D-1", "point": "committed"}
    )
    barrier_id = armed.json()["id"]
    sending = asyncio.create_task(asyncio.to_thread(mail.send, "Order D-1"))
    reached = await mail.control.post(
        f"/_control/barriers/{barrier_id}/wait", params={"timeout": 5}
    )
    assert reached.json()["state"] == "holding"
    assert len(await mail.commits()) == 1
    assert not sending.done()
    await mail.control.post(f"/_control/barriers/{barrier_id}/release")
    assert await sending == {}


def _hand_over(port: int, subject: str) -> socket.socket:
    """A client that hands over a message and does not wait for the answer."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    lines = sock.makefile("rwb")
    lines.readline()  # 220
    for command in (b"HELO w", b"MAIL FROM:<shop@x.test>", b"RCPT TO:<ada@x.test>", b"DATA"):
        lines.write(command + b"\r\n")
        lines.flush()
        while lines.readline()[3:4] == b"-":
            pass
    lines.write(f"Subject: {subject}\r\n\r\nThanks.\r\n.\r\n".encode())
    lines.flush()
    return sock


def _vanish(sock: socket.socket) -> None:
    """Die as a killed n8n worker does: the kernel resets the connection."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


async def test_a_held_message_whose_client_vanished_still_ends(mail: MailFake) -> None:
    """aiosmtpd cancels a session's handler when its connection is lost; the held attempt must
    still run to its end once released (as a held HTTP request does), or the provider stays
    busy with it forever and the case never settles."""
    await mail.control.post("/_control/faults", json={"kind": "error_before_commit"})
    armed = await mail.control.post(
        "/_control/barriers", json={"reference": "E-1", "point": "received"}
    )
    barrier_id = armed.json()["id"]
    sock = await asyncio.to_thread(_hand_over, mail.port, "Order E-1")
    reached = await mail.control.post(
        f"/_control/barriers/{barrier_id}/wait", params={"timeout": 5}
    )
    assert reached.json()["state"] == "holding"
    _vanish(sock)
    await asyncio.sleep(0.2)  # the server sees the connection lost while it holds
    await mail.control.post(f"/_control/barriers/{barrier_id}/release")
    for _ in range(100):
        [attempt] = (await mail.control.get("/_control/attempts")).json()
        if attempt["outcome"] != "in_flight":
            break
        await asyncio.sleep(0.05)
    assert attempt["outcome"] != "in_flight"
    assert await mail.commits() == []
    barrier = (await mail.control.get(f"/_control/barriers/{barrier_id}")).json()
    assert barrier["ended_at"] is not None


async def test_the_case_key_is_found_in_the_body_quoted_printable_splits(mail: MailFake) -> None:
    """The default reference of a mail fake (the key anywhere in the message) reads the body
    decoded: quoted-printable breaks a long line with `=` wherever it must."""
    key = case_key("smtp_receipt_dedup-retry-worker_kill-after_commit-r3")
    upstream = Upstream("smtp", "mail", ReferenceSource("body_regex", KEY_IN_TEXT))
    await mail.control.put("/_control/upstreams", json=upstreams_to_json([upstream]))
    body = f"Dear customer, thank you for your purchase. Your receipt for order {key} follows."
    await asyncio.to_thread(mail.send, "Your receipt", body=body)
    assert [c["reference"] for c in await mail.commits()] == [key]
