"""`python -m research mcp`: the MCP server over stdio, for Claude Desktop, IDEs and agent
frameworks that start it as a child process. It acts as the local person, as the CLI does
(`--owner` or DEEP_RESEARCH_OWNER; unset: no owner, every run).

stdout carries only the protocol: while it serves, the SDK points file descriptor 1 at stderr
(mcp.server.stdio), and logging goes to stderr as one line each.
"""

from __future__ import annotations

import argparse
import logging
import sys

from research.errors import ResearchError
from research.mcpserver.server import build_server
from research.mcpserver.service import open_service
from research.prompts import strip_control


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m research mcp",
        description="Serve the research tools over MCP on stdin and stdout (for Claude "
                    "Desktop, IDEs and agent frameworks).")
    p.add_argument("--db", help="database file or postgresql:// URL (default: DEEP_RESEARCH_DB "
                                "or data/research.db)")
    p.add_argument("--owner", metavar="PERSON",
                   help="whose runs these are (default: DEEP_RESEARCH_OWNER; unset: no owner, "
                        "every run)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[2:] if argv is None else argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s: %(message)s")
    try:
        service = open_service(db=args.db, owner=args.owner)
    except ResearchError as exc:
        print(f"error: {strip_control(str(exc))}", file=sys.stderr)
        return 2
    build_server(service).run("stdio")
    return 0
