"""`python -m research mcp`: the MCP server over stdio, for Claude Desktop, IDEs and agent
frameworks that start it as a child process. It acts as the local person, as the CLI does
(`--owner` or DEEP_RESEARCH_OWNER; unset: no owner, every run).

stdout carries only the protocol: while it serves, the SDK points file descriptor 1 at stderr
(mcp.server.stdio), and logging goes to stderr as one line each.

When the client goes (it closes stdin, as Claude Desktop does on quitting), the process ends at
once, as if killed: a run it was executing stays the job engine's unfinished work, which the
next start of this server (or a dashboard on the same database) carries on from where it
stopped (research/runs/engine.py). A normal interpreter exit would first shut the run's thread
pools down under it, and the run would end "failed".
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from research.core.errors import ResearchError
from research.core.prompts import strip_control
from research.mcpserver.server import build_server
from research.mcpserver.service import open_service


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
    logging.shutdown()
    sys.stderr.flush()
    os._exit(0)
