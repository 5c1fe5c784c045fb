"""Deep Research Studio as an MCP server (the official `mcp` SDK), for other agents.

- `stdio.py`: `python -m research mcp`, the server on stdin/stdout as the local person;
- `http.py`: `streamable_http_app(person_of)`, the same server over streamable HTTP for the
  API server, each request acting as its token's person;
- `server.py`: the tools and resources; `service.py`: what they do, as plain functions of one
  person; `costs.py`: what a run costs at each preset, for the tool descriptions;
- `door.py`: the one module that reaches a run's life (start, alive, queue place).

The package is not named `mcp`: that would shadow the SDK.
"""
