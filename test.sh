#!/usr/bin/env bash
# Run every test (no internet needed: tests use a local stand-in server).
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh --dev
.venv/bin/ruff check .
.venv/bin/mypy research storage
exec .venv/bin/python -m pytest "$@"
