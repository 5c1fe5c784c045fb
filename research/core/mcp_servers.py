"""MCP servers a person lists as sources: what each one is and how to reach it.

A server is a stdio command (a program we start, speaking MCP on its stdin and stdout) or a
streamable-HTTP address. Everything about it can be secret (a token, a command's arguments or
environment values often carry one), so the list lives in `Credentials`, never in the run's
serialised `ResearchConfig`: a run names the servers it reads as search providers "mcp:NAME".

Where the list comes from, at the edge: the `[mcp_servers.NAME]` tables of the secrets file
(`research.core.settings.read_secrets_file` hands them on as JSON), or the environment variable
`DEEP_RESEARCH_MCP_SERVERS` holding the same tables as a JSON object, which wins. A list that
cannot be read never stops the app: it gives no servers and `problem` says why, which a run
that asks for one of them reports.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

ENV_NAME = "DEEP_RESEARCH_MCP_SERVERS"
PREFIX = "mcp:"  # a search provider name "mcp:wiki" reads the server named "wiki"
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
MAX_SERVERS = 20
MIN_TIMEOUT_S, MAX_TIMEOUT_S = 1.0, 120.0


class McpServer(BaseModel):
    """One MCP server. `tool` names its search tool; empty: the first search-like tool."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, SecretStr] = Field(default_factory=dict)
    url: str = ""
    token: SecretStr | None = None  # sent as "Authorization: Bearer ..." to an HTTP server
    tool: str = ""
    timeout_s: float = Field(default=30.0, ge=MIN_TIMEOUT_S, le=MAX_TIMEOUT_S)

    @model_validator(mode="after")
    def _check(self) -> McpServer:
        if not NAME.match(self.name):
            raise ValueError(f"the MCP server name {self.name[:40]!r} must be 1 to 40 lower-case "
                             "letters, digits, '-' or '_'")
        if bool(self.command.strip()) == bool(self.url.strip()):
            raise ValueError(f"the MCP server {self.name!r} needs either a command (a program "
                             "to start) or a url (a streamable-HTTP address), not both")
        if self.url and not self.url.lower().startswith(("http://", "https://")):
            raise ValueError(f"the MCP server {self.name!r} has a url that is not http or https")
        return self

    @property
    def provider(self) -> str:
        """Its name as a search provider (DEEP_RESEARCH_SEARCH, the New research form)."""
        return PREFIX + self.name

    @property
    def where(self) -> str:
        """Where it is, in words that hold no secret: the program or the address's host."""
        if self.command:
            return f"runs {self.command.rsplit('/', 1)[-1][:60]}"
        host = self.url.split("://", 1)[-1].split("/", 1)[0].rsplit("@", 1)[-1]
        return f"at {host[:80]}"

    def secrets(self) -> list[str]:
        values = [self.token, *self.env.values()]
        return [v.get_secret_value() for v in values if v is not None and v.get_secret_value()]


def parse(text: str) -> tuple[tuple[McpServer, ...], str]:
    """The servers in a JSON object {name: {command|url, ...}}; and why not, in plain words."""
    if not text.strip():
        return (), ""
    try:
        raw = json.loads(text)
    except ValueError:
        return (), f"{ENV_NAME} is not valid JSON"
    return servers_from(raw)


def servers_from(raw: Any) -> tuple[tuple[McpServer, ...], str]:
    """The servers in {name: {fields}} (a parsed TOML or JSON table)."""
    if not isinstance(raw, dict):
        return (), "the MCP server list must be a table of servers by name"
    if len(raw) > MAX_SERVERS:
        return (), f"at most {MAX_SERVERS} MCP servers can be listed"
    servers: list[McpServer] = []
    for name, fields in raw.items():
        if not isinstance(fields, dict):
            return (), f"the MCP server {str(name)[:40]!r} must be a table of settings"
        try:
            servers.append(McpServer(name=str(name), **fields))
        except (ValidationError, TypeError) as exc:
            return (), _plain(exc, str(name))
    return tuple(servers), ""


def _plain(exc: Exception, name: str) -> str:
    """A validation failure in plain words, naming the setting but never its value."""
    if isinstance(exc, ValidationError):
        error = exc.errors()[0]
        if error.get("type") == "value_error":
            return str(error.get("msg", "")).removeprefix("Value error, ")
        where = ".".join(str(p) for p in error.get("loc", ()))
        return f"the MCP server {name[:40]!r} has a setting {where!r} that cannot be used"
    return f"the MCP server {name[:40]!r} has settings that cannot be used"
