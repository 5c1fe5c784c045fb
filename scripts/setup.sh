#!/usr/bin/env bash
# Idempotent set-up: Debian packages WeasyPrint (and the browser and PostgreSQL tests) need, then a
# virtualenv in .venv with the pinned requirements. Safe to run again and again.
#   scripts/setup.sh          runtime only
#   scripts/setup.sh --dev    also test tools, the headless browser, PostgreSQL and nginx
set -euo pipefail
cd "$(dirname "$0")/.."

DEV=0
[ "${1:-}" = "--dev" ] && DEV=1

debs=(libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 fonts-dejavu-core)
# tesseract-ocr, tesseract-ocr-eng: OCR of scanned documents (research/documents/ocr.py).
debs+=(tesseract-ocr tesseract-ocr-eng)
# postgresql: the tests start a throw-away server (tests/pg_server.py) to run the store on it.
# nginx: the reverse proxy of scripts/team-demo.sh (and of its test).
# chromium-headless-shell: the browser tests' Chromium (tests/browser_helpers.py says why);
# chromium: the full browser, to run them in with BROWSER_TESTS_CHROMIUM=/usr/bin/chromium.
[ "$DEV" = 1 ] && debs+=(chromium chromium-headless-shell postgresql nginx)
missing=()
for pkg in "${debs[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "Installing system packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "Creating the virtual environment in .venv"
  "$PY" -m venv .venv
fi
req=requirements.txt
[ "$DEV" = 1 ] && req=requirements-dev.txt
stamp=".venv/.installed-$(cat requirements.txt requirements-dev.txt constraints.txt | sha1sum | cut -c1-12)-$DEV"
if [ ! -f "$stamp" ]; then
  echo "Installing Python packages from $req"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r "$req" -c constraints.txt
  rm -f .venv/.installed-*
  touch "$stamp"
fi
scripts/drop-stale-pages.sh
mkdir -p data
