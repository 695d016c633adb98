"""The fixture ``_config_plugin`` registers (see there)."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
from _config_plugin import VARIABLE

from harness.stack.stack import StackConfig


@pytest.fixture(scope="session")
def n8n_chaos_config(n8n_chaos_config: StackConfig) -> StackConfig:
    return dataclasses.replace(n8n_chaos_config, **json.loads(os.environ.get(VARIABLE, "{}")))
