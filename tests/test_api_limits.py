"""The API server's bounds: requests per token per minute (429 with Retry-After, each token
counted apart), and no listening beyond this computer without --allow-remote."""

from __future__ import annotations

from pathlib import Path

import pytest

from research.api.commands import is_loopback, main
from tests.api_server import ApiServer


def test_a_token_past_its_requests_per_minute_gets_429_with_retry_after(tmp_path: Path) -> None:
    env = {"DEEP_RESEARCH_DB": str(tmp_path / "research.db"),
           "DEEP_RESEARCH_API_REQUESTS_PER_MINUTE": "5"}
    server = ApiServer.start(env, tmp_path)
    try:
        busy, other = server.quick_token("busy@example.com"), server.quick_token("other@example.com")
        with server.client(busy) as client:
            answers = [client.get("/v1/runs") for _ in range(7)]
        assert [a.status_code for a in answers] == [200] * 5 + [429] * 2
        refused = answers[-1]
        assert refused.json()["error"]["code"] == "rate_limited"
        assert "5 requests in a minute" in refused.json()["error"]["message"]
        assert 1 <= int(refused.headers["Retry-After"]) <= 60
        with server.client(other) as client:  # another token is counted on its own
            assert client.get("/v1/runs").status_code == 200
    finally:
        server.stop()


def test_serve_refuses_to_listen_beyond_loopback_unless_told_tls_is_in_front(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    # In-process: the refusal comes before anything listens (the subprocess form of serve is
    # what every other API test starts).
    monkeypatch.setenv("DEEP_RESEARCH_DB", str(tmp_path / "research.db"))
    monkeypatch.setenv("DEEP_RESEARCH_SECRETS_FILE", str(tmp_path / "no-secrets.toml"))
    monkeypatch.delenv("DEEP_RESEARCH_API_ALLOW_REMOTE", raising=False)
    assert main(["serve", "--host", "0.0.0.0", "--port", "9"]) == 2
    refused = capsys.readouterr().err
    assert "--allow-remote" in refused and "TLS" in refused and "Traceback" not in refused
    assert main(["serve", "--host", "192.168.1.5", "--port", "9"]) == 2
    assert main(["serve", "--port", "70000"]) == 2
    assert "65535" in capsys.readouterr().err
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")
