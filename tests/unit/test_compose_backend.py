"""The compose backend's own code without an engine: what each container runs, the per-run
compose file, the proofs a process handle gives, the options, the reaper's container line."""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

import pytest
from docker.errors import APIError

from harness.errors import ConfigError
from harness.stack import reaper
from harness.stack.docker.container import PAUSE_ATTEMPTS, ContainerProcess
from harness.stack.docker.project import (
    CONTAINER_CA_CERT,
    LOCAL_N8N_IMAGE,
    ComposeProject,
    service_spec,
)
from harness.stack.intercept.launcher import InterceptProxy
from harness.stack.run import RunContext
from harness.stack.stack import StackConfig

PG_ARGV = [
    "/cache/postgres/bin/postgres",
    "-D",
    "/tmp/pg/data",
    "-p",
    "41001",
    "-c",
    "listen_addresses=127.0.0.1",
    "-c",
    "unix_socket_directories=",
    "-c",
    "fsync=off",
]
N8N_ARGV = ["/cache/node/bin/node", "/cache/n8n/node_modules/n8n/bin/n8n", "worker"]


def test_postgres_runs_the_native_settings_without_host_paths() -> None:
    spec = service_spec("postgres", PG_ARGV, {"PATH": "/usr/bin"})
    assert spec["command"] == [
        "postgres",
        "-p",
        "41001",
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "fsync=off",
    ]
    assert spec["environment"] == {"PGPORT": "41001"}


def test_redis_toxiproxy_and_provider_keep_their_ports() -> None:
    redis = service_spec(
        "redis", ["/usr/bin/redis-server", "--port", "7", "--dir", "/run/redis", "--save", ""], {}
    )
    assert redis["command"] == ["redis-server", "--port", "7", "--save", ""]
    toxi = service_spec("toxiproxy", ["/c/toxiproxy-server", "-host", "h", "-port", "8"], {})
    assert toxi["command"] == ["-host", "h", "-port", "8"]
    assert toxi["environment"] == {"TOXIPROXY_PORT": "8"}
    provider = service_spec(
        "provider",
        [
            *("/py", "-m", "fake_providers.payment", "--port", "9", "--control-port", "10"),
            *("--db", "/run/p.db", "--lenient"),
        ],
        {"PYTHONUNBUFFERED": "1"},
    )
    assert provider["command"] == [
        *("--port", "9", "--control-port", "10", "--db", "/data/provider.db", "--lenient")
    ]
    assert provider["environment"]["PROVIDER_CONTROL_PORT"] == "10"  # for its healthcheck


def test_n8n_gets_its_role_and_settings_but_not_the_hosts_paths() -> None:
    env = {"PATH": "/node/bin", "HOME": "/run/n8n", "N8N_USER_FOLDER": "/run/n8n", "N8N_PORT": "5"}
    env["NODE_COMPILE_CACHE"] = "/var/cache/n8n-chaos/node-compile-cache"  # a host path
    spec = service_spec("worker1", ["/node", "/n8n", "worker", "--concurrency=5"], env)
    assert spec == {"command": ["worker", "--concurrency=5"], "environment": {"N8N_PORT": "5"}}


def _project(tmp_path: Path, image: str = LOCAL_N8N_IMAGE) -> ComposeProject:
    run = RunContext(run_id="20260101-000000-abcdef", run_dir=tmp_path, reaper=None)  # type: ignore[arg-type]
    (tmp_path / "logs").mkdir(exist_ok=True)
    return ComposeProject(run, image, False, False, "n8n-chaos-20260101-000000-abcdef")


def test_every_part_asks_the_project_and_gets_a_container(tmp_path: Path) -> None:
    project = _project(tmp_path)
    proc = project.process("postgres", PG_ARGV, {})
    assert isinstance(proc, ContainerProcess)
    assert proc.container_name == "n8n-chaos-20260101-000000-abcdef-postgres"
    assert proc.log_path == tmp_path / "logs" / "postgres.log"


