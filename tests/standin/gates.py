"""The request handler's gates for limits (limits.py) and local model servers (local.py).

A mixin of server.py's handler, so the handler's `_dispatch` only calls `_pass_limits` (the
account's books, a search API's pace), `_local_turn` (a local server's window and queue) and
`_after_limits` (give back what they took); the answers themselves are built in limits.py and
local.py.
"""

from __future__ import annotations

import select
import socket
import time
from typing import TYPE_CHECKING, Any

from tests.standin import local
from tests.standin.limits import Admission, search_refusal

if TYPE_CHECKING:
    from tests.standin.server import StandinServer


class LimitGates:
    standin: StandinServer
    _entry: dict[str, Any]
    _admission: Admission | None
    _gates: list[str]
    _prompt_chars: int
    _gen: int

    def _pass_limits(self, api: str, method: str, path: str, body: Any) -> bool:
        """Take the request off its account's books; False when refused (answer sent)."""
        limits = self.standin.limits
        if api in ("openai", "gemini") and limits.limited(api) and isinstance(body, dict):
            if api == "openai":
                key = str(self.headers.get("Authorization", ""))
                model = str(body.get("model") or "")
                max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)
            else:
                key = str(self.headers.get("x-goog-api-key") or "")
                from tests.standin.server import _GEMINI_PATH

                match = _GEMINI_PATH.match(path)
                model, max_tokens = (match.group(1) if match else ""), 0
            admission = limits.admit(api, key, model, max(1, self._prompt_chars // 4), max_tokens)
            if admission.refused:
                self._entry["rate_limited"] = True
                self._send_json(admission.status, admission.body, admission.headers)
                return False
            self._admission = admission
        elif api in ("tavily", "arxiv", "semanticscholar") and limits.limited(api):
            rule = limits.admit_search(api)
            if rule is not None:
                self._entry["rate_limited"] = True
                status, payload, headers = search_refusal(api, rule)
                if isinstance(payload, str):
                    self._send(status, payload.encode(), "text/plain; charset=utf-8", headers)
                else:
                    self._send_json(status, payload, headers)
                return False
            self._gates.append("search")
        return True

    def _local_turn(self, api: str, body: Any) -> bool:
        """As a local model server: refuse a prompt over the window, then wait for a free slot;
        False when the answer is sent (or the request abandoned)."""
        server = self.standin.local_server
        if api != "openai" or server is None or not isinstance(body, dict):
            return True
        max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)
        refused = local.refusal(server, max(1, self._prompt_chars // 4), max_tokens)
        if refused is not None:
            self._send_json(*refused)
            return False
        gen = self._gen
        standin = self.standin
        # A real server drops a queued request whose client gave up (its time limit passed).
        turn = standin.slots.acquire(lambda: standin._stopping.is_set()
                                     or gen != standin._generation or self._client_gone())
        if turn == "full":
            self._send_json(*local.BUSY)
            return False
        if turn != "ok":
            self.close_connection = True
            return False
        self._gates.append("slot")
        self._entry["started"] = time.time()
        return True

    def _client_gone(self) -> bool:
        """Whether the client closed the connection while waiting (logged as `client_gone`)."""
        try:
            poller = select.poll()  # not select.select: a busy test process has fds past 1023
            poller.register(self.connection, select.POLLIN)
            readable = poller.poll(0)
            gone = bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            gone = True
        if gone:
            self._entry["client_gone"] = True
        return gone

    def _after_limits(self, api: str) -> None:
        self._entry["ended"] = time.time()
        if "slot" in self._gates:
            self.standin.slots.release()
        if "search" in self._gates:
            self.standin.limits.search_done(api)
        if self._admission is not None and "completion_tokens" in self._entry:
            self.standin.limits.settle(self._admission, int(self._entry["completion_tokens"]))

    # a local model server describing itself (local.py)
    def _api_local(self, path: str, query: str, body: Any) -> None:
        answer = local.info(self.standin.local_server, self.command, path, body)
        if answer is not None and self.standin.local_server is None and not str(
                self.headers.get("Authorization", "")).startswith("Bearer "):
            from tests.standin.server import _default_error_body

            answer = 401, _default_error_body("openai", 401)  # OpenAI's own /v1/models
        if answer is None:
            self._send_json(404, {"error": f"No route for {self.command} {path}"})
        elif isinstance(answer[1], str):
            self._send(answer[0], answer[1].encode(), "text/plain; charset=utf-8")
        else:
            self._send_json(*answer)
