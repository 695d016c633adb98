"""n8n processes in queue mode: main (``n8n start``), workers, an optional webhook processor.

The settings that make crash cases fast but real are in ``FAST_CRASH_SETTINGS``; n8n's shipped
lock, renew and stall values in ``DEFAULT_TIMING_SETTINGS`` (``TIMING_PROFILES``, chosen by
``StackConfig.n8n_timings``); any of them, and any other n8n variable, can be overridden
through ``StackConfig.n8n_env``.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal

from harness import loopback
from harness.errors import ConfigError
from harness.stack.ports import HOST
from harness.stack.process import ManagedProcess
from harness.stack.readiness import Readiness, wait_ready
from harness.stack.run import RunContext

Role = Literal["main", "worker", "webhook"]
# A worker's word that it took up, or ended, an execution's queue job.
JOB_LINE = re.compile(
    r"^(\S*).*Worker (started|finished) execution (\d+) \(job (\d+)\)", re.MULTILINE
)

# Every internet-calling feature off (the n8n team's own test stacks do the same).
OFFLINE_SETTINGS = {
    "N8N_DIAGNOSTICS_ENABLED": "false",
    "N8N_VERSION_NOTIFICATIONS_ENABLED": "false",
    "N8N_VERSION_NOTIFICATIONS_WHATS_NEW_ENABLED": "false",
    "N8N_TEMPLATES_ENABLED": "false",
    "N8N_DYNAMIC_BANNERS_ENABLED": "false",
    "N8N_HIRING_BANNER_ENABLED": "false",
    "N8N_PERSONALIZATION_ENABLED": "false",
    "N8N_LICENSE_AUTO_RENEW_ENABLED": "false",
    "N8N_COMMUNITY_PACKAGES_ENABLED": "false",
    "N8N_AI_ENABLED": "false",
}

# Defaults are 60 s / 10 s / 30 s: a killed worker's job would stall for minutes. With these
# a surviving worker's stall sweep fails the job in about 5-15 s, the same code path.
FAST_CRASH_SETTINGS = {
    "QUEUE_WORKER_LOCK_DURATION": "5000",
    "QUEUE_WORKER_LOCK_RENEW_TIME": "2000",
    "QUEUE_WORKER_STALLED_INTERVAL": "5000",
    "N8N_GRACEFUL_SHUTDOWN_TIMEOUT": "5",
}
# n8n's own shipped values (scaling-mode.config.ts, the graceful stop of base-command.ts):
# what a team runs unless it tunes them. Set explicitly, so the profile wins over any default.
DEFAULT_TIMING_SETTINGS = {
    "QUEUE_WORKER_LOCK_DURATION": "60000",
    "QUEUE_WORKER_LOCK_RENEW_TIME": "10000",
    "QUEUE_WORKER_STALLED_INTERVAL": "30000",
    "N8N_GRACEFUL_SHUTDOWN_TIMEOUT": "30",
}
# ``--n8n-timings``: fast (the matrix's default) or n8n's shipped values.
TIMING_PROFILES = {"fast": FAST_CRASH_SETTINGS, "default": DEFAULT_TIMING_SETTINGS}


def check_timings(profile: str) -> str:
    if profile not in TIMING_PROFILES:
        raise ConfigError(
            f"--n8n-timings {profile!r} is not a timing profile; give one of "
            f"{', '.join(sorted(TIMING_PROFILES))} (fast: the matrix's default; default: "
            "n8n's shipped lock, renew and stall values)"
        )
    return profile


# Modules that call n8n's servers on their own (the MCP registry refresh fetches
# api.n8n.io at start). Only names the installed version knows may be listed, else n8n exits.
_MODULES_THAT_CALL_HOME = ("mcp-registry",)
# Modules off the execution path: the editor's and the admin's features (AI builder, MCP
# server, chat, SSO, source control, favourites, insights' dashboards, the cluster's member
# list). n8n imports every enabled module in every process, a worker too: with these off a
# worker boots on 4.2 CPU s against 4.6 (bench/boot_cpu.py --compare modules). Kept on: what
# a workflow's run can touch (data tables, credentials and their keys, external secrets,
# redaction, log streaming, node-type policies, community nodes).
_MODULES_OFF_THE_EXECUTION_PATH = (
    "instance-ai",
    "mcp",
    "chat-hub",
    "workflow-builder",
    "breaking-changes",
    "insights",
    "favorites",
    "quick-connect",
    "instance-version-history",
    "instance-registry",
    "otel",
    "oauth-server",
    "token-exchange",
    "sso-oidc",
    "sso-saml",
    "ldap",
    "provisioning",
    "source-control",
    "workflow-reviews",
)
_MODULE_LIST = "@n8n/backend-common/dist/modules/modules.config.js"


def disabled_modules_env(n8n_bin: Path) -> dict[str, str]:
    """N8N_DISABLED_MODULES for the installed n8n: the call-home modules and those off the
    execution path that it has."""
    node_modules = n8n_bin.parent.parent.parent
    try:
        known = set(re.findall(r"'([a-z0-9-]+)'", (node_modules / _MODULE_LIST).read_text()))
    except OSError:
        return {}
    wanted = _MODULES_THAT_CALL_HOME + _MODULES_OFF_THE_EXECUTION_PATH
    disabled = [m for m in wanted if m in known]
    return {"N8N_DISABLED_MODULES": ",".join(disabled)} if disabled else {}


def upstream_env_name(name: str) -> str:
    """The variable a workflow reads an upstream's address from (``$env.<name>``)."""
    return "N8N_CHAOS_UPSTREAM_" + name.upper().replace("-", "_")


