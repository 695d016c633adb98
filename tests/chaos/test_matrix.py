"""The crash matrix on the bundled workflows (or --chaos-workflows DIR): one test per case,
e.g. ``test_exactly_once[payment_idempotent-worker_kill-after_commit]``."""

from harness.front.suite import test_exactly_once

__all__ = ["test_exactly_once"]
