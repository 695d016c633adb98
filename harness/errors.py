"""One exception tree for the harness, grouped by cause (the httpx model).

    HarnessError
    ├── ConfigError            bad input from the user: flags, manifests, workflow JSON
    │   ├── AttachError        the warm stack of `up` cannot be used: gone, busy, shaped differently
    │   └── DockerUnavailable  --backend compose, but the engine or compose v2 is missing
    ├── InstallError           a part is missing or failed to install (names the fix)
    ├── ServiceError           a process of the stack
    │   ├── PortInUse          a port we were told to use is taken
    │   ├── ServiceExited      the process died while we waited for it
    │   └── ServiceStartTimeout  not ready before the deadline
    ├── SetupError             n8n answered, but headless setup (owner, key, workflow) failed
    ├── ToxiproxyError         a Toxiproxy API call failed (.status, .message, .method, .path)
    │   ├── ToxiproxyUnavailable  unreachable, or 503 on every attempt
    │   ├── ToxiproxyNotFound  404: no such proxy or toxic
    │   └── ToxiproxyConflict  409: a proxy or toxic with that name already exists
    ├── CaseAborted            a case could not be driven to its end (its evidence is on disk)
    ├── HarnessCaseError       a case could not prove its fault landed: broken, never a pass
    ├── HarnessBug             the harness broke one of its own rules (report it)
    └── WindowNotOpened        a fault found no target: its crash point's window never opened

``harness.workflow.manifest_model.Problem`` is a ``ConfigError`` that is also a ``ValueError``:
pydantic turns a validator's ``ValueError`` into a validation error, which the manifest loader
reports as a ``ConfigError``.

Every message says what went wrong and what to do about it. Errors of third-party
libraries are wrapped with ``raise X(...) from exc`` where the harness calls them.
"""

from __future__ import annotations


class HarnessError(Exception):
    """Root of every error the harness raises on purpose."""


class ConfigError(HarnessError):
    """The user's input (options, manifest, workflow JSON) is invalid."""


class AttachError(ConfigError):
    """The warm stack cannot be used: gone, busy, or shaped differently."""


class DockerUnavailable(ConfigError):
    """The compose backend was asked for but the engine or compose v2 is missing."""


class InstallError(HarnessError):
    """A real part (n8n, Node, Postgres, Redis, Toxiproxy) is missing or could not be installed."""


class SetupError(HarnessError):
    """n8n is up but the headless setup (owner, API key, credentials, workflows) failed."""


class ServiceError(HarnessError):
    """A process of the stack misbehaved."""

    def __init__(self, service: str, message: str, log_tail: str = "") -> None:
        self.service = service
        self.log_tail = log_tail
        text = f"{service}: {message}"
        if log_tail:
            text += f"\n--- last lines of the {service} log ---\n{log_tail}"
        super().__init__(text)


class PortInUse(ServiceError):
    """A fixed port asked for is already bound by someone else."""


class ServiceExited(ServiceError):
    """The process ended while it should be running."""


class ServiceStartTimeout(ServiceError):
    """The process did not become ready before its deadline."""


class ToxiproxyError(HarnessError):
    """A Toxiproxy API call failed."""

    def __init__(
        self, message: str, *, status: int | None = None, method: str = "", path: str = ""
    ) -> None:
        self.message = message
        self.status = status
        self.method = method
        self.path = path
        where = f"{method} {path}: " if method else ""
        code = f"HTTP {status}: " if status is not None else ""
        super().__init__(f"{where}{code}{message}")


class ToxiproxyUnavailable(ToxiproxyError):
    """The server could not be reached, or kept answering 503."""


class ToxiproxyNotFound(ToxiproxyError):
    """HTTP 404: the proxy or toxic does not exist."""


class ToxiproxyConflict(ToxiproxyError):
    """HTTP 409: a proxy or toxic with that name already exists."""


class CaseAborted(HarnessError):
    """The case could not be driven to its end; its evidence is on disk all the same."""


class HarnessCaseError(HarnessError):
    """The case could not prove its fault landed: reported as broken, never as a pass."""


class HarnessBug(HarnessError):
    """The harness broke one of its own rules: a bug in the harness, not in the user's input."""


class WindowNotOpened(HarnessError):
    """A fault found nothing to strike (no worker ran the case's execution): the case's
    window never opened. Not a harness failure: the case is judged on what happened."""
