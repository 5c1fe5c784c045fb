#!/usr/bin/env bash
# Dependency audit: every pinned package (requirements.txt, and constraints.txt for what they
# pull in) against known vulnerabilities, with pip-audit in its own virtualenv (.venv-audit,
# pinned in scripts/audit-requirements.txt; never part of the app's .venv).
#
#   scripts/audit.sh
#
# Advisory sources are tried in order until one answers: PyPI's per-release advisory data
# ("pypi"), then the OSV database ("osv"). Exit status:
#   0  every package checked, no known vulnerability
#   1  a known vulnerability (package, advisory ids and fixed versions are listed)
#   2  AUDIT SKIPPED: pip-audit could not be installed or no advisory source answered; the
#      reason is printed (e.g. an index mirror that serves packages but no advisory data)
# AUDIT_SERVICES (default "pypi osv") picks the sources; AUDIT_OSV_URL points "osv" at another
# OSV-compatible server (the tests use a local one).
set -uo pipefail
cd "$(dirname "$0")/.."

VENV=.venv-audit
REQS=scripts/audit-requirements.txt
PY="${PYTHON:-python3}"

skipped() {
  echo "AUDIT SKIPPED: $*"
  echo "No dependency was checked against known vulnerabilities."
  exit 2
}

stamp="$VENV/.installed-$(sha1sum "$REQS" | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  echo "Installing pip-audit into $VENV (pinned in $REQS)"
  rm -rf "$VENV"
  log=$(mktemp)
  if ! { "$PY" -m venv "$VENV" && "$VENV/bin/python" -m pip install -q -r "$REQS"; } >"$log" 2>&1; then
    tail -3 "$log"
    rm -f "$log"
    skipped "pip-audit could not be installed into $VENV (see the lines above)."
  fi
  rm -f "$log"
  touch "$stamp"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
reasons=""
for service in ${AUDIT_SERVICES:-pypi osv}; do
  extra=()
  if [ "$service" = osv ] && [ -n "${AUDIT_OSV_URL:-}" ]; then
    extra=(--osv-url "$AUDIT_OSV_URL")
  fi
  "$VENV/bin/pip-audit" --vulnerability-service "$service" "${extra[@]}" \
    --no-deps --disable-pip -r requirements.txt -r constraints.txt \
    --format json --output "$work/$service.json" --progress-spinner off --timeout 15 \
    2>"$work/$service.err" >/dev/null
  "$VENV/bin/python" scripts/audit_verdict.py "$service" "$work/$service.json" \
    "$work/$service.err" >"$work/$service.txt"
  status=$?
  if [ "$status" -ne 2 ]; then
    cat "$work/$service.txt"
    exit "$status"
  fi
  reasons="$reasons
  $(cat "$work/$service.txt")"
done
skipped "no advisory source could be reached:$reasons"
