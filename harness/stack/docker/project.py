"""One run's compose project: ``n8n-chaos-<run id>``, made and removed with the compose CLI.

The stack's handles are built as for the native backend (ports, passwords, n8n settings);
each asks the run for its process, and this project answers with a container and notes what
the container must run. ``create`` writes those notes as a third compose file (after
``compose/compose.yaml`` and ``compose/compose.local.yaml``) and runs ``up --no-start``; the
stack then starts the containers in its own order and waits for them as for processes.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import ServiceError
from harness.stack.docker.container import ContainerProcess
from harness.stack.docker.engine import (
    RUN_LABEL,
    compose_version,
    project_name,
    require_image,
)
from harness.stack.process import ManagedProcess
from harness.stack.run import RunContext

COMPOSE_DIR = Path(__file__).resolve().parents[3] / "compose"
BACKING = ("postgres", "redis", "toxiproxy", "provider")
# The images scripts/docker-setup.sh builds (the same tags there).
LOCAL_IMAGES = {
    "postgres": "n8n-chaos/postgres:17-thin",
    "redis": "n8n-chaos/redis:7-thin",
    "toxiproxy": "n8n-chaos/toxiproxy:2.12.0-thin",
    "provider": "n8n-chaos/provider:thin",
}
# n8n's runtime without n8n: Node and n8n's node_modules are the installation the native
# backend runs, bind-mounted read-only from the cache (``cache_mounts``), so any installed
# n8n version runs in it and building it copies nothing.
LOCAL_N8N_IMAGE = "n8n-chaos/n8n:thin"
# Paths and settings of the host that mean nothing inside an image: the image's own PATH,
# home and n8n user folder apply.
_HOST_ONLY_ENV = ("PATH", "HOME", "N8N_USER_FOLDER", "NODE_COMPILE_CACHE")
_N8N_HEALTH = (
    "fetch('http://127.0.0.1:'+(process.env.N8N_PORT||process.env.QUEUE_HEALTH_CHECK_PORT)"
    "+'/healthz/readiness').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
)
_COMPOSE_TIMEOUT_S = 180.0
# Where an n8n container finds the run's intercepting-proxy CA (NODE_EXTRA_CA_CERTS).
_CA_VARIABLE = "NODE_EXTRA_CA_CERTS"
CONTAINER_CA_CERT = "/etc/n8n-chaos/intercept-ca.pem"


def cache_mounts(argv: Sequence[str]) -> list[dict[str, Any]]:
    """What the local n8n image mounts from the cache, from the native argv [node, n8n, ...]:
    the node binary and the node_modules folder that holds the n8n package."""
    node, n8n = Path(argv[0]), Path(argv[1])  # <node_modules>/n8n/bin/n8n
    return [
        {"type": "bind", "source": str(source), "target": target, "read_only": True}
        for source, target in (
            (node, "/usr/local/bin/node"),
            (n8n.parents[2], "/usr/local/lib/node_modules"),
        )
    ]


def _drop_option(argv: Sequence[str], option: str, value: str | None = None) -> list[str]:
    """argv without ``option VALUE`` pairs (or ``option value`` when ``value`` is given)."""
    out: list[str] = []
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if arg == option and (value is None or nxt == value):
            skip = True
            continue
        out.append(arg)
    return out


def service_spec(name: str, argv: Sequence[str], env: dict[str, str]) -> dict[str, Any]:
    """What the container of part ``name`` runs, from the native process's argv and env."""
    if name == "postgres":
        args = _drop_option(_drop_option(argv[1:], "-D"), "-c", "unix_socket_directories=")
        port = args[args.index("-p") + 1]
        # POSTGRES_PASSWORD is added by ``create`` (the handle holds it, not the argv).
        return {"command": ["postgres", *args], "environment": {"PGPORT": port}}
    if name == "redis":
        args = _drop_option(argv[1:], "--dir")  # the container's own work dir
        port = args[args.index("--port") + 1]
        return {"command": ["redis-server", *args], "environment": {"REDIS_PORT": port}}
    if name == "toxiproxy":
        port = argv[list(argv).index("-port") + 1]
        return {"command": list(argv[1:]), "environment": {"TOXIPROXY_PORT": port}}
    if name == "provider":
        args = list(argv[list(argv).index("fake_providers.payment") + 1 :])
        args[args.index("--db") + 1] = "/data/provider.db"  # the provider-data volume
        control = {"PROVIDER_CONTROL_PORT": args[args.index("--control-port") + 1]}
        return {"command": args, "environment": {**env, **control}}
    # n8n: argv is [node, n8n, ROLE...]; the image's entrypoint runs `n8n ROLE...`.
    environment = {k: v for k, v in env.items() if k not in _HOST_ONLY_ENV}
    spec: dict[str, Any] = {"command": list(argv[2:]), "environment": environment}
    if ca_cert := environment.get(_CA_VARIABLE):
        # The intercepting proxy runs on the host (harness.stack.intercept); the container
        # trusts the run's CA from the same file, mounted alone and read-only.
        environment[_CA_VARIABLE] = CONTAINER_CA_CERT
        spec["volumes"] = [
            {"type": "bind", "source": ca_cert, "target": CONTAINER_CA_CERT, "read_only": True}
        ]
    return spec


