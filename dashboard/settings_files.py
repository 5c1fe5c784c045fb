"""What the Settings page reads and writes: the secrets file and the saved default constants.

Keys and provider settings go to `.streamlit/secrets.toml` (git-ignored, mode 600), which
`research.core.settings.effective_env` reads; the real environment always wins over it. Default
constants for the New research form go to `defaults.json` next to the database.
`DEEP_RESEARCH_SECRETS_FILE` points the dashboard at another secrets file (tests use it).
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import tomllib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from research.core.config import ROLES
from research.core.constants import CONSTANTS, DEFAULTS, bound_problem
from research.core.settings import effective_env, secrets_file

KEYS = {
    "OPENAI_API_KEY": "OpenAI",
    "GEMINI_API_KEY": "Gemini",
    "ANTHROPIC_API_KEY": "Anthropic (Claude)",
    "TAVILY_API_KEY": "Tavily search",
    "SEMANTIC_SCHOLAR_API_KEY": "Semantic Scholar (optional, raises its rate limit)",
    "BRAVE_API_KEY": "Brave Search",
    "EXA_API_KEY": "Exa search",
    "SERPER_API_KEY": "Serper search (Google results)",
}
PLAIN_SETTINGS = (
    "DEEP_RESEARCH_PROVIDER", "DEEP_RESEARCH_MODEL",
    *(f"DEEP_RESEARCH_{role.upper()}_MODEL" for role in ROLES if role != "lead"),
    "DEEP_RESEARCH_SEARCH", "OPENAI_BASE_URL", "GEMINI_BASE_URL", "ANTHROPIC_BASE_URL",
    "TAVILY_BASE_URL", "SEARXNG_BASE_URL",
)


def secrets_path(environ: Mapping[str, str] | None = None) -> Path:
    return secrets_file(environ)


def current_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The effective settings: the secrets file overridden by the environment."""
    return effective_env(environ)


def mask(value: str | None) -> str:
    """'sk-proj-abc...wxyz' -> 'sk-…wxyz'; short values never show more than 2 characters."""
    value = (value or "").strip()
    if not value:
        return "not set"
    if len(value) < 12:
        return "•" * 6 + " (set)"
    return f"{value[:3]}…{value[-4:]}"


def origin(name: str, environ: Mapping[str, str] | None = None,
           file_values: Mapping[str, str] | None = None) -> str | None:
    """'environment', 'secrets file' or None, with the environment winning as it does at run time."""
    environ = os.environ if environ is None else environ
    if (environ.get(name) or "").strip():
        return "environment"
    if file_values is None:
        file_values = read_secrets(secrets_path(environ))
    if (str(file_values.get(name) or "")).strip():
        return "secrets file"
    return None


