"""pytest plugin for bench/proxy_overhead.py --matrix: the same run with the stack's outbound
interception off (``StackConfig.intercept=False``), for the wall time without the proxy.

Registered at configure time, after ``harness.plugin`` (an entry point), so its fixture of
the same name overrides the plugin's and gets the plugin's config to change."""

from __future__ import annotations

import dataclasses

import pytest

from harness.stack.stack import StackConfig


class _NoIntercept:
    @pytest.fixture(scope="session")
    def n8n_chaos_config(self, n8n_chaos_config: StackConfig) -> StackConfig:
        return dataclasses.replace(n8n_chaos_config, intercept=False)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_NoIntercept(), "n8n-chaos-bench-no-intercept")
