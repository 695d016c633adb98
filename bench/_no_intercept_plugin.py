"""pytest plugin for bench/proxy_overhead.py --matrix: the same run with the stack's outbound
interception off (``StackConfig.intercept=False``), for the wall time without the proxy.

Its fixture lives in ``_no_intercept_fixture``, registered at configure time: after
``harness.front.plugin`` (an entry point), so it overrides the plugin's fixture of the same name
and gets the plugin's config to change."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    import _no_intercept_fixture

    config.pluginmanager.register(_no_intercept_fixture, "n8n-chaos-bench-no-intercept")
