"""Web fetches go only to web ports: 80, 443, 8080, 8443 and those the person allows.

A URL or a redirect pointing at :22 or :25 is refused before any DNS lookup or connection
(a resolver and a listener count what happens); the setting `DEEP_RESEARCH_ALLOWED_PORTS`
adds ports, and is how the tests reach the stand-in on its random port.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from research.core.config import build_config
from research.core.errors import ConfigError, FetchRefused
from research.untrusted.fetch import Fetcher, FetchLimits
from research.untrusted.urls import WEB_PORTS, check_url
from tests.standin import StandinServer

PUBLIC = "93.184.216.34"


class Listener:
    """A TCP listener on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def settle(self) -> int:
        """The count once any connection in flight has been accepted."""
        time.sleep(0.3)
        return self.accepted

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@pytest.mark.parametrize("port", [22, 25])
def test_an_odd_port_on_a_public_address_is_refused_before_any_connection(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    connects: list[object] = []
    lookups: list[str] = []
    real_connect = socket.socket.connect
    monkeypatch.setattr(socket.socket, "connect",
                        lambda self, address: connects.append(address) or real_connect(self, address))
    monkeypatch.setattr(socket, "create_connection",
                        lambda address, *a, **k: connects.append(address))

    def resolve(host: str) -> list[str]:
        lookups.append(host)
        return [PUBLIC]

    with Fetcher(FetchLimits(timeout_s=3), resolver=resolve) as fetcher:
        for url in (f"http://{PUBLIC}:{port}/", f"https://mail.example:{port}/"):
            with pytest.raises(FetchRefused, match=f"port {port} is not a web port"):
                fetcher.fetch(url)
    assert connects == [] and lookups == []


def test_the_web_ports_are_allowed() -> None:
    assert WEB_PORTS == {80, 443, 8080, 8443}
    for port in sorted(WEB_PORTS):
        assert check_url(f"http://{PUBLIC}:{port}/", allow_private=False) == [PUBLIC]
    assert check_url(f"https://{PUBLIC}/", allow_private=False) == [PUBLIC]


def test_allowing_private_hosts_does_not_open_every_port(listener: Listener) -> None:
    url = f"http://127.0.0.1:{listener.port}/"
    with Fetcher(FetchLimits(allow_private_hosts=True, timeout_s=3)) as fetcher:
        with pytest.raises(FetchRefused, match=f"port {listener.port}"):
            fetcher.fetch(url)
    assert listener.settle() == 0
    # The same address with its port allowed is connected to (so the count above can move).
    with Fetcher(FetchLimits(allow_private_hosts=True, allowed_ports=(listener.port,),
                             timeout_s=2)) as fetcher:
        with pytest.raises(Exception):  # noqa: B017 - the listener hangs up without answering
            fetcher.fetch(url)
    assert listener.settle() >= 1


def test_a_redirect_to_an_odd_port_is_refused(
    standin: StandinServer, standin_env: dict[str, str], listener: Listener
) -> None:
    limits = FetchLimits(allow_private_hosts=True, allowed_ports=(standin.port,), timeout_s=5)
    with Fetcher(limits) as fetcher:
        with pytest.raises(FetchRefused, match=f"port {listener.port} is not a web port"):
            fetcher.fetch(f"{standin.base_url}/pages/hostile/redirect-port/{listener.port}")
    assert listener.settle() == 0
    assert any(r["path"].endswith(f"/redirect-port/{listener.port}") for r in standin.requests)


def test_a_redirect_from_a_public_page_to_port_25_is_refused() -> None:
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(302, headers={"Location": f"http://{PUBLIC}:25/"})

    with Fetcher(FetchLimits(), transport=httpx.MockTransport(handle),
                 resolver=lambda host: [PUBLIC]) as fetcher:
        with pytest.raises(FetchRefused, match="port 25"):
            fetcher.fetch("https://news.example/a")
    assert seen == ["https://news.example/a"]


def test_more_ports_are_a_setting() -> None:
    config = build_config(env={"DEEP_RESEARCH_ALLOWED_PORTS": "8000, 9000"})
    assert config.allowed_ports == (8000, 9000)
    assert build_config(env={}).allowed_ports == ()
    with pytest.raises(ConfigError, match="DEEP_RESEARCH_ALLOWED_PORTS"):
        build_config(env={"DEEP_RESEARCH_ALLOWED_PORTS": "ssh"})
    with pytest.raises(ConfigError, match="DEEP_RESEARCH_ALLOWED_PORTS"):
        build_config(env={"DEEP_RESEARCH_ALLOWED_PORTS": "70000"})
