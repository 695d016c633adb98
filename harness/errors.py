"""One exception tree for the harness, grouped by cause (the httpx model).

    HarnessError
    ├── ConfigError            bad input from the user: flags, manifests, workflow JSON
    ├── InstallError           a part is missing or failed to install (names the fix)
    ├── ServiceError           a process of the stack
    │   ├── PortInUse          a port we were told to use is taken
    │   ├── ServiceExited      the process died while we waited for it
    │   └── ServiceStartTimeout  not ready before the deadline
    ├── SetupError             n8n answered, but headless setup (owner, key, workflow) failed
    └── WindowNotOpened        a fault found no target: its crash point's window never opened

Every message says what went wrong and what to do about it. Errors of third-party
libraries are wrapped with ``raise X(...) from exc`` where the harness calls them.
"""

from __future__ import annotations


class HarnessError(Exception):
    """Root of every error the harness raises on purpose."""


class ConfigError(HarnessError):
    """The user's input (options, manifest, workflow JSON) is invalid."""


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


class WindowNotOpened(HarnessError):
    """A fault found nothing to strike (no worker ran the case's execution): the case's
    window never opened. Not a harness failure: the case is judged on what happened."""
