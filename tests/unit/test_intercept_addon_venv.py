"""The proxy side of interception checked with the interpreter that runs it: the python of
mitmproxy's own venv (``n8n-chaos install``), not the project's, which has no mitmproxy."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.stack.install import MITMPROXY_VERSION, Installer

ROOT = Path(__file__).resolve().parents[2]
ADDON_TESTS = Path(__file__).with_name("test_intercept_addon.py")


@pytest.fixture(scope="module")
def venv_python() -> Path:
    installer = Installer()
    python = installer.installed_mitmproxy_python()
    if python is None:
        message = (
            f"mitmproxy {MITMPROXY_VERSION}'s venv is not in {installer.cache_dir}: "
            "run `n8n-chaos install`"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must install the parts first: {message}")
        pytest.skip(message)
    return python


def run_isolated(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python args`` with this checkout on its path, and no pytest plugins from entry
    points (the checkout's egg-info, if any, names the harness's own plugin)."""
    return subprocess.run(
        [str(python), *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_addon_tests_pass_under_the_proxy_venv(venv_python: Path) -> None:
    # No conftest: the suite's own wiring imports the project's dependencies.
    pytest_args = ["-q", "--noconftest", "-p", "no:cacheprovider", str(ADDON_TESTS)]
    result = run_isolated(venv_python, "-m", "pytest", *pytest_args)
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0, f"{result.stdout[-4000:]}\n{result.stderr[-2000:]}"
    assert re.search(r"\b\d+ passed\b", summary), summary
    assert "skipped" not in summary, f"the addon tests skipped under {venv_python}: {summary}"


PROXY_FILES = ("server", "addon", "ca", "config", "journal")
PROXY_SIDE = tuple(f"harness.stack.intercept.{name}" for name in PROXY_FILES)


def loaded_modules(python: Path, *names: str) -> set[str]:
    """The modules loaded in a fresh ``python`` after importing ``names``."""
    probe = f"import sys\nfor name in {names!r}: __import__(name)\nprint(*sorted(sys.modules))"
    result = run_isolated(python, "-c", probe)
    assert result.returncode == 0, result.stderr[-3000:]
    return set(result.stdout.split())


def test_the_proxy_side_imports_only_stdlib_mitmproxy_and_itself(venv_python: Path) -> None:
    loaded = loaded_modules(venv_python, *PROXY_SIDE)
    # What mitmproxy itself brings (its own dependencies), for the modules the proxy uses.
    baseline = loaded_modules(
        venv_python, "mitmproxy.tools.dump", "mitmproxy.certs", "mitmproxy.proxy.server_hooks"
    )
    third_party = {m.split(".")[0] for m in loaded - baseline} - set(sys.stdlib_module_names)
    assert third_party <= {"harness"}, f"the proxy side imports {sorted(third_party)}"
    harness_modules = {name for name in loaded if name.split(".")[0] == "harness"}
    # harness/__init__ loads harness.errors eagerly: it imports only the standard library.
    allowed = {"harness", "harness.errors", "harness.stack", "harness.stack.intercept"}
    assert harness_modules <= allowed | set(PROXY_SIDE), sorted(harness_modules)


def test_the_server_module_imports_without_mitmproxy() -> None:
    """mitmproxy is imported only once the proxy runs: ``--help`` works anywhere."""
    probe = (
        "import sys\n"
        "import harness.stack.intercept.server\n"
        "assert not any(m.split('.')[0] == 'mitmproxy' for m in sys.modules), 'mitmproxy'\n"
    )
    result = run_isolated(Path(sys.executable), "-c", probe)
    assert result.returncode == 0, result.stderr[-3000:]


def test_the_proxy_side_type_checks_against_the_venvs_mitmproxy(venv_python: Path) -> None:
    """The project's mypy run leaves addon and server out (no mitmproxy there): strict mypy
    checks them here, with mitmproxy's own annotations (it ships py.typed) from the venv."""
    pytest.importorskip("mypy", reason="mypy is a dev dependency: pip install -e '.[dev]'")
    files = [str(ROOT / "harness/stack/intercept" / f"{name}.py") for name in PROXY_FILES]
    result = subprocess.run(
        [
            *(sys.executable, "-m", "mypy", "--python-executable", str(venv_python)),
            *("--follow-imports", "silent", *files),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_the_ca_is_made_before_the_proxy_starts(venv_python: Path, tmp_path: Path) -> None:
    """What the compose backend does before creating its containers (they mount the
    certificate): the CA exists, its certificate readable by a container's other user,
    its key by this user only; a second call keeps it."""
    from harness.stack.intercept.launcher import InterceptProxy
    from harness.stack.run import RunContext

    (tmp_path / "logs").mkdir()
    run = RunContext(run_id="r", run_dir=tmp_path, reaper=None)  # type: ignore[arg-type]
    proxy = InterceptProxy.for_run(run, {"main": (41001, None)}, venv_python)
    proxy.make_ca()
    assert proxy.ca_cert.read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert proxy.ca_cert.stat().st_mode & 0o777 == 0o644
    key = proxy.config.confdir / "mitmproxy-ca.pem"
    assert key.stat().st_mode & 0o777 == 0o600
    # ECDSA: mitmproxy gives every leaf the CA's key, and n8n makes a handshake per request.
    assert key.read_text().startswith("-----BEGIN EC PRIVATE KEY-----")
    made = proxy.ca_cert.read_bytes()
    proxy.make_ca()
    assert proxy.ca_cert.read_bytes() == made
    assert proxy.process.pid is None  # the proxy itself was not started
