"""A migrated n8n database per n8n version, made once and copied for every stack.

n8n runs its database migrations on every start; on a fresh database that is most of main's
boot (about 13 s of 22 s here). The template is a stopped Postgres cluster whose ``n8n``
database n8n has migrated once, kept in the install cache::

    templates/n8n-<n8n version>-pg-<postgres version>-v<format>/
        data/        the cluster (owned by the user Postgres runs as)
        password     the superuser's throwaway password, only good until the copy's
                     first connection replaces it with the run's own (rotate_password)
        .complete

It is made before anything secret exists: no owner password, no API key, no credential.
n8n is started on it with a throwaway encryption key in regular mode (no Redis) and stopped
as soon as it is ready. n8n 2.40 then has seeded ``deployment_key`` with the instance id and
its signing and data-encryption keys, wrapped with that throwaway key: those rows are
deleted, so every run's main and workers seed their own with the run's key (n8n seeds them
race-free: insert-or-ignore, then read the winner). The database is then checked to hold
none of those rows (``assert_no_secrets``); every run creates its owner, API key and
credentials with its own encryption key. Made under a file lock, in a staging folder
renamed into place, so two stacks starting at once (pytest -n 2) make it once.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg

from harness.errors import HarnessError, SetupError
from harness.stack.install import POSTGRES_PACKAGE_VERSION, Installation, file_lock
from harness.stack.n8n import N8nProcess, SharedEnv
from harness.stack.ports import HOST, free_port
from harness.stack.postgres import PostgresServer
from harness.stack.readiness import wait_ready
from harness.stack.run import RunContext

# Bump when what goes into the template changes: older ones are then ignored.
TEMPLATE_FORMAT = 2

# Rows that would carry a run's secrets; a template must have none of them.
_SECRET_ROWS = {
    "users with a password": 'SELECT count(*) FROM "user" WHERE password IS NOT NULL',
    "API keys": "SELECT count(*) FROM user_api_keys",
    "credentials": "SELECT count(*) FROM credentials_entity",
    "workflows": "SELECT count(*) FROM workflow_entity",
    "instance id and keys": "SELECT count(*) FROM deployment_key",
}


@dataclass(frozen=True)
class DatabaseTemplate:
    data_dir: Path
    password: str


def template_root(cache_dir: Path, n8n_version: str) -> Path:
    name = f"n8n-{n8n_version}-pg-{POSTGRES_PACKAGE_VERSION}-v{TEMPLATE_FORMAT}"
    return cache_dir / "templates" / name


def cached(inst: Installation) -> DatabaseTemplate | None:
    """The template for this installation if it was made already (no side effects)."""
    if inst.cache_dir is None:
        return None
    root = template_root(inst.cache_dir, inst.n8n_version)
    if not (root / ".complete").exists():
        return None
    return DatabaseTemplate(root / "data", (root / "password").read_text().strip())


def ensure(
    inst: Installation,
    progress: Callable[[str], None] = lambda message: None,
    ready_timeout_s: float = 300.0,
) -> DatabaseTemplate:
    """The template for this installation, made first if missing (once, under a lock)."""
    if inst.cache_dir is None:
        raise SetupError("no install cache to keep the database template in")
    if (found := cached(inst)) is not None:
        return found
    root = template_root(inst.cache_dir, inst.n8n_version)
    root.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(root.parent / f".{root.name}.lock"):
        if (found := cached(inst)) is not None:  # another process made it meanwhile
            return found
        progress(f"migrating a template database for n8n {inst.n8n_version} (once)")
        started = time.monotonic()
        staging = root.parent / f".{root.name}.staging"
        shutil.rmtree(staging, ignore_errors=True)
        try:
            _bake(inst, staging, ready_timeout_s)
            (staging / ".complete").write_text(f"{time.monotonic() - started:.1f}\n")
            staging.rename(root)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        progress(f"template database made in {time.monotonic() - started:.0f} s")
    found = cached(inst)
    assert found is not None
    return found


def for_stack(
    inst: Installation,
    wanted: bool,
    progress: Callable[[str], None],
    ready_timeout_s: float,
) -> tuple[DatabaseTemplate | None, float]:
    """The template a stack copies (made now if missing), and how long making it took.
    A template that cannot be made is not fatal: the stack then migrates a fresh database."""
    if not wanted or inst.cache_dir is None:
        return None, 0.0
    started = time.monotonic()
    was_cached = cached(inst)
    try:
        template = ensure(inst, progress, ready_timeout_s)
    except HarnessError as exc:
        progress(f"no database template, migrating a fresh database: {exc}")
        return None, 0.0
    return template, 0.0 if was_cached else time.monotonic() - started


def _bake(inst: Installation, staging: Path, ready_timeout_s: float) -> None:
    assert inst.cache_dir is not None
    run = RunContext.create(inst.cache_dir / "logs" / "templates", link_latest=False)
    postgres = PostgresServer(inst.postgres_bin_dir, run, free_port(), base_dir=staging)
    main: N8nProcess | None = None
    try:
        postgres.initdb()
        postgres.process.start()
        wait_ready(postgres.readiness(), ready_timeout_s)
        postgres.create_database("n8n")
        shared = SharedEnv(
            node_bin=inst.node_bin,
            n8n_bin=inst.n8n_bin,
            run_id=run.run_id,
            encryption_key=secrets.token_hex(24),  # thrown away: nothing is encrypted yet
            db_password=postgres.password,
            webhook_url=f"http://{HOST}:1/",
            overrides={"EXECUTIONS_MODE": "regular"},  # migrations only; no Redis needed
            compile_cache=inst.compile_cache,  # filled as this main stops
        )
        main = N8nProcess(
            "main", "main", run, shared, free_port(), free_port(), postgres.port, 1, {}
        )
        main.start()
        wait_ready(main.readiness(), ready_timeout_s)
        main.process.stop(grace_s=15.0)
        with psycopg.connect(postgres.dsn("n8n"), autocommit=True) as conn:
            conn.execute("DELETE FROM deployment_key")
        assert_no_secrets(postgres.dsn("n8n"))
        postgres.process.stop(grace_s=30.0)
        if (postgres.data_dir / "postmaster.pid").exists():
            raise SetupError(
                f"the template's Postgres did not shut down cleanly; see {run.run_dir / 'logs'}"
            )
        password = staging / "password"
        password.write_text(postgres.password + "\n")
        password.chmod(0o600)
    except HarnessError as exc:
        raise SetupError(
            f"making the template database failed ({exc}); logs in {run.run_dir / 'logs'}; "
            "start with --fresh-db to migrate a fresh database instead"
        ) from exc
    finally:
        for proc in (main.process if main else None, postgres.process):
            if proc is not None:
                with contextlib.suppress(Exception):
                    proc.stop(grace_s=5.0)
        run.reaper.close()


def assert_no_secrets(dsn: str) -> None:
    """Raise if the database holds a row that only a run with its own secrets may make."""
    with psycopg.connect(dsn) as conn:
        found = {
            what: int(row[0])
            for what, query in _SECRET_ROWS.items()
            if (row := conn.execute(query.encode()).fetchone()) is not None and row[0]
        }
    if found:
        raise SetupError(f"the template database holds secrets: {found}")
