"""Asking a model server of one's own what it is and what it allows (research/llm/local_server.py).

Cheap GETs and one POST to the configured server only (built from its base URL, no redirect
followed, no proxy from the environment, a short time limit, a capped answer); any failure
means "not known", never an error. Where each fact comes from:

- Ollama, https://github.com/ollama/ollama/blob/main/docs/api.md: `POST /api/show` gives
  `model_info["<arch>.context_length"]` (what the model was trained for: an upper bound) and
  `parameters` ("num_ctx 8192" when the model sets its window); `GET /api/ps` the
  `context_length` a loaded model really runs with; `GET /api/version` the version, whose
  default window the FAQ gives (https://docs.ollama.com/faq, "How can I specify the context
  window size?": 2048 tokens before v0.6.7, 4096 since; from v0.15.5 chosen by VRAM, 4096 below
  24 GiB, https://docs.ollama.com/context-length).
- llama.cpp, https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md: `GET
  /props` gives `total_slots` ("defined by `--parallel`") and
  `default_generation_settings.n_ctx`, one slot's window.
- vLLM, https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html: `GET /v1/models`
  lists each model with `owned_by: "vllm"` and `max_model_len`.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from research.core.errors import FetchRefused
from research.llm.limits import AccountLimits
from research.untrusted.urls import IPAddress, parse_ip, refusal_kind

PROBE_TIMEOUT_S = 2.0          # each discovery request; a server that is slower is asked nothing
PROBE_MAX_BYTES = 1_000_000    # what we read of one discovery answer
OLLAMA_DEFAULT_CONTEXT = 4096  # since v0.6.7; 2048 before (docs.ollama.com/faq)
OLLAMA_OLD_DEFAULT_CONTEXT = 2048
KINDS = {"ollama": "Ollama", "llamacpp": "llama.cpp", "vllm": "vLLM"}


@dataclass(frozen=True)
class Discovery:
    """What one look at the server found: its kind ("" unknown) and what it allows."""

    kind: str = ""
    limits: AccountLimits = AccountLimits()
    version: str = ""


# --- where the server is ---------------------------------------------------------------------

def is_private_host(host: str, resolve: bool = True) -> bool:
    """True for loopback, private (RFC 1918, unique-local), link-local and shared (CGNAT)
    addresses, and names that resolve only to those. Cloud metadata addresses are never local
    servers (research.untrusted.urls refuses them everywhere)."""
    addresses = host_addresses(host, resolve)
    return bool(addresses) and all(
        refusal_kind(a, allow_private=True) is None and refusal_kind(a, allow_private=False)
        for a in addresses)


def host_addresses(host: str, resolve: bool = True) -> list[IPAddress]:
    """The addresses `host` stands for: itself when written as an IP, else what it resolves to
    ([] when it does not; loopback for "localhost")."""
    host = host.strip("[]").lower().rstrip(".")
    if not host:
        return []
    if host == "localhost" or host.endswith(".localhost"):
        return [ipaddress.ip_address("127.0.0.1")]
    try:
        literal = parse_ip(host)
    except FetchRefused:
        return []
    if literal is not None:
        return [literal]
    if not resolve:
        return []
    with contextlib.suppress(OSError, UnicodeError, ValueError):
        return [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
                for info in socket.getaddrinfo(host, None)]
    return []


def never_asked(host: str) -> bool:
    """A host no request of ours may reach outside what the person sends it: a cloud metadata
    service (by name or address), or an address that is not a usable one."""
    if host.lower().rstrip(".") in ("metadata", "metadata.google.internal"):
        return True
    return any(refusal_kind(a, allow_private=True) is not None for a in host_addresses(host))


def server_root(base_url: str) -> str:
    """The server's own address: the base URL without its OpenAI-compatible `/v1` part, where
    Ollama's `/api/...` and llama.cpp's `/props` live."""
    parts = urlsplit(base_url.strip())
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return f"{parts.scheme}://{parts.netloc}{path}"


# --- asking the server -----------------------------------------------------------------------

Getter = Callable[[str, str, dict[str, Any] | None], Any]  # (method, url, json body) -> JSON


def discover(base_url: str, model: str, api_key: str = "", get: Getter | None = None) -> Discovery:
    """Ask the server at `base_url` what it is and what it allows for `model`. Every request
    goes to that host, follows no redirect and is time-bounded; any failure means "not known"."""
    if get is None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        with httpx.Client(timeout=PROBE_TIMEOUT_S, follow_redirects=False, trust_env=False,
                          headers=headers) as client:
            return discover(base_url, model, api_key, _http_getter(client))
    ask = get
    base = base_url.rstrip("/")
    root = server_root(base_url)

    def fetch(method: str, url: str, body: dict[str, Any] | None = None) -> Any:
        try:
            return ask(method, url, body)
        except Exception:  # noqa: BLE001 - discovery is never fatal: not known is an answer
            return None

    listed = fetch("GET", f"{base}/models")
    entry = _model_entry(listed, model)
    owner = str(entry.get("owned_by", "")).lower() if entry else ""
    if owner == "vllm":
        length = positive(entry.get("max_model_len")) if entry else None
        return Discovery("vllm", AccountLimits(context_tokens=length, source="vLLM's /v1/models"))
    props = fetch("GET", f"{root}/props") if owner in ("llamacpp", "") else None
    if isinstance(props, dict) and isinstance(props.get("default_generation_settings"), dict):
        return _llamacpp(props)
    version = fetch("GET", f"{root}/api/version")
    if isinstance(version, dict) and isinstance(version.get("version"), str):
        shown = fetch("POST", f"{root}/api/show", {"model": model})
        running = fetch("GET", f"{root}/api/ps")
        return _ollama(str(version["version"]), shown, running, model)
    return Discovery()


def _llamacpp(props: dict[str, Any]) -> Discovery:
    settings = props["default_generation_settings"]
    return Discovery("llamacpp", AccountLimits(
        parallel=positive(props.get("total_slots")),
        context_tokens=positive(settings.get("n_ctx")),
        source="llama.cpp's /props"))


def _ollama(version: str, shown: Any, running: Any, model: str) -> Discovery:
    """Ollama's window for `model`: what the loaded model runs with, else its `num_ctx`, else
    the version's default; never more than the model was trained for."""
    trained = None
    num_ctx = None
    if isinstance(shown, dict):
        info = shown.get("model_info")
        if isinstance(info, dict):
            arch = info.get("general.architecture")
            trained = positive(info.get(f"{arch}.context_length")) if arch else None
            if trained is None:  # an architecture key we do not know: any "*.context_length"
                trained = next((positive(v) for k, v in info.items()
                                if k.endswith(".context_length") and positive(v)), None)
        match = re.search(r"(?m)^\s*num_ctx\s+(\d+)", str(shown.get("parameters") or ""))
        num_ctx = int(match.group(1)) if match else None
    loaded = None
    if isinstance(running, dict) and isinstance(running.get("models"), list):
        for row in running["models"]:
            if isinstance(row, dict) and model in (row.get("name"), row.get("model")):
                loaded = positive(row.get("context_length"))
    window = loaded or num_ctx or _ollama_default(version)
    if trained:
        window = min(window, trained)
    how = ("the loaded model's context_length (/api/ps)" if loaded else
           "its num_ctx (/api/show)" if num_ctx else f"Ollama {version}'s default window")
    return Discovery("ollama", AccountLimits(context_tokens=window, source=f"Ollama: {how}"),
                     version=version)


