#!/usr/bin/env bash
# The dashboard's page scripts moved from pages/ to app_pages/. A checkout updated across that
# move keeps pages/ with only Python bytecode in it (__pycache__ is not tracked), and Streamlit
# takes any pages/ folder beside app.py for its legacy multipage mode, in which a fresh server's
# first deep link (/run?run=...) finds no page. Remove such a leftover; keep (and name) one
# that holds anything else. Run from the project folder (scripts/setup.sh does).
set -euo pipefail
[ -d pages ] || exit 0
if [ -z "$(find pages -type f ! -name '*.pyc' -print -quit)" ]; then
  rm -rf pages
  echo "Removed pages/ (only bytecode was left there: the pages live in app_pages/)"
else
  echo "Warning: pages/ beside app.py makes Streamlit skip app.py on a new server's first link;" \
       "the dashboard's pages live in app_pages/: move or remove pages/" >&2
fi
