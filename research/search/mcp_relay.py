"""Between us and a stdio MCP server: its answers pass through, none longer than a cap.

The SDK's stdio client keeps reading one message (one line) until its end, however long: a
server that writes an endless line would fill our memory. So `research.search.mcp_tools`
starts a stdio server through this small program (`python mcp_relay.py MAX_BYTES COMMAND
ARGS...`): the server gets our standard input as its own, and its output is copied to ours
line by line; a line longer than MAX_BYTES ends the server and the relay, and the client sees
the connection close. The relay holds at most one read's worth of bytes at a time.

Run by its path, with the standard library only (it imports nothing of `research`).
"""

from __future__ import annotations

import os
import subprocess
import sys

CHUNK = 65536


def main(argv: list[str]) -> int:
    cap, command = int(argv[0]), argv[1:]
    try:
        server = subprocess.Popen(command, stdout=subprocess.PIPE)  # stdin, stderr: ours
    except OSError as exc:
        sys.stderr.write(f"could not start the MCP server: {exc.strerror}\n")
        return 127
    assert server.stdout is not None
    line = 0  # bytes since the last newline
    out = sys.stdout.buffer
    try:
        while chunk := os.read(server.stdout.fileno(), CHUNK):
            first, end = chunk.find(b"\n"), chunk.rfind(b"\n")
            if line + (first if first >= 0 else len(chunk)) > cap:
                server.kill()
                return 3
            line = len(chunk) - end - 1 if end >= 0 else line + len(chunk)
            out.write(chunk)
            out.flush()
    except (BrokenPipeError, KeyboardInterrupt):
        server.kill()
        return 1
    return server.wait()


if __name__ == "__main__":  # the SDK ends both at once: they share a process group
    sys.exit(main(sys.argv[1:]))
