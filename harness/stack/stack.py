"""The whole queue-mode stack of one run, brought up from nothing and torn down fully.

Topology (every arrow that a fault may cut is a Toxiproxy proxy)::

    client --client_main--> main ----main_postgres/main_redis----> Postgres / Redis
    client --client_webhook--> webhook processor (optional)
    worker i --worker{i}_postgres / worker{i}_redis--> Postgres / Redis
    worker i --worker{i}_<upstream>--> each upstream the caller names (e.g. the provider)
    workflow ledger credential --ledger_postgres--> Postgres, database "ledger"

Workflows reach an upstream through ``{{ $env.N8N_CHAOS_UPSTREAM_<NAME> }}``: each worker's
variable holds the address of its own proxy, so a fault can target one worker's link.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from harness.errors import ConfigError, HarnessError
from harness.stack import n8n_db
from harness.stack.deploy import DeployedWorkflow, deploy, write_variables
from harness.stack.install import DEFAULT_N8N_VERSION, Installation
from harness.stack.intercept.launcher import InterceptProxy
from harness.stack.n8n import (
    TIMING_PROFILES,
    N8nProcess,
    Role,
    SharedEnv,
    await_reconnection,
    check_timings,
    upstream_env_name,
)
from harness.stack.n8n_api import N8nApi, Owner, bootstrap_owner
from harness.stack.ports import HOST, collect_ports, ensure_free, free_port, release_ports
from harness.stack.postgres import PostgresServer
from harness.stack.process import ManagedProcess
from harness.stack.provider import ProviderServer, ProviderSettings
from harness.stack.readiness import Service, wait_all_ready, wait_ready
from harness.stack.redis import RedisServer
from harness.stack.run import RunContext
from harness.stack.spare import PARK_TOXIC, park, unpark
from harness.stack.template import DatabaseTemplate
from harness.stack.template import for_stack as template_for_stack
from harness.stack.toxiproxy import Proxy, ToxiproxyClient, ToxiproxyUnavailable
from harness.stack.toxiproxy_server import ToxiproxyServer

if TYPE_CHECKING:
    from harness.stack.docker.project import ComposeProject

LEDGER_DATABASE = "ledger"
PROVIDER_UPSTREAM = "provider"
LEDGER_CREDENTIAL_NAME = "n8n-chaos ledger"

Progress = Callable[[str], None]


def _quiet(message: str) -> None:
    del message


@dataclass(frozen=True)
class StackConfig:
    """Everything that shapes a stack; each field is also a CLI flag and a pytest option."""

    workers: int = 2
    webhook_processor: bool = False
    n8n_version: str = DEFAULT_N8N_VERSION
    # name -> "host:port" of an HTTP upstream the workflows call (proxied per worker).
    upstreams: Mapping[str, str] = field(default_factory=dict)
    # Extra or overriding n8n environment variables, e.g. QUEUE_WORKER_LOCK_DURATION, and
    # the ones the workflows read ($env.NAME, from their manifests' ``env``).
    n8n_env: Mapping[str, str] = field(default_factory=dict)
    # n8n's lock, renew and stall settings: "fast" (FAST_CRASH_SETTINGS) or n8n's "default"
    # (harness.stack.n8n.TIMING_PROFILES); n8n_env still overrides single values.
    n8n_timings: str = "fast"
    # n8n Variables the workflows read ($vars.NAME), written before any execution.
    variables: Mapping[str, str] = field(default_factory=dict)
    main_port: int | None = None
    ready_timeout_s: float = 180.0
    runs_root: Path | None = None
    # This run's directory exactly (e.g. <invocation>/gw0 under pytest-xdist); by default
    # <runs_root>/<run id>.
    run_dir: Path | None = None
    toxiproxy_seed: int = 0
    # The fake payment provider, started as part of the stack and proxied as upstream
    # "provider"; None leaves it out.
    provider: ProviderSettings | None = field(default_factory=ProviderSettings)
    # Copy n8n's database from a migrated template (made once per n8n version, in the
    # cache) instead of migrating a fresh one; False migrates a fresh database (--fresh-db).
    db_template: bool = True
    # "native": child processes; "compose": containers (harness.stack.docker, compose/).
    backend: Literal["native", "compose"] = "native"
    # The compose backend's n8n image (a user's own); None: the locally built one.
    n8n_image: str | None = None
    # Every n8n process sends its outbound HTTP(S) through the run's intercepting proxy
    # (harness.stack.intercept: a process on the host with either backend).
    intercept: bool = True
    # One more worker booted ahead, its Redis link parked, to take a killed worker's place
    # (harness.stack.spare); native only, and not for a stack others attach to.
    spare_worker: bool = False
    # n8n's editor in main: on for a stack a person opens (`up`). Off, main skips writing the
    # editor's assets and node types at every boot: it boots on about 2.3 CPU s less (4.9
    # against 7.2, bench/boot_cpu.py --role main --compare editor); the APIs are the same.
    editor: bool = False

    def validate(self) -> None:
        if self.workers < 1:
            raise ConfigError(f"--workers must be at least 1, got {self.workers}")
        if self.backend not in ("native", "compose"):
            raise ConfigError(f"--backend must be native or compose, got {self.backend!r}")
        check_timings(self.n8n_timings)
        if self.n8n_image and self.backend != "compose":
            raise ConfigError("--n8n-image needs --backend compose (native runs n8n from npm)")
        if self.spare_worker and self.backend != "native":
            raise ConfigError("a spare worker needs the native backend")
        if self.provider is not None and PROVIDER_UPSTREAM in self.upstreams:
            raise ConfigError(
                f"upstream name {PROVIDER_UPSTREAM!r} is taken by the bundled provider; "
                "rename yours or leave the provider out"
            )
        for name, address in self.upstreams.items():
            host, _, port = address.rpartition(":")
            if not host or not port.isdigit():
                raise ConfigError(f"upstream {name!r}: {address!r} is not HOST:PORT")


@dataclass
class Stack:
    """A running stack: typed handles on every part. Create it with ``Stack.start``."""

    config: StackConfig
    run: RunContext
    postgres: PostgresServer
    redis: RedisServer
    toxiproxy_server: ToxiproxyServer
    toxiproxy: ToxiproxyClient
    provider: ProviderServer | None
    links: dict[str, str]  # proxy name -> upstream HOST:PORT
    listen_ports: dict[str, int]  # proxy name -> port it listens on
    proxies: dict[str, Proxy]  # filled once Toxiproxy runs
    main: N8nProcess
    workers: list[N8nProcess]
    webhook: N8nProcess | None
    # The worker booted ahead with its Redis link parked (harness.stack.spare); not among
    # n8n_processes: no case and no fault touches it until it takes a worker's place.
    spare: N8nProcess | None = None
    owner: Owner | None = None
    api: N8nApi | None = None
    ledger_credential_id: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    # Ports reserved for this stack (harness.stack.ports), released when it stops.
    reserved_ports: list[int] = field(default_factory=list)
    # The compose project of a --backend compose stack (its parts are containers).
    containers: ComposeProject | None = None
    # The intercepting proxy of the n8n processes' outbound HTTP(S) (None: not intercepted).
    intercept: InterceptProxy | None = None
    # What harness.workflow.deployment put on this stack, by workflow name, file digest and webhook
    # routes: deployed once per stack (a second copy would claim the same webhook path).
    under_test: dict[tuple[str, str, tuple[tuple[str, str], ...]], Any] = field(
        default_factory=dict
    )

    # -- addresses --------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """n8n main as a client reaches it (through the client_main proxy)."""
        return f"http://{HOST}:{self.listen_ports['client_main']}"

    @property
    def webhook_base_url(self) -> str:
        """Where production webhooks are delivered (the webhook processor if there is one)."""
        name = "client_webhook" if self.webhook is not None else "client_main"
        return f"http://{HOST}:{self.listen_ports[name]}/webhook"

    @property
    def postgres_dsn(self) -> str:
        return self.postgres.dsn("n8n")

    @property
    def ledger_dsn(self) -> str:
        return self.postgres.dsn(LEDGER_DATABASE)

    @property
    def redis_url(self) -> str:
        return self.redis.url()

    @property
    def n8n_processes(self) -> list[N8nProcess]:
        return [self.main, *self.workers, *([self.webhook] if self.webhook else [])]

    @property
    def processes(self) -> list[ManagedProcess]:
        """Every process of the stack, in start order."""
        return self._backing_processes() + self._n8n_and_spare_processes()

    def _backing_processes(self) -> list[ManagedProcess]:
        """What n8n uses (database, Redis, links, provider, proxy), in start order."""
        backing = [self.postgres.process, self.redis.process, self.toxiproxy_server.process]
        if self.provider is not None:
            backing.append(self.provider.process)
        if self.intercept is not None:
            backing.append(self.intercept.process)
        return backing

    def _n8n_and_spare_processes(self) -> list[ManagedProcess]:
        spare = [self.spare.process] if self.spare else []
        return [n.process for n in self.n8n_processes] + spare

    def link(self, process: N8nProcess, upstream: str) -> Proxy:
        """The process's own proxy to ``upstream`` (e.g. "redis", "provider")."""
        return self.proxies[f"{process.name}_{upstream}"]

    def upstream_proxies(self, upstream: str) -> list[Proxy]:
        """Every worker's proxy to the named upstream (e.g. "provider")."""
        return [self.link(w, upstream) for w in self.workers]

    def require_provider(self) -> ProviderServer:
        if self.provider is None:
            raise ConfigError("this needs the fake provider; start the stack with it")
        return self.provider

    def log_marks(self) -> dict[str, int]:
        """Where each n8n process's log stands now (for ``revive(reconnecting=...)``)."""
        return {p.name: p.process.log_size() for p in self.n8n_processes}

    def revive(self, reconnecting: Mapping[str, int] | None = None) -> list[str]:
        """Resume paused processes and restart dead n8n processes; names them. The dead boot
        side by side (as at bring-up: the database is migrated), ready within one deadline.
        With ``reconnecting`` (``log_marks()`` taken before Redis links were cut), returns
        once every process that lost its Redis link since then says it is back (one revived
        here is not waited for: a restarted one's lost link was its dead predecessor's)."""
        revived = []
        for proc in self.n8n_processes:
            if proc.process.paused:
                proc.resume()
                revived.append(f"{proc.name} resumed")
        dead = [proc for proc in self.n8n_processes if not proc.process.running]
        for proc in dead:
            proc.process.stop()  # reaps it
            proc.start()
        wait_all_ready([proc.readiness() for proc in dead], self.config.ready_timeout_s)
        revived += [f"{proc.name} restarted" for proc in dead]
        if self.spare is not None and not self.spare.process.running:
            self.boot_spare()
        if reconnecting:
            await_reconnection(self.n8n_processes, reconnecting, revived)
        return revived

    def reset_links(self) -> None:
        """Every proxy enabled, every toxic gone: the spare's parking stays. A Toxiproxy that
        no longer answers is started again (``restart_toxiproxy``)."""
        try:
            self.toxiproxy.reset(
                keep=(f"{self.spare.name}_redis", PARK_TOXIC) if self.spare else None
            )
        except ToxiproxyUnavailable:
            self.restart_toxiproxy()

    def restart_toxiproxy(self) -> None:
        """A new Toxiproxy with the same proxies on the same listen ports, none of them toxic.

        Its API can wedge for good (a latency toxic's removal racing its connections' close,
        Shopify/toxiproxy#558: every later call 503), which would fail every later case of the
        stack. Every process loses its links at once and reconnects, as after a cut; the
        spare's Redis link is parked before it is enabled, so the spare never takes a job."""
        marks = self.log_marks()
        self.toxiproxy_server.process.restart()
        wait_ready(self.toxiproxy_server.readiness(), self.config.ready_timeout_s)
        self._create_proxies(parked=f"{self.spare.name}_redis" if self.spare else None)
        self.revive(marks)  # a process that gave Redis up for good exits (n8n's threshold)
        # Their Postgres links broke too: n8n answers 503 until its pool is back.
        wait_all_ready([p.readiness() for p in self.n8n_processes], self.config.ready_timeout_s)

    def _create_proxies(self, parked: str | None = None) -> None:
        """Every link's proxy on its own listen port; ``parked`` gets the spare's parking
        before it is enabled."""
        for name, upstream in self.links.items():
            listen = f"{HOST}:{self.listen_ports[name]}"
            proxy = self.toxiproxy.create_proxy(name, upstream, listen, enabled=name != parked)
            self.proxies[name] = proxy
            if name == parked:
                park(proxy)
                proxy.enable()

    def boot_spare(self) -> None:
        """(Re)start the spare with its Redis link parked; returns without waiting."""
        assert self.spare is not None
        self.spare.process.stop()  # reaps a killed one
        park(self.link(self.spare, "redis"))
        self.spare.start()

    def replace_worker(self, dead: N8nProcess) -> str:
        """Put the spare in the dead worker's place (the dead one boots as the next spare),
        or restart the dead one when there is no live spare; says which, and how long."""
        spare = self.spare
        if spare is None or not spare.process.running:
            took = dead.restart(self.config.ready_timeout_s)
            return f"{dead.name} restarted, ready in {took:.1f} s"
        unpark(self.link(spare, "redis"))
        took = wait_ready(spare.readiness(), self.config.ready_timeout_s)
        self.workers[self.workers.index(dead)] = spare
        self.spare = dead
        self.boot_spare()
        return f"spare {spare.name} took {dead.name}'s place, ready in {took:.1f} s"

    def worker_running(self, execution_id: str) -> int | None:
        """Which worker runs the execution now: the one whose newest unfinished queue job for
        it started last (the workers' logs), else the one that started its last job. A resumed
        execution (Wait node) has a job per part, and the parts can run on different workers."""
        newest: dict[int, tuple[bool, str, int]] = {}  # worker -> (unfinished?, started, job)
        for i, worker in enumerate(self.workers):
            for job, (started_at, finished) in worker.jobs_of(execution_id).items():
                newest[i] = max(newest.get(i, (False, "", 0)), (not finished, started_at, job))
        return max(newest, key=newest.__getitem__) if newest else None

    def newest_execution_id(self) -> int:
        """The newest execution's id (0: none): a later one's is greater (``after_id``)."""
        return n8n_db.newest_execution_id(self.postgres_dsn)

    def executions(
        self, workflow_id: str, containing: str | None = None, after_id: int = 0
    ) -> list[dict[str, Any]]:
        """Execution rows of a workflow, straight from n8n's database (oldest first); only
        those whose data holds ``containing`` and newer than ``after_id`` when given (see
        n8n_db.execution_rows)."""
        return n8n_db.execution_rows(self.postgres_dsn, workflow_id, containing, after_id)

    def worker_upstream_proxy(self, worker_index: int, upstream: str) -> Proxy:
        return self.link(self.workers[worker_index], upstream)

    # -- bring-up ---------------------------------------------------------------------
    @classmethod
    def start(
        cls,
        installation: Installation,
        config: StackConfig,
        progress: Progress = _quiet,
        keep_on_failure: bool = False,
    ) -> Stack:
        """Bring every part up and wait for real readiness. On a failure everything is torn
        down first, unless ``keep_on_failure``: then what did start stays up for inspection
        (``stack.json`` is written, so ``n8n-chaos down`` ends it) and the error carries
        the stack as ``exc.stack``."""
        config.validate()
        if config.main_port is not None:
            ensure_free(config.main_port, "n8n main")
        wanted = config.db_template and config.backend == "native"
        template, template_s = template_for_stack(
            installation, wanted, progress, config.ready_timeout_s
        )
        run = RunContext.create(config.runs_root, run_dir=config.run_dir)
        progress(f"run {run.run_id}: logs in {run.run_dir}")
        stack: Stack | None = None
        try:
            project = _compose_project(run, config)
            with collect_ports() as reserved:
                stack = cls._assemble(installation, config, run)
            stack.reserved_ports = reserved
            if project is not None:
                stack.containers = project
                project.set_env("postgres", POSTGRES_PASSWORD=stack.postgres.password)
                if stack.intercept is not None:  # n8n's containers mount its certificate
                    stack.intercept.make_ca()
                progress(f"creating the containers of compose project {project.name}")
                project.create()
            if template_s:
                stack.timings["template made (once)"] = template_s
            queued = time.monotonic()
            with _one_bring_up_at_a_time(progress):
                if (waited := time.monotonic() - queued) > 0.5:
                    stack.timings["queued behind another bring-up"] = waited
                stack._bring_up(progress, template)
            return stack
        except BaseException as exc:
            if stack is not None and keep_on_failure and isinstance(exc, HarnessError):
                stack._write_state()
                exc.stack = stack  # type: ignore[attr-defined]
            elif stack is not None:
                stack.stop()  # its logs stay in the run dir; the data dir in /tmp would leak
            else:
                run.reaper.close()
            raise

    @classmethod
    def _assemble(cls, inst: Installation, config: StackConfig, run: RunContext) -> Stack:
        """Create every process object with its ports; nothing is started yet."""
        postgres = PostgresServer(inst.postgres_bin_dir, run, free_port())
        redis = RedisServer(inst.redis_bin, run, free_port())
        toxi = ToxiproxyServer(inst.toxiproxy_bin, run, free_port(), config.toxiproxy_seed)
        provider = (
            ProviderServer(run, free_port(), free_port(), config.provider, free_port())
            if config.provider is not None
            else None
        )
        upstreams = dict(config.upstreams)
        if provider is not None:
            upstreams[PROVIDER_UPSTREAM] = provider.address
        main_port = config.main_port or free_port()
        webhook_port = free_port()
        links = _links(
            config,
            upstreams,
            f"{HOST}:{postgres.port}",
            f"{HOST}:{redis.port}",
            main_port,
            webhook_port,
        )
        if provider is not None and provider.smtp_address is not None:
            # Send Email speaks SMTP to its credential's host: one link for every process
            # (a credential cannot differ per worker), cut like any other.
            links["smtp"] = provider.smtp_address
        listen = {name: free_port() for name in links}

        def client_url(proxy: str) -> str:
            return f"http://{HOST}:{listen[proxy]}/"

        shared = SharedEnv(
            node_bin=inst.node_bin,
            n8n_bin=inst.n8n_bin,
            run_id=run.run_id,
            encryption_key=secrets.token_hex(24),
            db_password=postgres.password,
            webhook_url=client_url("client_webhook" if config.webhook_processor else "client_main"),
            overrides={**TIMING_PROFILES[config.n8n_timings], **config.n8n_env},
            compile_cache=inst.compile_cache,
        )
        # None: outbound HTTP(S) not intercepted.
        intercept = _intercept(config, run, listen, inst.mitmproxy_python)

        def n8n(name: str, role: Role, http_port: int, extra: dict[str, str]) -> N8nProcess:
            upstream_env = {
                upstream_env_name(u): client_url(f"{name}_{u}").rstrip("/")
                for u in upstreams
                if f"{name}_{u}" in listen
            }
            return N8nProcess(
                name,
                role,
                run,
                shared,
                http_port,
                free_port(),
                listen[f"{name}_postgres"],
                listen[f"{name}_redis"],
                {**upstream_env, **(intercept.env_for(name) if intercept else {}), **extra},
            )

        # Without its editor, main runs no execution itself (manual ones would go to the
        # workers, as n8n 3 always sends them), so it starts no task runner: a CPU second a
        # boot and an idle process less (bench/idle_cpu.py --compare main-runner).
        main_env = (
            {}
            if config.editor
            else {"N8N_DISABLE_UI": "true", "OFFLOAD_MANUAL_EXECUTIONS_TO_WORKERS": "true"}
        )
        if config.webhook_processor:
            main_env["N8N_DISABLE_PRODUCTION_MAIN_PROCESS"] = "true"
        main = n8n("main", "main", main_port, main_env)
        workers = [n8n(f"worker{i}", "worker", free_port(), {}) for i in range(config.workers)]
        spare = (
            n8n(f"worker{config.workers}", "worker", free_port(), {})
            if config.spare_worker
            else None
        )
        webhook = n8n("webhook", "webhook", webhook_port, {}) if config.webhook_processor else None
        return cls(
            config=config,
            run=run,
            postgres=postgres,
            redis=redis,
            toxiproxy_server=toxi,
            toxiproxy=ToxiproxyClient(toxi.api_url),
            provider=provider,
            links=links,
            listen_ports=listen,
            proxies={},
            main=main,
            workers=workers,
            webhook=webhook,
            spare=spare,
            intercept=intercept,
        )

    def _bring_up(self, progress: Progress, template: DatabaseTemplate | None) -> None:
        started = time.monotonic()
        progress("starting Postgres, Redis, Toxiproxy and the provider")
        step = time.monotonic()
        if template is not None:
            self.postgres.copy_from(template.data_dir, template.password)
            self.timings["postgres template copy"] = time.monotonic() - step
        elif self.containers is None:  # a Postgres container runs initdb itself
            self.postgres.initdb()
            self.timings["postgres initdb"] = time.monotonic() - step
        backing: list[Service] = [self.postgres, self.redis, self.toxiproxy_server]
        if self.provider is not None:
            backing.append(self.provider)
        if self.intercept is not None:  # up before n8n: Node reads its CA once, at start
            self.intercept.prepare()
            backing.append(self.intercept)
        for service in backing:
            service.process.start()
        self.timings.update(
            wait_all_ready([s.readiness() for s in backing], self.config.ready_timeout_s)
        )
        # The copy still answers to the template's password: this run's own, before n8n.
        self.postgres.rotate_password()
        for database in ("n8n", LEDGER_DATABASE) if template is None else (LEDGER_DATABASE,):
            self.postgres.create_database(database)
        self._create_proxies()

        webhook = [self.webhook] if self.webhook else []
        if template is not None:
            # Migrations are done, and main and workers seed the instance's keys race-free
            # (insert-or-ignore), so they start together; the webhook processor only reads
            # those keys, so it starts once main has seeded them.
            waves = [[self.main, *self.workers], webhook]
            progress("starting n8n main and workers (database from the migrated template)")
        else:
            # Every n8n process migrates at start: main alone first, then the others.
            waves = [[self.main], [*self.workers, *webhook]]
            progress("starting n8n main (runs the database migrations)")
        for wave in waves:
            for proc in wave:
                proc.start()
            self.timings.update(
                wait_all_ready([p.readiness() for p in wave], self.config.ready_timeout_s)
            )
        if self.spare is not None:  # boots beside the rest of the bring-up and the first case
            self.boot_spare()
        progress("creating the owner, an API key and the ledger credential")
        self.owner = bootstrap_owner(self.main.base_url)
        self.api = N8nApi(self.main.base_url, self.owner.api_key, owner=self.owner)
        self.ledger_credential_id = self.api.create_credential(
            LEDGER_CREDENTIAL_NAME,
            "postgres",
            {
                "host": HOST,
                "port": self.listen_ports["ledger_postgres"],
                "database": LEDGER_DATABASE,
                "user": "postgres",
                "password": self.postgres.password,
                "ssl": "disable",
                "allowUnauthorizedCerts": False,
                "sshTunnel": False,
            },
        )
        write_variables(self.postgres_dsn, self.config.variables)
        self.timings["total"] = time.monotonic() - started
        self._write_state()

    # -- workflows --------------------------------------------------------------------
    def deploy(self, workflow: dict[str, Any], workflow_id: str | None = None) -> DeployedWorkflow:
        """Create (under ``workflow_id`` if given), bind the ledger credential, publish, and
        wait for the webhook to be live."""
        assert self.api is not None and self.ledger_credential_id is not None
        return deploy(
            self.api,
            self.postgres_dsn,
            workflow,
            self.webhook_base_url,
            {LEDGER_CREDENTIAL_NAME: self.ledger_credential_id},
            workflow_id=workflow_id,
        )

    def apply_ledger_schema(self, sql: str | None) -> None:
        """Run a workflow's ledger DDL on the ledger database (it must be re-runnable)."""
        if sql:
            self.postgres.run_script(LEDGER_DATABASE, sql)

    # -- state file (for `n8n-chaos down` and for humans) -----------------------------
    def describe(self) -> dict[str, Any]:
        return {
            "run_id": self.run.run_id,
            "run_dir": str(self.run.run_dir),
            "owner_pid": os.getpid(),
            "reaper_pid": self.run.reaper.pid,
            "n8n_version": self.config.n8n_version,
            "backend": self.config.backend,
            "compose_project": self.containers.name if self.containers else None,
            "n8n_url": self.base_url,
            "webhook_base_url": self.webhook_base_url,
            "owner_email": self.owner.email if self.owner else None,
            # For a human at `up`: the public API answers to this key (X-N8N-API-KEY).
            "api_key": self.owner.api_key if self.owner else None,
            "postgres_dsn": self.postgres_dsn,
            "ledger_dsn": self.ledger_dsn,
            "redis_url": self.redis_url,
            "toxiproxy_api": self.toxiproxy_server.api_url,
            "provider_control": self.provider.control_url if self.provider else None,
            "intercept": (
                {"listeners": self.intercept.addresses, "ca_cert": str(self.intercept.ca_cert)}
                if self.intercept
                else None
            ),
            "proxies": {
                name: {"listen": f"{HOST}:{port}", "upstream": self.links[name]}
                for name, port in self.listen_ports.items()
            },
            "processes": {p.name: p.pid for p in self.processes},
            "timings_s": {k: round(v, 2) for k, v in self.timings.items()},
        }

    def _write_state(self) -> None:
        # Secrets (DB password, API key) are in here: the run dir is private to the user.
        path = self.run.run_dir / "stack.json"
        path.write_text(json.dumps(self.describe(), indent=2) + "\n")
        path.chmod(0o600)

    # -- teardown ---------------------------------------------------------------------
    def stop(self) -> None:
        """End every process this run started, never raises: n8n's processes first, side by
        side (each shuts down on its own, and on a loaded machine one after another took
        20-50 s of the suite's tail), then what they used (their database, Redis, links)."""
        if self.api is not None:
            self.api.close()
        for tier in (self._n8n_and_spare_processes(), self._backing_processes()[::-1]):
            _stop_side_by_side(tier, concurrently=self.containers is None)
        self.toxiproxy.close()
        if self.provider is not None:
            self.provider.control.close()
        if self.containers is not None:
            self.containers.down()
        # Before the reaper hears "done" (it then leaves the data dir to us): an owner killed
        # in between would leave it in /tmp. Its logs are in the run dir; the data is scratch.
        self.postgres.remove_data()
        self.run.reaper.close()
        (self.run.run_dir / "stack.json").unlink(missing_ok=True)
        release_ports(self.reserved_ports)


