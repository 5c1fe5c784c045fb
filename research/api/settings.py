"""The API server's settings, read once at the edge (secrets file, then the environment).

Every value has a default, bounds and a plain message naming the setting when it is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from research.core.errors import ConfigError
from research.documents.extract import MAX_FILE_BYTES

DEFAULT_REQUESTS_PER_MINUTE = 120
DEFAULT_MAX_BODY_BYTES = 256 * 1024  # a JSON request: a question, answers, a plan
UPLOAD_OVERHEAD_BYTES = 64 * 1024  # a multipart upload's headers around one file


@dataclass(frozen=True)
class ApiSettings:
    """How the API server bounds its callers and whom it may call back."""

    requests_per_minute: int = DEFAULT_REQUESTS_PER_MINUTE  # per token
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_upload_bytes: int = MAX_FILE_BYTES + UPLOAD_OVERHEAD_BYTES
    allow_remote: bool = False  # TLS is terminated in front: listening beyond loopback is fine
    callback_allow_private: bool = False  # callbacks may go to loopback and private addresses
    callback_ports: tuple[int, ...] = ()  # callback ports allowed besides the web ports
    callback_tries: int = 5
    callback_first_wait_s: float = 2.0  # then doubled after each failed try

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ApiSettings:
        return cls(
            requests_per_minute=_number(env, "DEEP_RESEARCH_API_REQUESTS_PER_MINUTE",
                                        DEFAULT_REQUESTS_PER_MINUTE, 1, 100_000),
            max_body_bytes=_number(env, "DEEP_RESEARCH_API_MAX_BODY_BYTES",
                                   DEFAULT_MAX_BODY_BYTES, 1024, 64 * 1024 * 1024),
            allow_remote=_flag(env, "DEEP_RESEARCH_API_ALLOW_REMOTE"),
            callback_allow_private=_flag(env, "DEEP_RESEARCH_CALLBACK_ALLOW_PRIVATE"),
            callback_ports=_ports(env, "DEEP_RESEARCH_CALLBACK_ALLOWED_PORTS"),
            callback_tries=_number(env, "DEEP_RESEARCH_CALLBACK_TRIES", 5, 1, 20),
            callback_first_wait_s=float(_number(env, "DEEP_RESEARCH_CALLBACK_FIRST_WAIT_MS",
                                                2000, 0, 600_000)) / 1000,
        )


def _flag(env: Mapping[str, str], name: str) -> bool:
    value = (env.get(name) or "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"{name} takes 1 or 0 (got {value[:20]!r}).")


def _number(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise ConfigError(f"{name} takes a whole number from {low} to {high} (got {raw[:20]!r}).")
    return int(raw)


def _ports(env: Mapping[str, str], name: str) -> tuple[int, ...]:
    raw = (env.get(name) or "").strip()
    parts = [p.strip() for p in raw.split(",") if p.strip()]
    if not all(p.isdigit() and 1 <= int(p) <= 65535 for p in parts):
        raise ConfigError(f"{name} takes port numbers from 1 to 65535 separated by commas "
                          f"(got {raw[:40]!r}).")
    return tuple(int(p) for p in parts)
