"""Callbacks without a server: the address rules, the signature, and the claim that lets only
one of several API servers on a store send a run's POST."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import pytest

from research.api.callbacks import check_callback_url, signature
from research.api.errors import ApiError
from research.api.settings import ApiSettings
from research.api.tokens import signing_secret
from storage import Store
from storage import tokens as tokenstore


def test_callback_addresses_follow_the_fetchers_rules_unless_a_setting_allows_more() -> None:
    strict = ApiSettings()
    for url, words in (("http://127.0.0.1/hook", "loopback"), ("http://10.1.2.3/", "private"),
                       ("https://169.254.169.254/latest", "metadata"),
                       ("http://93.184.215.14:22/", "port 22"), ("ftp://example.org/", "http"),
                       ("http://user@93.184.215.14/", "user name")):
        with pytest.raises(ApiError) as refused:
            check_callback_url(strict, url)
        assert refused.value.status == 422 and refused.value.code == "callback_refused"
        assert words in refused.value.message, (url, refused.value.message)
    assert check_callback_url(strict, "https://93.184.215.14/hook") == "https://93.184.215.14/hook"
    loose = ApiSettings(callback_allow_private=True, callback_ports=(9000,))
    assert check_callback_url(loose, "http://127.0.0.1:9000/hook")
    with pytest.raises(ApiError):
        check_callback_url(loose, "http://169.254.169.254/")  # metadata: never
    with pytest.raises(ApiError):
        check_callback_url(loose, "http://127.0.0.1:9001/")


def test_settings_refuse_values_out_of_bounds_with_the_settings_name() -> None:
    assert ApiSettings.from_env({}).requests_per_minute == 120
    for name, value in (("DEEP_RESEARCH_API_REQUESTS_PER_MINUTE", "0"),
                        ("DEEP_RESEARCH_CALLBACK_ALLOWED_PORTS", "80,x"),
                        ("DEEP_RESEARCH_API_ALLOW_REMOTE", "maybe")):
        with pytest.raises(Exception) as refused:
            ApiSettings.from_env({name: value})
        assert name in str(refused.value)


def test_the_signature_is_the_hmac_of_the_exact_body_under_the_tokens_secret(
        tmp_path: Path) -> None:
    secret = signing_secret({}, tmp_path, "tok_1")
    assert secret == signing_secret({}, tmp_path, "tok_1")  # the server's secret is kept
    assert secret != signing_secret({}, tmp_path, "tok_2")
    assert (tmp_path / "api-secret").stat().st_mode & 0o077 == 0
    body = b'{"event": "run.completed"}'
    assert signature(secret, body) == "sha256=" + hmac.new(
        secret.encode(), body, hashlib.sha256).hexdigest()
    assert signature(secret, body + b" ") != signature(secret, body)
    configured = signing_secret({"DEEP_RESEARCH_API_SECRET": "shared"}, tmp_path, "tok_1")
    assert configured != secret  # several servers share the setting, not the file


def test_only_one_server_claims_a_runs_callback(tmp_db: Path) -> None:
    store = Store(tmp_db)
    tokenstore.watch_run(store, "run1", token_id="tok_1", url="https://example.org/hook")
    assert tokenstore.claim_callback(store, "run1", seen="", state="waiting:plan")
    assert not tokenstore.claim_callback(store, "run1", seen="", state="waiting:plan")
    assert tokenstore.claim_callback(store, "run1", seen="waiting:plan", state="completed")
    tokenstore.record_callback(store, "run1", notified="completed", done=True, attempts=1)
    assert tokenstore.watched_runs(store) == []


def test_a_callback_connects_only_where_the_fetchers_guard_allows_when_it_connects() -> None:
    # The address is checked again at connect time, on the address actually dialled: a name
    # whose DNS answer changed after check_callback_url cannot send the POST somewhere private.
    import http.server
    import threading

    import httpx

    from research.core.errors import FetchRefused
    from research.untrusted.fetch import FetchLimits, guarded_transport

    got: list[bytes] = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the standard library's name
            got.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    try:
        with httpx.Client(transport=guarded_transport(FetchLimits()), trust_env=False) as client:
            with pytest.raises(FetchRefused):
                client.post(url, content=b"{}")
        assert got == []
        loose = FetchLimits(allow_private_hosts=True, allowed_ports=(server.server_address[1],))
        with httpx.Client(transport=guarded_transport(loose), trust_env=False) as client:
            assert client.post(url, content=b"{}").status_code == 204
        assert got == [b"{}"]
    finally:
        server.shutdown()
