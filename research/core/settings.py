"""Where settings come from at the edge (CLI, dashboard): environment and secrets file.

The environment wins over `.streamlit/secrets.toml`, so a deployment can always override
what someone typed into the Settings page. Only these edge helpers read os.environ.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path

from research.core.mcp_servers import ENV_NAME as MCP_ENV

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SECRETS_FILE = PROJECT_ROOT / ".streamlit" / "secrets.toml"
DEFAULT_PRICES_FILE = PROJECT_ROOT / "data" / "prices.json"
MCP_TABLE = "mcp_servers"  # research.core.mcp_servers


def read_secrets_file(path: Path = SECRETS_FILE) -> dict[str, str]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    flat = {str(k): str(v) for k, v in data.items() if isinstance(v, (str, int, float, bool))}
    servers = data.get(MCP_TABLE)
    if isinstance(servers, dict) and servers:  # its [mcp_servers.NAME] tables, as the env has them
        flat[MCP_ENV] = json.dumps(servers)
    return flat


def secrets_file(environ: Mapping[str, str] | None = None) -> Path:
    """`.streamlit/secrets.toml`, or `DEEP_RESEARCH_SECRETS_FILE` (tests point it elsewhere)."""
    value = (environ if environ is not None else os.environ).get("DEEP_RESEARCH_SECRETS_FILE")
    return Path(value) if value else SECRETS_FILE


def effective_env(
    environ: Mapping[str, str] | None = None, secrets_path: Path | None = None
) -> dict[str, str]:
    """Secrets file values, overridden by the real environment."""
    environ = environ if environ is not None else os.environ
    merged = read_secrets_file(secrets_path or secrets_file(environ))
    merged.update(environ)
    return merged


def command_owner(given: str | None, env: Mapping[str, str]) -> str | None:
    """Whose runs a command acts on: its `--owner`, else DEEP_RESEARCH_OWNER; None: nobody's
    in particular (no sign-in)."""
    return (given or env.get("DEEP_RESEARCH_OWNER") or "").strip() or None


def prices_path(env: Mapping[str, str]) -> Path:
    return Path(env.get("DEEP_RESEARCH_PRICES") or DEFAULT_PRICES_FILE)
