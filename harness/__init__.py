"""n8n-chaos: did each side effect of an n8n workflow happen exactly once, under faults?

The public surface is ``__all__``: the stack and its configuration (what the ``n8n_stack`` and
``n8n_chaos_config`` fixtures yield), the workflows under test and their loader, a case and its
verdict, the plugin fixtures' types, and the errors (``harness.errors``). Modules whose
docstring starts with "Internal:" may change without notice.

Importing ``harness`` stays light: the errors load now, every other name when first used (the
stack pulls in psycopg, the plugin pytest), so ``python -m harness`` and the warm runner's
clients start fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from harness.errors import (
    AttachError,
    CaseAborted,
    ConfigError,
    DockerUnavailable,
    HarnessBug,
    HarnessCaseError,
    HarnessError,
    InstallError,
    PortInUse,
    ServiceError,
    ServiceExited,
    ServiceStartTimeout,
    SetupError,
    ToxiproxyConflict,
    ToxiproxyError,
    ToxiproxyNotFound,
    ToxiproxyUnavailable,
    WindowNotOpened,
)

if TYPE_CHECKING:
    from harness.engine.contract import CaseWorld
    from harness.engine.registry import Registry
    from harness.engine.runner import PhaseObserver
    from harness.front.plugin import ChaosDeployments
    from harness.judge.oracle import Evidence, Judgement, Verdict, judge
    from harness.judge.verdicts import VerdictInfo
    from harness.matrix.cases import Case
    from harness.stack.install import Installation
    from harness.stack.stack import Stack, StackConfig
    from harness.workflow.deployment import Deployment
    from harness.workflow.manifest import WorkflowUnderTest, discover, load_manifest

# Name -> the module it lives in, imported on first use.
_LAZY = {
    "Case": "harness.matrix.cases",
    "CaseWorld": "harness.engine.contract",
    "Registry": "harness.engine.registry",
    "VerdictInfo": "harness.judge.verdicts",
    "ChaosDeployments": "harness.front.plugin",
    "Deployment": "harness.workflow.deployment",
    "Evidence": "harness.judge.oracle",
    "Installation": "harness.stack.install",
    "Judgement": "harness.judge.oracle",
    "PhaseObserver": "harness.engine.runner",
    "Stack": "harness.stack.stack",
    "StackConfig": "harness.stack.stack",
    "Verdict": "harness.judge.oracle",
    "WorkflowUnderTest": "harness.workflow.manifest",
    "discover": "harness.workflow.manifest",
    "judge": "harness.judge.oracle",
    "load_manifest": "harness.workflow.manifest",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AttachError",
    "Case",
    "CaseAborted",
    "CaseWorld",
    "ChaosDeployments",
    "ConfigError",
    "Deployment",
    "DockerUnavailable",
    "Evidence",
    "HarnessBug",
    "HarnessCaseError",
    "HarnessError",
    "InstallError",
    "Installation",
    "Judgement",
    "PhaseObserver",
    "PortInUse",
    "Registry",
    "ServiceError",
    "ServiceExited",
    "ServiceStartTimeout",
    "SetupError",
    "Stack",
    "StackConfig",
    "ToxiproxyConflict",
    "ToxiproxyError",
    "ToxiproxyNotFound",
    "ToxiproxyUnavailable",
    "Verdict",
    "VerdictInfo",
    "WindowNotOpened",
    "WorkflowUnderTest",
    "discover",
    "judge",
    "load_manifest",
]