def _stop_side_by_side(procs: list[ManagedProcess], concurrently: bool) -> None:
    """Stop each process, never raising; native processes at once (a container's stop goes
    through the one docker client, so those one after another)."""

    def stop(proc: ManagedProcess) -> None:
        with contextlib.suppress(Exception):
            proc.stop(grace_s=10.0)

    if not concurrently or len(procs) < 2:
        for proc in procs:
            stop(proc)
        return
    with ThreadPoolExecutor(max_workers=len(procs), thread_name_prefix="stop") as pool:
        list(pool.map(stop, procs))


@contextlib.contextmanager
def _one_bring_up_at_a_time(progress: Progress) -> Iterator[None]:
    """Stacks on one machine boot one after another (pytest -n N, other users' runs): one
    boot already keeps two cores busy, and n8n processes starved of CPU at boot miss their
    Bull lock renewals (5 s with the fast-crash settings), so their first jobs are declared
    stalled although they finish. The lock is released by the kernel if its holder dies."""
    path = Path(tempfile.gettempdir()) / "n8n-chaos-bring-up.lock"
    with path.open("a") as handle:
        with contextlib.suppress(PermissionError):
            path.chmod(0o666)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress("waiting for another stack on this machine to finish its bring-up")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _compose_project(run: RunContext, config: StackConfig) -> ComposeProject | None:
    if config.backend != "compose":
        return None
    from harness.stack.docker.project import ComposeProject  # the docker SDK only when used

    return ComposeProject.for_run(run, config.n8n_image, config.webhook_processor)