def test_the_run_file_pins_host_networking_labels_and_escapes_dollars(tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.process("postgres", PG_ARGV, {})
    project.set_env("postgres", POSTGRES_PASSWORD="pa$$word")
    project.process("worker2", N8N_ARGV, {"N8N_PORT": "5"})
    text = project.render()
    assert '    network_mode: "host"' in text
    assert '"n8n-chaos.run": "20260101-000000-abcdef"' in text
    assert '"POSTGRES_PASSWORD": "pa$$$$word"' in text  # compose reads it back as pa$$word
    assert text.count("environment: !override") == 2
    # An n8n part beyond compose.yaml's two workers is fully described by the run file.
    worker2 = text.split("  worker2:\n", 1)[1]
    assert '"image": ' not in worker2 and f'image: "{LOCAL_N8N_IMAGE}"' in worker2
    assert "healthcheck:" in worker2


def test_a_custom_image_does_not_get_module_names_of_another_n8n(tmp_path: Path) -> None:
    project = _project(tmp_path, "acme/n8n:custom")
    project.custom_n8n_image = True
    project.process("main", ["/node", "/n8n", "start"], {"N8N_DISABLED_MODULES": "mcp-registry"})
    (tmp_path / "compose.run.yaml").write_text("")
    project.compose = lambda *args: ""  # type: ignore[method-assign]
    project.create()
    assert "N8N_DISABLED_MODULES" not in (tmp_path / "compose.run.yaml").read_text()
    assert 'image: "acme/n8n:custom"' in (tmp_path / "compose.run.yaml").read_text()


def test_the_local_image_runs_the_cached_node_and_n8n_mounted_read_only(tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.process("postgres", PG_ARGV, {})
    project.process("worker0", N8N_ARGV, {"NODE_EXTRA_CA_CERTS": "/run/ca.pem"})
    mounts = {
        m["target"]: (m["source"], m["read_only"]) for m in project.specs["worker0"]["volumes"]
    }
    assert mounts == {
        CONTAINER_CA_CERT: ("/run/ca.pem", True),
        "/usr/local/bin/node": ("/cache/node/bin/node", True),
        "/usr/local/lib/node_modules": ("/cache/n8n/node_modules", True),
    }
    assert "volumes" not in project.specs["postgres"]


def test_a_custom_image_runs_its_own_n8n_without_mounts(tmp_path: Path) -> None:
    project = _project(tmp_path, "acme/n8n:custom")
    project.custom_n8n_image = True
    project.process("main", N8N_ARGV, {})
    assert "volumes" not in project.specs["main"]


def _container(state: dict[str, Any], tmp_path: Path) -> ContainerProcess:
    proc = ContainerProcess.make("worker0", "c", tmp_path / "w.log", "run")
    proc._state = lambda: state  # type: ignore[method-assign]
    return proc


def test_container_kill_proof_is_the_engines_exit_137(tmp_path: Path) -> None:
    killed = _container({"Running": False, "ExitCode": 137, "OOMKilled": False}, tmp_path)
    assert "137 = 128+SIGKILL" in (killed.kill_proof() or "")
    assert _container({"Running": False, "ExitCode": 0}, tmp_path).kill_proof() is None
    oom = _container({"Running": False, "ExitCode": 137, "OOMKilled": True}, tmp_path)
    assert oom.kill_proof() is None


def test_container_pause_proof_needs_the_engines_paused_state(tmp_path: Path) -> None:
    assert _container({"Running": True, "Paused": False, "Pid": 1}, tmp_path).pause_proof() is None
    paused = _container({"Running": True, "Paused": True, "Pid": 0}, tmp_path).pause_proof()
    assert paused is not None and "paused (docker inspect)" in paused


class _Freezing:
    """A container whose first ``refusals`` pauses runc could not freeze."""

    def __init__(self, refusals: int, error: str = "OCI runtime pause failed: unable to freeze"):
        self.refusals, self.error, self.calls = refusals, error, 0

    def pause(self) -> None:
        self.calls += 1
        if self.calls <= self.refusals:
            raise APIError(self.error)


def test_a_pause_runc_could_not_freeze_is_asked_again(tmp_path: Path) -> None:
    proc = _container({}, tmp_path)
    frozen = _Freezing(refusals=2)
    proc._container = lambda: frozen  # type: ignore[method-assign,assignment,return-value]
    proc.pause()
    assert frozen.calls == 3 and proc.paused
    never = _Freezing(refusals=PAUSE_ATTEMPTS)
    proc._container = lambda: never  # type: ignore[method-assign,assignment,return-value]
    with pytest.raises(APIError, match="unable to freeze"):
        proc.pause()
    other = _Freezing(refusals=1, error="No such container")
    proc._container = lambda: other  # type: ignore[method-assign,assignment,return-value]
    with pytest.raises(APIError):
        proc.pause()
    assert other.calls == 1


def test_native_proofs_are_the_kernels_word(tmp_path: Path) -> None:
    run = RunContext.create(tmp_path)
    try:
        proc = run.process("sleeper", ["sleep", "300"], {})
        proc.start()
        assert proc.kill_proof() is None and proc.pause_proof() is None
        proc.pause()
        deadline = time.monotonic() + 5
        while proc.pause_proof() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert "in state T (/proc)" in (proc.pause_proof() or "")
        proc.kill()
        assert proc.kill_proof() == "sleeper exited by SIGKILL (wait status)"
    finally:
        run.reaper.close()


def test_backend_options_are_checked() -> None:
    StackConfig(backend="compose", n8n_image="acme/n8n:1").validate()
    with pytest.raises(ConfigError, match="--n8n-image needs --backend compose"):
        StackConfig(n8n_image="acme/n8n:1").validate()
    with pytest.raises(ConfigError, match="--backend must be"):
        StackConfig(backend="k8s").validate()  # type: ignore[arg-type]


def test_reaper_removes_the_containers_of_a_run_that_has_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    removed: list[str] = []
    monkeypatch.setattr(reaper, "remove_containers", removed.append)
    monkeypatch.setattr(reaper, "sweep", lambda run_id, groups: None)
    monkeypatch.setattr(reaper, "remove_run_data", lambda run_id: None)
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{reaper.CONTAINERS}\n{reaper.DONE}\n"))
    assert reaper.main(["reaper", "run-1"]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{reaper.DONE}\n"))
    assert reaper.main(["reaper", "run-2"]) == 0
    assert removed == ["run-1"]


def test_n8n_containers_go_through_the_hosts_proxy_and_trust_its_ca(tmp_path: Path) -> None:
    """The container's env is the native process's (proxy variables, outbound mode), with the
    CA file bind-mounted read-only where NODE_EXTRA_CA_CERTS points inside the container."""
    project = _project(tmp_path)
    project.run.process_factory = project.process  # as ComposeProject.for_run sets it
    proxy = InterceptProxy.for_run(
        project.run, {"worker0": (41002, "127.0.0.1:42002")}, Path("/py")
    )
    native = proxy.env_for("worker0")
    project.process("worker0", N8N_ARGV, {"N8N_PORT": "5", **native})
    spec = project.specs["worker0"]
    proxy_vars = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
    for var in (*proxy_vars, *(v.lower() for v in proxy_vars), "N8N_OUTBOUND_PROXY_MODE"):
        assert spec["environment"][var] == native[var], var
    assert spec["environment"]["HTTPS_PROXY"] == "http://127.0.0.1:41002"
    assert spec["environment"]["NODE_EXTRA_CA_CERTS"] == CONTAINER_CA_CERT
    assert spec["volumes"][0] == {
        "type": "bind",
        "source": str(proxy.ca_cert),
        "target": CONTAINER_CA_CERT,
        "read_only": True,
    }
    worker = project.render().split("  worker0:\n", 1)[1]
    assert f'"source": "{proxy.ca_cert}"' in worker and '"read_only": true' in worker
    # The intercepting proxy itself is a process on the host, not a container of the project.
    assert proxy.process.argv[1:3] == ["-m", "harness.stack.intercept.server"]
    assert not isinstance(proxy.process, ContainerProcess)
    assert set(project.specs) == {"worker0"}


def test_a_part_without_the_proxy_gets_no_mount() -> None:
    spec = service_spec("main", ["/node", "/n8n", "start"], {"N8N_PORT": "5"})
    assert "volumes" not in spec and "NODE_EXTRA_CA_CERTS" not in spec["environment"]