@dataclass(frozen=True)
class SharedEnv:
    """What every n8n process of one stack has in common."""

    node_bin: Path
    n8n_bin: Path
    run_id: str
    encryption_key: str
    db_password: str
    webhook_url: str
    overrides: dict[str, str]
    # Node's compile cache (V8 code for n8n's modules), shared by every run of this install:
    # a worker boots on 14 % less CPU with it (3.1 s against 3.6 s, bench/README.md). A
    # process writes it as it exits cleanly: the template's main fills it at install time.
    compile_cache: Path | None = None

    def for_process(
        self, user_folder: Path, postgres_port: int, redis_port: int, extra: dict[str, str]
    ) -> dict[str, str]:
        env = {
            "PATH": f"{self.node_bin.parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(user_folder),
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",  # plain logs, readable in the run directory
            "GENERIC_TIMEZONE": "UTC",
            "EXECUTIONS_MODE": "queue",
            "DB_TYPE": "postgresdb",
            "DB_POSTGRESDB_HOST": HOST,
            "DB_POSTGRESDB_PORT": str(postgres_port),
            "DB_POSTGRESDB_DATABASE": "n8n",
            "DB_POSTGRESDB_USER": "postgres",
            "DB_POSTGRESDB_PASSWORD": self.db_password,
            "DB_POSTGRESDB_POOL_SIZE": "5",
            "QUEUE_BULL_REDIS_HOST": HOST,
            "QUEUE_BULL_REDIS_PORT": str(redis_port),
            # Two runs on one Redis would otherwise share a queue.
            "QUEUE_BULL_PREFIX": f"bull-{self.run_id}",
            "N8N_ENCRYPTION_KEY": self.encryption_key,
            "N8N_USER_FOLDER": str(user_folder),
            "N8N_WEBHOOK_URL": self.webhook_url,
            "N8N_SECURE_COOKIE": "false",
            "N8N_LOG_LEVEL": "debug",
            # Off: nothing here reads /metrics, and with it on every n8n process wakes each
            # 10 ms (prom-client's event-loop-delay monitor): an idle stack took 1.65-2.01 CPU s
            # a minute with it, 1.18-1.19 without (bench/idle_cpu.py).
            "N8N_METRICS": "false",
            # Workflows read their upstream's proxy address from $env (one proxy per worker).
            "N8N_BLOCK_ENV_ACCESS_IN_NODE": "false",
            **OFFLINE_SETTINGS,
            **disabled_modules_env(self.n8n_bin),
            **FAST_CRASH_SETTINGS,
            **({"NODE_COMPILE_CACHE": str(self.compile_cache)} if self.compile_cache else {}),
            **extra,
            **self.overrides,
        }
        return env