def _ollama_default(version: str) -> int:
    numbers = [int(n) for n in re.findall(r"\d+", version)[:3]]
    if numbers and tuple(numbers) < (0, 6, 7):
        return OLLAMA_OLD_DEFAULT_CONTEXT
    return OLLAMA_DEFAULT_CONTEXT


def _model_entry(listed: Any, model: str) -> dict[str, Any] | None:
    if not isinstance(listed, dict) or not isinstance(listed.get("data"), list):
        return None
    rows = [r for r in listed["data"] if isinstance(r, dict)]
    for row in rows:
        if row.get("id") == model:
            return row
    return rows[0] if len(rows) == 1 else None


def positive(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _http_getter(client: httpx.Client) -> Getter:
    """Plain HTTP to the configured host on `client`: no redirects followed, a short time limit
    for the whole answer (a server trickling bytes is not waited for), a capped answer."""

    def get(method: str, url: str, body: dict[str, Any] | None) -> Any:
        ends = time.monotonic() + 2 * PROBE_TIMEOUT_S
        with client.stream(method, url, json=body) as response:
            if response.status_code != 200:
                return None
            data = b""
            for chunk in response.iter_bytes():
                data += chunk
                if len(data) > PROBE_MAX_BYTES or time.monotonic() > ends:
                    return None
            return json.loads(data)

    return get
