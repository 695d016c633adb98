"""The fixture ``_no_intercept_plugin`` registers (see there)."""

from __future__ import annotations

import dataclasses

import pytest

from harness.stack.stack import StackConfig


@pytest.fixture(scope="session")
def n8n_chaos_config(n8n_chaos_config: StackConfig) -> StackConfig:
    return dataclasses.replace(n8n_chaos_config, intercept=False)