def read_secrets(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SettingsFileError(
            f"{path} could not be read ({exc}). Fix or delete the file, then try again."
        ) from None


class SettingsFileError(Exception):
    """A settings file could not be read or written; the message says what to do."""


def save_secrets(updates: Mapping[str, str | None], path: Path | None = None) -> Path:
    """Set (or, with '' / None, remove) top-level values in the secrets file, owner-only.

    Other content of the file (for example tables used by other Streamlit features) is kept.
    """
    def change(data: dict[str, Any]) -> None:
        for name, value in updates.items():
            value = (value or "").strip()
            if value:
                data[name] = value
            else:
                data.pop(name, None)

    return _rewrite_secrets(path or secrets_path(), change)


def _rewrite_secrets(path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """Read the latest secrets file, `change` it and write it back as one locked step,
    owner-only."""
    try:
        with _locked(path):
            data = read_secrets(path)
            change(data)
            _replace(path, _toml_dumps(data), prefix=".secrets-")
        os.chmod(path, 0o600)
    except OSError as exc:
        raise SettingsFileError(f"Could not save {path} ({exc.strerror or exc}).") from None
    return path


def save_secrets_table(table: str, key: str, fields: Mapping[str, Any] | None,
                       path: Path | None = None) -> Path:
    """Set (or, with None, remove) the table `[table.key]` of the secrets file, owner-only
    (e.g. an MCP server's settings, see dashboard.mcp_settings); the rest of the file is kept."""
    def change(data: dict[str, Any]) -> None:
        tables = data.get(table) if isinstance(data.get(table), dict) else {}
        if fields is None:
            tables.pop(key, None)
        else:
            tables[key] = dict(fields)
        if tables:
            data[table] = tables
        else:
            data.pop(table, None)

    return _rewrite_secrets(path or secrets_path(), change)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock beside `path` while a save reads and rewrites it.

    Two Settings pages saving at once would otherwise each read the old file and the later
    write would drop the earlier change. `flock` locks belong to the open file, so this
    serialises threads of one server as well as separate processes.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(f".{path.name}.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _replace(path: Path, text: str, *, prefix: str) -> None:
    """Write `text` to a temporary file beside `path` (owner-only) and move it into place."""
    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    # A JSON string is a valid TOML basic string (same escapes, \uXXXX included).
    return json.dumps(str(value), ensure_ascii=True)


def _toml_key(key: str) -> str:
    bare = key and all(c.isalnum() or c in "_-" for c in key) and key.isascii()
    return key if bare else json.dumps(key, ensure_ascii=True)


def _toml_dumps(data: Mapping[str, Any], prefix: str = "") -> str:
    lines = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in data.items()
             if not isinstance(v, Mapping)]
    for key, value in data.items():
        if isinstance(value, Mapping):
            name = f"{prefix}{_toml_key(key)}"
            lines += ["", f"[{name}]", _toml_dumps(value, prefix=name + ".").rstrip("\n")]
    return "\n".join(lines) + "\n"


# -- default constants ---------------------------------------------------------------------

def defaults_path(db_path: Path) -> Path:
    return db_path.parent / "defaults.json"


def load_defaults(path: Path) -> dict[str, Any]:
    """Saved default constants (only known names, valid values); missing file -> {}."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if k in CONSTANTS and _valid(k, v)}


def save_defaults(values: Mapping[str, Any], path: Path,
                  base: Mapping[str, Any] | None = None) -> None:
    """Save default constants, merged into the latest file under a lock.

    `base` is what the page showed when the person started editing: only the values that
    differ from it are applied, so a save from an older page keeps what another save changed
    meanwhile. Without `base`, every value in `values` is applied.
    """
    problems = [f"Unknown setting {name}." if name not in CONSTANTS else bound_problem(name, value)
                for name, value in values.items()]
    if any(problems):
        raise SettingsFileError("Not saved: " + " ".join(p for p in problems if p))
    edits = {k: v for k, v in values.items()
             if base is None or v != base.get(k, DEFAULTS[k])}
    try:
        with _locked(path):
            latest = {**DEFAULTS, **load_defaults(path), **edits}
            changed = {k: v for k, v in latest.items() if v != DEFAULTS[k]}
            _replace(path, json.dumps(changed, indent=2, sort_keys=True), prefix=".defaults-")
    except OSError as exc:
        raise SettingsFileError(f"Could not save {path} ({exc.strerror or exc}).") from None


def _valid(name: str, value: Any) -> bool:
    return bound_problem(name, value) is None


def configured_llm_providers(env: Mapping[str, str]) -> list[str]:
    """LLM providers that have what they need to be built (a key, or a local base URL)."""
    out = []
    if (env.get("OPENAI_API_KEY") or "").strip() or (env.get("OPENAI_BASE_URL") or "").strip():
        out.append("openai")
    if (env.get("GEMINI_API_KEY") or env.get("GOOGLE_API_KEY") or "").strip():
        out.append("gemini")
    if (env.get("ANTHROPIC_API_KEY") or "").strip():
        out.append("anthropic")
    return out