def _intercept(
    config: StackConfig, run: RunContext, listen: Mapping[str, int], python: Path
) -> InterceptProxy | None:
    """One proxy listener per n8n process; its allowed requests go to that process's own
    link to the provider, so one worker's upstream can still be cut alone."""
    if not config.intercept:
        return None
    names = ["main", *(f"worker{i}" for i in range(config.workers + config.spare_worker))]
    names += ["webhook"] if config.webhook_processor else []
    links = {name: listen.get(f"{name}_{PROVIDER_UPSTREAM}") for name in names}
    return InterceptProxy.for_run(
        run,
        {name: (free_port(), f"{HOST}:{port}" if port else None) for name, port in links.items()},
        python,
    )


def _links(
    config: StackConfig,
    upstreams: Mapping[str, str],
    postgres: str,
    redis: str,
    main_port: int,
    webhook_port: int,
) -> dict[str, str]:
    """Every proxied link of the topology: proxy name -> upstream address."""
    links = {
        "client_main": f"{HOST}:{main_port}",
        "main_postgres": postgres,
        "main_redis": redis,
        "ledger_postgres": postgres,
    }
    links |= {f"main_{name}": address for name, address in upstreams.items()}
    for i in range(config.workers + config.spare_worker):
        links |= {f"worker{i}_postgres": postgres, f"worker{i}_redis": redis}
        links |= {f"worker{i}_{name}": address for name, address in upstreams.items()}
    if config.webhook_processor:
        links |= {
            "client_webhook": f"{HOST}:{webhook_port}",
            "webhook_postgres": postgres,
            "webhook_redis": redis,
        }
        # Its own link to each upstream too: the intercepting proxy sends its requests there.
        links |= {f"webhook_{name}": address for name, address in upstreams.items()}
    return links
