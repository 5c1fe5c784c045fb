"""Callbacks: one signed POST when a run started with `callback_url` completes, fails, is
cancelled or waits for its person (a question, its plan, a choice of branches).

The body is `{"event": "run.completed" | "run.failed" | "run.cancelled" | "run.waiting",
"run": <the run's status, as GET /v1/runs/{id}>}`; the header `X-Signature: sha256=<hex>` is
the HMAC-SHA256 of the exact body under the token's signing secret (shown when the token was
made; `research.api.tokens`), as GitHub signs its webhooks
(https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries).
A failed delivery (no connection, a 5xx, 408 or 429) is tried again after 2, 4, 8... s, up
to `DEEP_RESEARCH_CALLBACK_TRIES` tries; other answers end it. The address must pass the
page fetcher's rules (`research.untrusted.urls.check_url`: http(s), a web port, no loopback, private,
link-local or metadata address), checked when the run starts and again before every try,
unless `DEEP_RESEARCH_CALLBACK_ALLOW_PRIVATE` / `DEEP_RESEARCH_CALLBACK_ALLOWED_PORTS` allow
more. Redirects are not followed.

The watcher is one thread of the API server: each second it reads the runs still watched
(`storage.tokens.watched_runs`, kept in the store so a restarted server still sends what it
owes), claims each new state in the store (`claim_callback`: of several API servers on one
store, one sends it) and hands it to a small pool of senders. A server stopped in the middle
of a delivery does not send that state again: at most once, never twice.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx

from research.api.context import ApiContext
from research.api.errors import ApiError
from research.api.settings import ApiSettings
from research.api.status import run_status
from research.api.tokens import signing_secret
from research.core.errors import FetchRefused
from research.untrusted.fetch import FetchLimits, guarded_transport
from research.untrusted.urls import check_url
from storage import TERMINAL_STATUSES
from storage import tokens as tokenstore
from storage.tokens import Callback

log = logging.getLogger(__name__)

SEND_TIMEOUT_S = 10.0
SENDERS = 4
RETRY_STATUSES = frozenset({408, 429})


def check_callback_url(settings: ApiSettings, url: str) -> str:
    """The address, or a 422 saying in plain words why a POST may not go there."""
    try:
        check_url(url.strip(), allow_private=settings.callback_allow_private,
                  allowed_ports=settings.callback_ports)
    except FetchRefused as exc:
        raise ApiError(422, "callback_refused", f"callback_url: {exc} (callbacks follow the "
                       "page fetcher's rules; DEEP_RESEARCH_CALLBACK_ALLOW_PRIVATE and "
                       "DEEP_RESEARCH_CALLBACK_ALLOWED_PORTS allow more).") from None
    return url.strip()


def signature(secret: str, body: bytes) -> str:
    """The X-Signature header's value for `body`."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


class CallbackWatcher:
    """The API server's thread that sends what the watched runs are owed."""

    def __init__(self, ctx: ApiContext, *, every_s: float = 1.0) -> None:
        self.ctx = ctx
        self.every_s = every_s
        self._stop = threading.Event()
        self._sending: set[str] = set()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=SENDERS, thread_name_prefix="callback")
        self._thread = threading.Thread(target=self._loop, name="callback-watcher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.tick()
            except Exception:  # noqa: BLE001 - one bad look must not end the watching
                log.exception("the callback watcher could not look at the runs")

    def tick(self) -> None:
        """Hand every watched run whose state changed to a sender."""
        store = self.ctx.store
        for watched in tokenstore.watched_runs(store):
            run = store.get_run(watched.run_id)
            if run is None:  # deleted: nothing left to tell
                tokenstore.record_callback(store, watched.run_id, notified=watched.notified,
                                           done=True, attempts=watched.attempts)
                continue
            state = self._state(run.id)
            if state is None or state == watched.notified:
                continue
            with self._lock:
                if watched.run_id in self._sending:
                    continue
                self._sending.add(watched.run_id)
            if tokenstore.claim_callback(store, watched.run_id, seen=watched.notified,
                                         state=state):
                self._pool.submit(self._deliver, watched, state)
            else:  # another API server on this store took it
                with self._lock:
                    self._sending.discard(watched.run_id)

    def _state(self, run_id: str) -> str | None:
        """What a POST is owed for: "completed", "failed", "cancelled", "waiting:<what>"."""
        run = self.ctx.store.get_run(run_id)
        if run is None:
            return None
        status = self.ctx.door.status(run)
        if status in TERMINAL_STATUSES:
            return status
        if status == "waiting":
            waiting = run_status(self.ctx, run).waiting_for
            kind = waiting.kind if waiting else "nothing"
            return f"waiting:{kind}" + (f":{waiting.round}" if waiting and waiting.round else "")
        return None

    def _deliver(self, watched: Callback, state: str) -> None:
        try:
            attempts, error = self._send(watched, state)
            tokenstore.record_callback(self.ctx.store, watched.run_id, notified=state,
                                       done=state in TERMINAL_STATUSES,
                                       attempts=watched.attempts + attempts, error=error)
        except Exception:  # noqa: BLE001 - a sender's failure is logged, the watcher goes on
            log.exception("could not deliver the callback of run %s", watched.run_id)
        finally:
            with self._lock:
                self._sending.discard(watched.run_id)

    def _send(self, watched: Callback, state: str) -> tuple[int, str | None]:
        """POST the run's status, trying again with back-off; (tries, last error or None)."""
        run = self.ctx.store.get_run(watched.run_id)
        if run is None:
            return 0, None
        event = f"run.{state.split(':')[0]}"
        payload = {"event": event, "run": run_status(self.ctx, run).model_dump(mode="json")}
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        secret = signing_secret(self.ctx.env(), self.ctx.secret_folder, watched.token_id)
        headers = {"Content-Type": "application/json", "X-Signature": signature(secret, body),
                   "X-Deep-Research-Event": event,
                   "X-Deep-Research-Delivery": uuid.uuid4().hex,
                   "User-Agent": "DeepResearchStudio-Callback/1"}
        settings = self.ctx.settings
        wait, error = settings.callback_first_wait_s, None
        # Checked again where it connects (the fetcher's guard): no DNS answer that changed
        # since check_callback_url can send the POST to a private address.
        guarded = guarded_transport(FetchLimits(allow_private_hosts=settings.callback_allow_private,
                                                allowed_ports=settings.callback_ports))
        for attempt in range(1, settings.callback_tries + 1):
            try:
                check_callback_url(settings, watched.url)
                with httpx.Client(timeout=SEND_TIMEOUT_S, follow_redirects=False,
                                  trust_env=False, transport=guarded) as client:
                    answer = client.post(watched.url, content=body, headers=headers)
                if answer.is_success:
                    return attempt, None
                error = f"the receiver answered {answer.status_code}"
                if answer.status_code < 500 and answer.status_code not in RETRY_STATUSES:
                    return attempt, error
            except ApiError as exc:
                return attempt, exc.message
            except FetchRefused:  # the name now resolves to an address callbacks may not reach
                return attempt, "the callback address now leads somewhere callbacks may not go"
            except httpx.HTTPError as exc:
                error = "could not reach the receiver" + (
                    " in time" if isinstance(exc, httpx.TimeoutException) else "")
            if attempt < settings.callback_tries and self._stop.wait(wait):
                return attempt, "the server stopped"
            wait *= 2
        return settings.callback_tries, error

