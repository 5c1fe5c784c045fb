"""The Settings page's MCP servers: list, add, replace, remove and test the servers a run can
search (research.core.mcp_servers, research.search.mcp_tools).

A server's settings go in the secrets file as a table `[mcp_servers.NAME]` (owner-only, like
the keys): `command` and `args` for a program that speaks MCP on stdin and stdout, or `url`
(and `token`, sent as a bearer token) for a streamable-HTTP server; `tool` picks its search
tool. A token is never shown again once saved (only masked), never sent to the store, the
logs or an export; a run stores only the server's provider name, "mcp:NAME".
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from dashboard import views
from dashboard.settings_files import SettingsFileError, mask, save_secrets_table
from research.core.config import Credentials
from research.core.errors import ResearchError, redact
from research.core.mcp_servers import PREFIX, McpServer
from research.core.settings import MCP_TABLE

TEST_QUERY = "renewable energy"


def servers(env: Mapping[str, str]) -> tuple[list[McpServer], str]:
    """The servers listed (secrets file, or the environment, which wins) and any problem."""
    credentials = Credentials.from_env(env)
    return list(credentials.mcp_servers), credentials.mcp_problem


def provider_names(env: Mapping[str, str]) -> list[str]:
    """The search provider names of the listed servers ("mcp:wiki"), for the search choices."""
    return [server.provider for server in servers(env)[0]]


def label(name: str) -> str:
    """'mcp:wiki' -> 'wiki (MCP server)'; other names as they are."""
    return f"{name[len(PREFIX):]} (MCP server)" if name.startswith(PREFIX) else name


def describe(server: McpServer) -> str:
    """One line about a server, with nothing secret: where it is, its tool, a masked token."""
    parts = [server.where, f"tool \u201c{server.tool}\u201d" if server.tool else
             "its first search tool"]
    if server.token is not None:
        parts.append(f"token {mask(server.token.get_secret_value())}")
    if server.env:
        parts.append(f"{len(server.env)} environment value(s) (hidden)")
    return " · ".join(parts)


def server_fields(name: str, *, command_line: str = "", url: str = "", token: str = "",
                  tool: str = "", keep: McpServer | None = None) -> dict[str, Any]:
    """The table to save for a server typed on the page, checked; ValueError in plain words.
    An empty token keeps the one already saved for it (`keep`), as the keys do."""
    fields: dict[str, Any] = {}
    if command_line.strip():
        try:
            words = shlex.split(command_line)
        except ValueError:
            raise ValueError("The command could not be read: check its quotes.") from None
        fields.update(command=words[0], args=words[1:])
    if url.strip():
        fields["url"] = url.strip()
    secret = token.strip() or (keep.token.get_secret_value() if keep is not None
                               and keep.token is not None else "")
    if secret:
        fields["token"] = secret
    if keep is not None and keep.env:
        fields["env"] = {k: v.get_secret_value() for k, v in keep.env.items()}
    if tool.strip():
        fields["tool"] = tool.strip()
    try:
        McpServer(name=name.strip(), **fields)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise ValueError(str(error.get("msg", "")).removeprefix("Value error, ").capitalize()
                         + ".") from None
    return fields


def save(name: str, fields: Mapping[str, Any] | None, path: Path) -> None:
    """Save (None: remove) one server's table in the secrets file."""
    save_secrets_table(MCP_TABLE, name, fields, path)


def check(server: McpServer) -> tuple[bool, str]:
    """One real search with the server's search tool; plain words either way."""
    from research.search.mcp_tools import McpSearch

    search = McpSearch(server, server.secrets())
    try:
        results = search.search(TEST_QUERY, max_results=1, timeout=server.timeout_s)
    except ResearchError as exc:
        return False, redact(str(exc), server.secrets())
    finally:
        search.close()
    if not results:
        return True, f"{server.name} answered but found nothing for a test query."
    return True, f"{server.name} works: found \u201c{results[0].title[:80]}\u201d."


def section(path: Path, env: Mapping[str, str]) -> None:
    """The Settings page's "MCP servers" section."""
    import streamlit as st

    if st.session_state.pop("mcp_clear", False):  # never keep a typed token in the page
        for key in ("mcp_name", "mcp_command", "mcp_url", "mcp_token", "mcp_tool"):
            st.session_state.pop(key, None)
    st.header("MCP servers")
    st.write("Tools you already run, such as a company wiki, a database or a code host, can be "
             "searched as sources through the Model Context Protocol. Add a server here, then "
             "choose it among the search services. What a server returns is treated like a web "
             "page: read and checked, never obeyed.")
    listed, problem = servers(env)
    if problem:
        st.error(views.md_text(f"The MCP servers could not be read: {problem}."))
    for server in listed:
        cols = st.columns([3, 1, 1])
        cols[0].markdown(f"**{views.md_text(server.name)}** · {views.md_text(describe(server))}")
        if cols[1].button("Test", key=f"mcp_test_{server.name}"):
            with st.spinner(f"Searching with {server.name}\u2026"):
                ok, message = check(server)
            (st.success if ok else st.error)(views.md_text(message))
        if cols[2].button("Remove", key=f"mcp_remove_{server.name}"):
            _saved(path, server.name, None, f"Removed the MCP server {server.name}.")
    with st.form("mcp_server", clear_on_submit=True):
        st.markdown("**Add or replace a server**")
        name = st.text_input("Name", max_chars=40, key="mcp_name", placeholder="e.g. wiki (lower-case letters, "
                             "digits, - or _)")
        kind = st.radio("How to reach it", ["A program on this computer", "A web address"],
                        horizontal=True)
        command = st.text_input("Program and its arguments", key="mcp_command", placeholder="e.g. npx -y "
                                "@modelcontextprotocol/server-github",
                                help="Used when it is a program: started for each run, it "
                                     "speaks MCP on its standard input and output.")
        url = st.text_input("Web address", key="mcp_url", placeholder="https://mcp.example.org/mcp",
                            help="Used when it is a streamable-HTTP server.")
        token = st.text_input("Token (optional)", type="password", key="mcp_token",
                              help="Sent as a bearer token to a web address. Saved in the "
                                   "secrets file; never shown again.")
        tool = st.text_input("Search tool (optional)", key="mcp_tool", placeholder="automatic: the first tool "
                             "that takes a query")
        if st.form_submit_button("Save server"):
            by_name = {s.name: s for s in listed}
            try:
                fields = server_fields(
                    name, command_line=command if kind.startswith("A program") else "",
                    url=url if kind == "A web address" else "", token=token, tool=tool,
                    keep=by_name.get(name.strip()))
            except ValueError as exc:
                st.error(views.md_text(exc))
            else:
                _saved(path, name.strip(), fields, f"Saved the MCP server {name.strip()}.")


def _saved(path: Path, name: str, fields: Mapping[str, Any] | None, done: str) -> None:
    import streamlit as st

    try:
        save(name, fields, path)
    except SettingsFileError as exc:
        st.error(views.md_text(exc))
        return
    st.session_state["settings_flash"] = done
    st.session_state["mcp_clear"] = True
    st.rerun()
