"""The API server's bounds: requests per token per minute (429 with Retry-After, each token
counted apart), and no listening beyond this computer without --allow-remote."""

from __future__ import annotations

from pathlib import Path

from tests.api_server import ApiServer, research


def test_a_token_past_its_requests_per_minute_gets_429_with_retry_after(tmp_path: Path) -> None:
    env = {"DEEP_RESEARCH_DB": str(tmp_path / "research.db"),
           "DEEP_RESEARCH_API_REQUESTS_PER_MINUTE": "5"}
    server = ApiServer.start(env, tmp_path)
    try:
        busy, other = server.token("busy@example.com"), server.token("other@example.com")
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
        tmp_path: Path) -> None:
    env = {"DEEP_RESEARCH_DB": str(tmp_path / "research.db")}
    refused = research(["serve", "--host", "0.0.0.0", "--port", "9"], env, tmp_path)
    assert refused.returncode == 2
    assert "--allow-remote" in refused.stderr and "TLS" in refused.stderr
    assert "Traceback" not in refused.stderr
    wrong = research(["serve", "--port", "70000"], env, tmp_path)
    assert wrong.returncode == 2 and "65535" in wrong.stderr
