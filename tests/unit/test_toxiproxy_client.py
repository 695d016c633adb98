"""Request shapes, error mapping and retries of the Toxiproxy client, against respx mocks.

The JSON bodies below mirror what a real Toxiproxy 2.12 server answers (errors come as
``{"error": ..., "status": N}`` with a text/plain content type).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

from harness.errors import ConfigError
from harness.stack.toxiproxy import (
    Proxy,
    Toxic,
    ToxiproxyClient,
    ToxiproxyConflict,
    ToxiproxyError,
    ToxiproxyNotFound,
    ToxiproxyUnavailable,
)

BASE = "http://toxiproxy.test:8474"


def proxy_json(name: str = "pg", listen: str = "127.0.0.1:40001", enabled: bool = True) -> Any:
    return {
        "name": name,
        "listen": listen,
        "upstream": "127.0.0.1:5432",
        "enabled": enabled,
        "Logger": {},
        "toxics": [],
    }


def toxic_json(**overrides: Any) -> dict[str, Any]:
    toxic = {
        "name": "latency_downstream",
        "type": "latency",
        "stream": "downstream",
        "toxicity": 1,
        "attributes": {"latency": 100, "jitter": 0},
    }
    toxic.update(overrides)
    return toxic


def error_response(status: int, message: str) -> httpx.Response:
    body = json.dumps({"error": message, "status": status}) + "\n"
    return httpx.Response(status, text=body, headers={"Content-Type": "text/plain"})


def body_of(route: respx.Route, call: int = -1) -> Any:
    return json.loads(route.calls[call].request.content)


@pytest.fixture
def mock() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        yield router


@pytest.fixture
def client() -> Iterator[ToxiproxyClient]:
    with ToxiproxyClient(BASE, backoff_s=0.0) as c:
        yield c


@pytest.fixture
def proxy(client: ToxiproxyClient) -> Proxy:
    return Proxy(client, name="pg", listen="127.0.0.1:40001", upstream="x:1", enabled=True)


# -- request shapes -----------------------------------------------------------------------------


def test_version_reads_json_and_plain_text(mock: respx.MockRouter, client: ToxiproxyClient) -> None:
    mock.get("/version").mock(
        side_effect=[
            httpx.Response(200, json={"version": "2.12.0"}),
            httpx.Response(200, text="2.1.4\n"),
        ]
    )
    assert client.version() == "2.12.0"
    assert client.version() == "2.1.4"


def test_create_proxy_posts_body_and_returns_resolved_port(
    mock: respx.MockRouter, client: ToxiproxyClient
) -> None:
    route = mock.post("/proxies").mock(return_value=httpx.Response(201, json=proxy_json()))
    proxy = client.create_proxy("pg", "127.0.0.1:5432")
    assert body_of(route) == {
        "name": "pg",
        "upstream": "127.0.0.1:5432",
        "listen": "127.0.0.1:0",
        "enabled": True,
    }
    assert route.calls[0].request.headers["content-type"] == "application/json"
    assert (proxy.name, proxy.listen_host, proxy.listen_port, proxy.enabled) == (
        "pg",
        "127.0.0.1",
        40001,
        True,
    )


def test_listen_host_strips_ipv6_brackets(client: ToxiproxyClient) -> None:
    proxy = Proxy(client, name="p", listen="[::]:39615", upstream="u:1", enabled=True)
    assert (proxy.listen_host, proxy.listen_port) == ("::", 39615)


def test_proxies_proxy_delete_reset(mock: respx.MockRouter, client: ToxiproxyClient) -> None:
    mock.get("/proxies").mock(
        return_value=httpx.Response(200, json={"pg": proxy_json(), "redis": proxy_json("redis")})
    )
    mock.get("/proxies/pg").mock(return_value=httpx.Response(200, json=proxy_json()))
    delete = mock.delete("/proxies/pg").mock(return_value=httpx.Response(204))
    reset = mock.post("/reset").mock(return_value=httpx.Response(204))

    proxies = client.proxies()
    assert sorted(proxies) == ["pg", "redis"]
    assert proxies["redis"].name == "redis"
    assert client.proxy("pg").upstream == "127.0.0.1:5432"
    client.delete_proxy("pg")
    client.reset()
    assert delete.call_count == 1
    assert reset.call_count == 1
    assert reset.calls[0].request.content == b""


def test_reset_keeping_one_toxic_undoes_everything_else(
    mock: respx.MockRouter, client: ToxiproxyClient
) -> None:
    parked = proxy_json("w2_redis") | {"toxics": [toxic_json(name="park"), toxic_json(name="x")]}
    cut = proxy_json("main_redis", enabled=False) | {"toxics": [toxic_json(name="park")]}
    mock.get("/proxies").mock(
        return_value=httpx.Response(200, json={"w2_redis": parked, "main_redis": cut})
    )
    enable = mock.patch("/proxies/main_redis").mock(
        return_value=httpx.Response(200, json=proxy_json("main_redis"))
    )
    removed = mock.delete(url__regex=r"/proxies/.*/toxics/.*").mock(
        return_value=httpx.Response(204)
    )
    everything = mock.post("/reset")

    client.reset(keep=("w2_redis", "park"))

    assert not everything.called
    assert enable.call_count == 1 and json.loads(enable.calls[0].request.content) == {
        "enabled": True
    }
    assert sorted(c.request.url.path for c in removed.calls) == [
        "/proxies/main_redis/toxics/park",
        "/proxies/w2_redis/toxics/x",
    ]


def test_populate_posts_a_bare_list(mock: respx.MockRouter, client: ToxiproxyClient) -> None:
    route = mock.post("/populate").mock(
        return_value=httpx.Response(201, json={"proxies": [proxy_json("a"), proxy_json("b")]})
    )
    proxies = client.populate(
        [
            {"name": "a", "upstream": "127.0.0.1:1"},
            {"name": "b", "upstream": "127.0.0.1:2", "listen": "0.0.0.0:9000", "enabled": False},
        ]
    )
    assert body_of(route) == [
        {"name": "a", "upstream": "127.0.0.1:1", "listen": "127.0.0.1:0"},
        {"name": "b", "upstream": "127.0.0.1:2", "listen": "0.0.0.0:9000", "enabled": False},
    ]
    assert [p.name for p in proxies] == ["a", "b"]


def test_populate_empty_list_answers_null(mock: respx.MockRouter, client: ToxiproxyClient) -> None:
    mock.post("/populate").mock(return_value=httpx.Response(201, json={"proxies": None}))
    assert client.populate([]) == []


def test_add_toxic_body_and_result(mock: respx.MockRouter, proxy: Proxy) -> None:
    route = mock.post("/proxies/pg/toxics").mock(
        return_value=httpx.Response(200, json=toxic_json(name="slow", toxicity=0.5))
    )
    toxic = proxy.add_toxic("latency", toxicity=0.5, name="slow", latency=100)
    assert body_of(route) == {
        "type": "latency",
        "stream": "downstream",
        "toxicity": 0.5,
        "attributes": {"latency": 100},
        "name": "slow",
    }
    assert toxic == Toxic(
        name="slow",
        type="latency",
        stream="downstream",
        toxicity=0.5,
        attributes={"latency": 100, "jitter": 0},
    )


def test_add_toxic_without_name_lets_the_server_choose(
    mock: respx.MockRouter, proxy: Proxy
) -> None:
    route = mock.post("/proxies/pg/toxics").mock(
        return_value=httpx.Response(
            200,
            json=toxic_json(name="reset_peer_upstream", type="reset_peer", stream="upstream"),
        )
    )
    toxic = proxy.add_toxic("reset_peer", stream="upstream", timeout=0)
    assert "name" not in body_of(route)
    assert body_of(route)["stream"] == "upstream"
    assert (toxic.name, toxic.stream) == ("reset_peer_upstream", "upstream")


def test_add_toxic_rejects_toxicity_outside_unit_interval(
    mock: respx.MockRouter, proxy: Proxy
) -> None:
    route = mock.post("/proxies/pg/toxics")
    with pytest.raises(ConfigError, match="toxicity"):
        proxy.add_toxic("latency", toxicity=3.0, latency=1)
    assert not route.called


def test_update_toxic_patches_only_given_fields(mock: respx.MockRouter, proxy: Proxy) -> None:
    route = mock.patch("/proxies/pg/toxics/slow").mock(
        return_value=httpx.Response(200, json=toxic_json(name="slow"))
    )
    proxy.update_toxic("slow", jitter=5)
    proxy.update_toxic("slow", toxicity=0.25)
    assert body_of(route, 0) == {"attributes": {"jitter": 5}}
    assert body_of(route, 1) == {"toxicity": 0.25}


def test_remove_and_list_toxics(mock: respx.MockRouter, proxy: Proxy) -> None:
    delete = mock.delete("/proxies/pg/toxics/slow").mock(return_value=httpx.Response(204))
    mock.get("/proxies/pg/toxics").mock(return_value=httpx.Response(200, json=[toxic_json()]))
    proxy.remove_toxic("slow")
    assert delete.call_count == 1
    assert [t.name for t in proxy.toxics()] == ["latency_downstream"]


def test_disable_enable_patch_enabled_and_refresh_fields(
    mock: respx.MockRouter, proxy: Proxy
) -> None:
    route = mock.patch("/proxies/pg").mock(
        side_effect=[
            httpx.Response(200, json=proxy_json(enabled=False)),
            httpx.Response(200, json=proxy_json(listen="127.0.0.1:40002")),
        ]
    )
    proxy.disable()
    assert proxy.enabled is False
    proxy.enable()
    assert (proxy.enabled, proxy.listen_port) == (True, 40002)
    assert [body_of(route, i) for i in (0, 1)] == [{"enabled": False}, {"enabled": True}]


# -- context managers ---------------------------------------------------------------------------


def test_toxic_context_manager_removes_on_normal_exit(mock: respx.MockRouter, proxy: Proxy) -> None:
    mock.post("/proxies/pg/toxics").mock(return_value=httpx.Response(200, json=toxic_json()))
    delete = mock.delete("/proxies/pg/toxics/latency_downstream").mock(
        return_value=httpx.Response(204)
    )
    with proxy.toxic("latency", latency=100) as toxic:
        assert toxic.name == "latency_downstream"
        assert delete.call_count == 0
    assert delete.call_count == 1


def test_toxic_context_manager_removes_on_exception(mock: respx.MockRouter, proxy: Proxy) -> None:
    mock.post("/proxies/pg/toxics").mock(return_value=httpx.Response(200, json=toxic_json()))
    delete = mock.delete("/proxies/pg/toxics/latency_downstream").mock(
        return_value=httpx.Response(204)
    )
    with pytest.raises(RuntimeError, match="boom"), proxy.toxic("latency", latency=100):
        raise RuntimeError("boom")
    assert delete.call_count == 1


def test_toxic_context_manager_ignores_404_on_removal(mock: respx.MockRouter, proxy: Proxy) -> None:
    mock.post("/proxies/pg/toxics").mock(return_value=httpx.Response(200, json=toxic_json()))
    mock.delete("/proxies/pg/toxics/latency_downstream").mock(
        return_value=error_response(404, "toxic not found")
    )
    with proxy.toxic("latency", latency=100):
        pass  # e.g. a reset() inside the block already removed it


def test_failed_removal_does_not_hide_the_block_error(
    mock: respx.MockRouter, proxy: Proxy, caplog: pytest.LogCaptureFixture
) -> None:
    mock.post("/proxies/pg/toxics").mock(return_value=httpx.Response(200, json=toxic_json()))
    mock.delete("/proxies/pg/toxics/latency_downstream").mock(
        return_value=error_response(500, "kaputt")
    )
    with (
        caplog.at_level(logging.ERROR),
        pytest.raises(RuntimeError, match="boom"),
        proxy.toxic("latency", latency=100),
    ):
        raise RuntimeError("boom")
    assert "could not remove toxic 'latency_downstream'" in caplog.text


def test_failed_removal_raises_when_the_block_succeeded(
    mock: respx.MockRouter, proxy: Proxy
) -> None:
    mock.post("/proxies/pg/toxics").mock(return_value=httpx.Response(200, json=toxic_json()))
    mock.delete("/proxies/pg/toxics/latency_downstream").mock(
        return_value=error_response(500, "kaputt")
    )
    with pytest.raises(ToxiproxyError, match="kaputt"), proxy.toxic("latency", latency=100):
        pass


def test_down_disables_then_reenables_even_on_exception(
    mock: respx.MockRouter, proxy: Proxy
) -> None:
    route = mock.patch("/proxies/pg").mock(
        side_effect=[
            httpx.Response(200, json=proxy_json(enabled=False)),
            httpx.Response(200, json=proxy_json(enabled=True)),
        ]
    )
    with pytest.raises(RuntimeError), proxy.down() as p:
        assert p.enabled is False
        raise RuntimeError("inside")
    assert proxy.enabled is True
    assert [body_of(route, i) for i in (0, 1)] == [{"enabled": False}, {"enabled": True}]


# -- error mapping ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "message", "error_type"),
    [
        (404, "proxy not found", ToxiproxyNotFound),
        (409, "proxy already exists", ToxiproxyConflict),
        (400, "missing required field: upstream", ToxiproxyError),
        (500, "listen tcp 8.8.8.8:0: bind: cannot assign requested address", ToxiproxyError),
    ],
)
def test_error_status_maps_to_typed_error(
    mock: respx.MockRouter,
    client: ToxiproxyClient,
    status: int,
    message: str,
    error_type: type[ToxiproxyError],
) -> None:
    route = mock.post("/proxies").mock(return_value=error_response(status, message))
    with pytest.raises(error_type) as info:
        client.create_proxy("pg", "127.0.0.1:5432")
    assert type(info.value) is error_type
    assert (info.value.status, info.value.message) == (status, message)
    assert (info.value.method, info.value.path) == ("POST", "/proxies")
    assert str(status) in str(info.value)
    assert route.call_count == 1  # only 503 and connection errors are retried


def test_non_json_error_body_is_kept_as_message(
    mock: respx.MockRouter, client: ToxiproxyClient
) -> None:
    mock.get("/proxies/pg").mock(return_value=httpx.Response(404, text="404 page not found\n"))
    with pytest.raises(ToxiproxyNotFound) as info:
        client.proxy("pg")
    assert info.value.message == "404 page not found"


# -- retries ------------------------------------------------------------------------------------


def test_503_is_retried_then_succeeds(mock: respx.MockRouter, client: ToxiproxyClient) -> None:
    route = mock.get("/proxies/pg").mock(
        side_effect=[
            httpx.Response(503),
            httpx.Response(503),
            httpx.Response(200, json=proxy_json()),
        ]
    )
    assert client.proxy("pg").name == "pg"
    assert route.call_count == 3


def test_503_on_every_attempt_raises_unavailable(
    mock: respx.MockRouter, client: ToxiproxyClient
) -> None:
    route = mock.delete("/proxies/pg/toxics/t").mock(return_value=httpx.Response(503))
    proxy = Proxy(client, name="pg", listen="127.0.0.1:1", upstream="u:1", enabled=True)
    with pytest.raises(ToxiproxyUnavailable) as info:
        proxy.remove_toxic("t")
    assert info.value.status == 503
    assert route.call_count == 3  # 1 + retries=2


def test_connection_error_is_retried_then_wrapped(
    mock: respx.MockRouter, client: ToxiproxyClient
) -> None:
    route = mock.post("/reset").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(ToxiproxyUnavailable) as info:
        client.reset()
    assert info.value.status is None
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert route.call_count == 3


def test_connection_error_then_success(mock: respx.MockRouter, client: ToxiproxyClient) -> None:
    mock.post("/reset").mock(side_effect=[httpx.ConnectError("refused"), httpx.Response(204)])
    client.reset()


def test_read_timeout_is_not_retried(mock: respx.MockRouter, client: ToxiproxyClient) -> None:
    route = mock.post("/reset").mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(ToxiproxyUnavailable):
        client.reset()
    assert route.call_count == 1


def test_retry_backoff_is_short_and_bounded(
    mock: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    sleeps: list[float] = []
    monkeypatch.setattr("harness.stack.toxiproxy.time.sleep", sleeps.append)
    mock.post("/reset").mock(return_value=httpx.Response(503))
    with ToxiproxyClient(BASE, retries=5, backoff_s=0.2) as c, pytest.raises(ToxiproxyUnavailable):
        c.reset()
    assert sleeps == [0.2, 0.4, 0.8, 1.0, 1.0]


def test_wait_ready_polls_until_version_answers(
    mock: respx.MockRouter, client: ToxiproxyClient
) -> None:
    route = mock.get("/version").mock(
        side_effect=[
            httpx.ConnectError("refused"),
            httpx.ConnectError("refused"),
            httpx.Response(200, json={"version": "git"}),
        ]
    )
    assert client.wait_ready(5.0, poll_s=0.0) == "git"
    assert route.call_count == 3


def test_wait_ready_raises_after_deadline(mock: respx.MockRouter, client: ToxiproxyClient) -> None:
    mock.get("/version").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(ToxiproxyUnavailable, match="not ready after"):
        client.wait_ready(0.05, poll_s=0.01)


def test_client_closes_and_is_a_context_manager() -> None:
    client = ToxiproxyClient(BASE)
    with client as c:
        assert c is client
    assert client._http.is_closed
