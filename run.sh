#!/usr/bin/env bash
# Start Deep Research Studio.
#   ./run.sh                       the dashboard in your browser (http://localhost:8501)
#   ./run.sh "your question" ...   the command line instead (see README)
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
if [ "$#" -gt 0 ]; then
  exec .venv/bin/python -m research "$@"
fi
exec .venv/bin/streamlit run app.py
