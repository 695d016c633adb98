"""pytest plugin for the bench scripts that run part of the matrix twice, one StackConfig field
apart (proxy_overhead.py --matrix: ``intercept``; spare_worker.py: ``spare_worker``): the
fields in the environment variable ``N8N_CHAOS_BENCH_CONFIG`` (JSON) replace the plugin's.

Its fixture lives in ``_config_fixture``, registered at configure time: after
``harness.front.plugin`` (an entry point), so it overrides the plugin's fixture of the same name
and gets the plugin's config to change."""

from __future__ import annotations

import pytest

VARIABLE = "N8N_CHAOS_BENCH_CONFIG"


def pytest_configure(config: pytest.Config) -> None:
    import _config_fixture

    config.pluginmanager.register(_config_fixture, "n8n-chaos-bench-config")
