#!/usr/bin/env bash
# Run every test (no internet needed: tests use a local stand-in server).
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh --dev
.venv/bin/ruff check .
# mypy keeps its cache outside the clone: a fresh clone then checks again only what differs
# from the last check on this machine (the installed libraries' stubs and unchanged modules
# are read back: about 5 CPU-s instead of 35). The cache checks each module by its content.
.venv/bin/mypy --cache-dir "${MYPY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/deep-research-studio/mypy}" \
  research storage
exec .venv/bin/python -m pytest "$@"