def _yaml_value(value: Any) -> str:
    """JSON is YAML; ``$`` is doubled so compose does not interpolate values."""
    return json.dumps(value).replace("$", "$$")


@dataclass
class ComposeProject:
    run: RunContext
    n8n_image: str
    custom_n8n_image: bool
    webhook_processor: bool
    name: str = ""
    specs: dict[str, dict[str, Any]] = field(default_factory=dict)
    processes: dict[str, ContainerProcess] = field(default_factory=dict)
    created: bool = False

    @classmethod
    def for_run(cls, run: RunContext, n8n_image: str | None, webhook: bool) -> ComposeProject:
        """Check the engine, compose v2 and the images first: one clear error, no half run."""
        compose_version()
        image = n8n_image or LOCAL_N8N_IMAGE
        for needed in (*LOCAL_IMAGES.values(), image):
            require_image(needed)
        project = cls(run, image, n8n_image is not None, webhook, project_name(run.run_id))
        run.process_factory = project.process
        run.reaper.uses_containers()
        return project

    @property
    def files(self) -> list[Path]:
        return [
            COMPOSE_DIR / "compose.yaml",
            COMPOSE_DIR / "compose.local.yaml",
            self.run.run_dir / "compose.run.yaml",
        ]

    def process(self, name: str, argv: Sequence[str], env: dict[str, str]) -> ManagedProcess:
        spec = self.specs[name] = service_spec(name, argv, env)
        if name not in BACKING and not self.custom_n8n_image:
            spec["volumes"] = [*spec.get("volumes", []), *cache_mounts(argv)]
        log_path = self.run.run_dir / "logs" / f"{name}.log"
        proc = ContainerProcess.make(name, self.container_name(name), log_path, self.run.run_id)
        self.processes[name] = proc
        return proc

    def container_name(self, part: str) -> str:
        return f"{self.name}-{part}"

    def set_env(self, part: str, **values: str) -> None:
        self.specs[part]["environment"].update(values)

    # -- compose CLI ------------------------------------------------------------------
    def create(self) -> None:
        """Write the per-run file and create (not start) every container."""
        if self.custom_n8n_image:
            # Only module names the image's n8n knows may be disabled, else it exits.
            for part, spec in self.specs.items():
                if part not in BACKING:
                    spec["environment"].pop("N8N_DISABLED_MODULES", None)
        (self.run.run_dir / "compose.run.yaml").write_text(self.render())
        self.created = True
        self.compose("up", "--no-start", "--pull", "never", "--no-build", *self.specs)

    def down(self) -> None:
        """Remove the project's containers, volumes and network (never raises)."""
        if not self.created:
            return
        try:
            self.compose("down", "--volumes", "--remove-orphans", "--timeout", "10")
        except ServiceError:
            from harness.stack.docker.engine import remove_run

            remove_run(self.run.run_id)  # the same by label, without the CLI

    def compose(self, *args: str) -> str:
        argv = ["docker", "compose", "-p", self.name]
        for path in self.files:
            argv += ["-f", str(path)]
        if self.webhook_processor:
            argv += ["--profile", "webhook"]
        env = {**os.environ, "N8N_IMAGE": self.n8n_image}
        done = subprocess.run(
            [*argv, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=_COMPOSE_TIMEOUT_S,
            check=False,
        )
        log = self.run.run_dir / "logs" / "compose.log"
        with log.open("a") as out:
            out.write(f"$ {' '.join(argv + list(args))}\n{done.stdout}{done.stderr}\n")
        if done.returncode != 0:
            raise ServiceError(
                "compose",
                f"`docker compose {args[0]}` failed (exit {done.returncode}); see {log}",
                done.stderr[-2000:],
            )
        return done.stdout

    def render(self) -> str:
        """The per-run compose file: each part's image, command, settings and labels."""
        lines = [
            f"# n8n-chaos run {self.run.run_id}: written by harness/stack/docker/project.py",
            "services:",
        ]
        for part, spec in self.specs.items():
            service: dict[str, Any] = {
                "container_name": self.container_name(part),
                "network_mode": "host",
                "labels": {RUN_LABEL: self.run.run_id, "n8n-chaos.part": part},
                "command": spec["command"],
            }
            if "volumes" in spec:
                service["volumes"] = spec["volumes"]
            if part not in BACKING:
                service["image"] = self.n8n_image
                service["healthcheck"] = {
                    "test": ["CMD", "node", "-e", _N8N_HEALTH],
                    "interval": "2s",
                    "timeout": "2s",
                    "retries": 90,
                }
            lines.append(f"  {part}:")
            lines += [f"    {key}: {_yaml_value(value)}" for key, value in service.items()]
            # !override: the run's settings replace compose.yaml's, not merge with them.
            lines.append(f"    environment: !override {_yaml_value(spec['environment'])}")
        return "\n".join(lines) + "\n"
