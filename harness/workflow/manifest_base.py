"""Internal: What every part of the manifest's models shares: the strict base model, the error that
carries its fix, the HTTP methods. (``harness.workflow.manifest_model`` re-exports them.)"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from harness.errors import ConfigError

HTTP_METHODS = ("DELETE", "GET", "HEAD", "PATCH", "POST", "PUT")


class Problem(ConfigError, ValueError):
    """A check's failure with its fix; ``sub`` names a field below the validated one (the
    model validators check several fields together and still name the one to fix)."""

    def __init__(self, problem: str, sub: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.sub = sub


class StrictModel(BaseModel):
    """Unknown fields are errors; a parsed manifest does not change."""

    model_config = ConfigDict(extra="forbid", frozen=True)