@dataclass
class JobLog:
    """The jobs a worker's log names, read incrementally: a crash case polls them while it
    waits, and a log grows to megabytes. A start appends to the log, so what was read stays
    read; a spare taking the worker's place brings another log, read from its start."""

    _path: Path | None = None
    _read: int = 0
    _jobs: dict[str, dict[int, tuple[str, bool]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def jobs_of(self, path: Path, execution_id: str) -> dict[int, tuple[str, bool]]:
        with self._lock:
            self._read_new(path)
            return dict(self._jobs.get(execution_id, {}))

    def running(self, path: Path) -> set[str]:
        """The executions with a job this worker took up and has not finished."""
        with self._lock:
            self._read_new(path)
            return {e for e, jobs in self._jobs.items() if not all(f for _, f in jobs.values())}

    def _read_new(self, path: Path) -> None:
        if path != self._path:
            self._path, self._read, self._jobs = path, 0, {}
        try:
            with path.open("rb") as log:
                log.seek(self._read)
                fresh = log.read()
        except OSError:
            return
        whole = fresh.rfind(b"\n") + 1  # a line still being written is read next time
        self._read += whole
        for at, what, execution, job in JOB_LINE.findall(fresh[:whole].decode(errors="replace")):
            jobs = self._jobs.setdefault(execution, {})
            started_at, finished = jobs.get(int(job), (at, False))
            jobs[int(job)] = (
                at if what == "started" else started_at,
                finished or what == "finished",
            )


# The log lines by which an n8n process says it lost, then regained, its Redis link.
REDIS_LOST, REDIS_RECOVERED = "Lost Redis connection", "Recovered Redis connection"
RECONNECT_DEADLINE_S = 60.0


def await_reconnection(
    processes: Iterable[N8nProcess], marks: Mapping[str, int], revived: Iterable[str] = ()
) -> None:
    """Return once every process named in ``marks`` (log sizes) that logged its Redis link
    lost since its mark logged it recovered; a deadline that expires raises. A process that
    ``revived`` names (``Stack.revive``'s "<name> restarted"/"<name> resumed") is not waited
    for: a restarted one's lost link was its dead predecessor's."""
    skipped = {said.partition(" ")[0] for said in revived}

    def reconnected(proc: N8nProcess) -> bool:
        since = proc.process.log_since(marks.get(proc.name, 0))
        lost = since.rfind(REDIS_LOST)
        return lost < 0 or since.find(REDIS_RECOVERED, lost) >= 0

    for proc in processes:
        if proc.name not in marks or proc.name in skipped:
            continue
        wait_ready(
            Readiness(f"{proc.name} to reconnect", partial(reconnected, proc), proc.process),
            RECONNECT_DEADLINE_S,
        )


class N8nProcess:
    """One n8n process with the handles a fault needs: pid, kill, pause, resume, restart."""

    def __init__(
        self,
        name: str,
        role: Role,
        run: RunContext,
        shared: SharedEnv,
        http_port: int,
        broker_port: int,
        postgres_port: int,
        redis_port: int,
        extra_env: dict[str, str],
    ) -> None:
        self.name = name
        self.role = role
        self.http_port = http_port
        self.user_folder = run.run_dir / "n8n" / name
        self.user_folder.mkdir(parents=True, exist_ok=True)
        role_env = {
            "main": {"N8N_PORT": str(http_port), "N8N_LISTEN_ADDRESS": HOST},
            "webhook": {"N8N_PORT": str(http_port), "N8N_LISTEN_ADDRESS": HOST},
            "worker": {
                "QUEUE_HEALTH_CHECK_ACTIVE": "true",
                "QUEUE_HEALTH_CHECK_PORT": str(http_port),
                "N8N_WORKER_SERVER_ADDRESS": HOST,
            },
        }[role]
        env = shared.for_process(
            self.user_folder,
            postgres_port,
            redis_port,
            {"N8N_RUNNERS_BROKER_PORT": str(broker_port), **role_env, **extra_env},
        )
        command = {
            "main": ["start"],
            "worker": ["worker", "--concurrency=5"],
            "webhook": ["webhook"],
        }[role]
        self.job_log = JobLog()
        # cwd is the user folder: n8n loads a .env from its working directory.
        self.process: ManagedProcess = run.process(
            name,
            [str(shared.node_bin), str(shared.n8n_bin), *command],
            env,
            cwd=self.user_folder,
        )

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.http_port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid

    @property
    def readiness_url(self) -> str:
        return f"{self.base_url}/healthz/readiness"

    def readiness(self) -> Readiness:
        return Readiness(self.name, partial(loopback.answers_ok, self.readiness_url), self.process)

    def start(self) -> None:
        self.process.start()

    def kill(self) -> None:
        self.process.kill()

    def pause(self) -> None:
        self.process.pause()

    def resume(self) -> None:
        self.process.resume()

    def stop(self) -> None:
        self.process.stop()

    def jobs_of(self, execution_id: str) -> dict[int, tuple[str, bool]]:
        """The queue jobs this (worker) process picked up for the execution: job id -> (the
        log's time of its start, finished?), from "Worker started/finished execution N (job
        J)". An execution has several jobs when it was resumed (Wait node), and a stalled job
        is picked up again by another worker."""
        return self.job_log.jobs_of(self.process.log_path, execution_id)

    def running_executions(self) -> set[str]:
        """The executions this (worker) process is running now, by its log."""
        return self.job_log.running(self.process.log_path)

    def restart(self, ready_timeout_s: float = 120.0) -> float:
        """Stop (or reap a killed process), start again, wait ready; returns seconds to ready."""
        self.process.stop()
        self.process.start()
        return wait_ready(self.readiness(), ready_timeout_s)
