"""The `mail` fake: an SMTP server (aiosmtpd) on its own port, on the provider's event loop.

Each accepted message is a commit (effect "email", or the mail Upstream's `effect`) with the
reference from the Upstream's subject regex, header or `body_regex`, which reads the subject
and the decoded text parts (host "smtp" by convention; the first
Upstream with fake "mail" is used, none configured means no reference). Messages go through
the shared pipeline, so barriers and the fault plan apply: a pre-commit fault (error, rate
limit) answers 451 and commits nothing, commit_then_error commits then answers 451,
commit_then_close/reset commit then drop the connection, commit_then_hang delays the 250.
AUTH PLAIN/LOGIN is offered without TLS and accepts any login (n8n's smtp credential may
carry one); no STARTTLS.
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import secrets
import socket
from typing import Any

from aiosmtpd.smtp import SMTP, AuthResult, Envelope, Session

from ...upstreams import Upstream
from ..connection import DroppedConnection
from ..kinds import Outcome
from ..pipeline import EffectPipeline, EffectResult, json_response
from ..runtime import ProviderRuntime
from ..store import AttemptStart, ObjectRow
from .inbound import UpstreamRequest, reference_of

MAIL_HOST = "smtp"


def _readable(message: email.message.Message) -> str:
    """What a reader sees of a message, for `body_regex`: its subject and its text parts
    decoded (quoted-printable breaks a long line, so a key in the raw body may be split)."""
    texts = [str(message.get("subject", ""))]
    for part in message.walk():
        if part.get_content_maintype() == "text" and not part.is_multipart():
            payload = part.get_payload(decode=True)
            if isinstance(payload, bytes):
                texts.append(payload.decode(part.get_content_charset() or "utf-8", "replace"))
    return "\n".join(texts)


class MailHandler:
    def __init__(self, runtime: ProviderRuntime) -> None:
        self.runtime = runtime
        self.pipeline = EffectPipeline(runtime)
        # Attempts that outlive their session (kept referenced until they end).
        self._orphans: set[asyncio.Task[Any]] = set()

    def upstream(self) -> Upstream:
        configured = (u for u in self.runtime.upstreams.values() if u.fake == "mail")
        return next(configured, None) or Upstream(MAIL_HOST, "mail")

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        received_at = self.runtime.clock()
        upstream = self.upstream()
        content = envelope.original_content or b""
        message = email.message_from_bytes(content, policy=email.policy.default)
        inbound = UpstreamRequest(
            method="DATA",
            path="",
            headers={name.lower(): str(value) for name, value in reversed(message.items())},
            raw_body=_readable(message).encode(),
            params={
                "from": envelope.mail_from,
                "to": list(envelope.rcpt_tos),
                "raw": content.decode("utf-8", "replace"),
            },
            subject=str(message.get("subject", "")),
        )
        start = AttemptStart(
            upstream.effect_kind("email"),
            None,
            reference_of(upstream.reference, inbound),
            inbound.fingerprint(),
            received_at,
        )

        email_id = "em_" + secrets.token_hex(12)

        def effect_result(now: float) -> EffectResult:
            document = {
                "id": email_id,
                "object": "email",
                "from": envelope.mail_from,
                "to": list(envelope.rcpt_tos),
                "subject": inbound.subject,
                "reference": start.reference,
            }
            return EffectResult(
                email_id,
                json_response(200, document),
                commits=True,
                outcome=Outcome.COMMITTED,
                objects=[ObjectRow(upstream.host, "email", email_id, document, now)],
            )

        # aiosmtpd cancels the handler when the client's connection is lost (a killed n8n
        # worker): the attempt still runs to its end, as a held HTTP request does, so a held
        # barrier ends and the attempt is settled instead of staying in flight forever.
        attempt = asyncio.ensure_future(self.pipeline.run(start, effect_result))
        try:
            response = await asyncio.shield(attempt)
        except asyncio.CancelledError:
            self._orphans.add(attempt)
            attempt.add_done_callback(self._orphans.discard)
            raise
        if isinstance(response, DroppedConnection):
            transport: Any = server.transport
            if transport is not None:
                transport.abort() if response.reset else transport.close()
            return "421 4.4.2 connection dropped (injected fault)"
        if response.background is not None:
            # `responded` barrier: the answer goes out as soon as this returns.
            asyncio.get_running_loop().call_soon(asyncio.ensure_future, response.background())
        if response.status_code >= 300:
            return (
                f"451 4.3.0 temporary failure ({response.status_code} from the fake's fault plan)"
            )
        return f"250 2.0.0 OK queued as {email_id}"


def _accept_any_login(
    server: SMTP, session: Session, envelope: Envelope, mechanism: str, auth_data: Any
) -> AuthResult:
    return AuthResult(success=True)


async def start_mail_server(runtime: ProviderRuntime, sock: socket.socket) -> asyncio.Server:
    """Serve SMTP on an already bound socket (127.0.0.1) on the running loop."""
    handler = MailHandler(runtime)

    def protocol() -> SMTP:
        return SMTP(
            handler,
            hostname="n8n-chaos-mail",
            authenticator=_accept_any_login,
            auth_require_tls=False,
        )

    server = await asyncio.get_running_loop().create_server(protocol, sock=sock)
    runtime.smtp_port = sock.getsockname()[1]
    return server
