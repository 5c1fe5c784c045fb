"""A local stand-in for a notification service: an HTTP server on 127.0.0.1 that keeps every
JSON body POSTed to it, for Apprise's `json://` target (https://github.com/caronc/apprise/wiki/Notify_Custom_JSON)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.port = 0
        self._lock = threading.Lock()

    def target(self, path: str = "hook") -> str:
        return f"json://127.0.0.1:{self.port}/{path}"

    def take(self, body: dict[str, Any], path: str) -> None:
        with self._lock:
            self.received.append(body)
            self.paths.append(path)

    def wait_for(self, count: int, timeout: float = 20.0) -> list[dict[str, Any]]:
        """The bodies, once `count` have come (polled; the caller asserts on what came)."""
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return list(self.received)


@contextmanager
def receiver() -> Iterator[Receiver]:
    box = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            length = int(self.headers.get("Content-Length") or 0)
            box.take(json.loads(self.rfile.read(length) or b"{}"), self.path)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    box.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield box
    finally:
        server.shutdown()
        server.server_close()
