#!/usr/bin/env bash
# A team set-up on one computer, to try before deploying it for real (README, "For a team"):
# one PostgreSQL server, two workers that execute runs, two dashboards that only queue and
# watch them, the HTTP API server (python -m research serve), and nginx in front of them
# (dashboards with sticky sessions, the API under /v1), all on 127.0.0.1. Ctrl-C stops
# everything and removes every temporary file.
#   scripts/team-demo.sh
# DEEP_RESEARCH_DEMO_PORT picks the proxy's port (default 8600). Runs need your keys
# (OPENAI_API_KEY, TAVILY_API_KEY, ...) in the environment you start this from: the workers
# use them. Without keys you can still look around the dashboards.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT="${DEEP_RESEARCH_DEMO_PORT:-8600}"
PY=.venv/bin/python

# --- what must be installed ------------------------------------------------------------------
missing=()
NGINX="$(command -v nginx || true)"
[ -z "$NGINX" ] && [ -x /usr/sbin/nginx ] && NGINX=/usr/sbin/nginx
[ -z "$NGINX" ] && missing+=("nginx (the reverse proxy)")
PG_BIN="$(dirname "$(ls -1 /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n1)")"
[ -x "$PG_BIN/initdb" ] || missing+=("PostgreSQL (no /usr/lib/postgresql/*/bin/initdb)")
[ -x "$PY" ] || missing+=("the virtual environment .venv (run scripts/setup.sh)")
if [ "${#missing[@]}" -gt 0 ]; then
  echo "The team demo cannot start. Missing:" >&2
  printf '  - %s\n' "${missing[@]}" >&2
  echo "On Debian or Ubuntu: sudo apt-get install nginx postgresql (or scripts/setup.sh --dev)" >&2
  exit 2
fi

if ! "$PY" -c "import socket, sys; socket.socket().bind(('127.0.0.1', int(sys.argv[1])))" "$PORT" \
    2>/dev/null; then
  echo "Port $PORT on 127.0.0.1 is in use (or not a port); pick another with DEEP_RESEARCH_DEMO_PORT=..." >&2
  exit 2
fi

# --- clean-up: every child stopped, the temporary directory removed, whatever happens ------------
DEMO_DIR="$(mktemp -d "${TMPDIR:-/tmp}/dr-team-demo.XXXXXX")"
AS_PG=()
children=()

cleanup() {
  trap - EXIT INT TERM
  echo "Stopping the team demo..." >&2
  local pid
  for pid in "${children[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 100); do  # up to 10 s for a graceful stop
    local alive=0
    for pid in "${children[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for pid in "${children[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -f "$DEMO_DIR/pg/data/postmaster.pid" ]; then
    "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$DEMO_DIR/pg/data" -m fast -w -t 20 stop >/dev/null 2>&1 \
      || "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$DEMO_DIR/pg/data" -m immediate -w stop >/dev/null 2>&1 \
      || true
  fi
  rm -rf "$DEMO_DIR"
  echo "Stopped; temporary files removed." >&2
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# still_running: every child started so far is alive (else there is no point waiting).
still_running() {
  local pid
  for pid in "${children[@]}"; do kill -0 "$pid" 2>/dev/null || return 1; done
}

# wait_for_log FILE PATTERN SECONDS WHAT: poll until a log file shows PATTERN.
wait_for_log() {
  local file="$1" pattern="$2" seconds="$3" what="$4"
  for _ in $(seq 1 $((seconds * 5))); do
    grep -q "$pattern" "$file" 2>/dev/null && return 0
    still_running || break
    sleep 0.2
  done
  echo "$what did not start; its log says:" >&2
  tail -n 20 "$file" >&2 || true
  exit 1
}

# wait_for_http URL SECONDS WHAT: poll until URL answers 200 (or a child has ended). One Python
# polls every 0.2 s: a fresh one per try spent more CPU importing urllib than the waited-for
# server had to start with.
wait_for_http() {
  local url="$1" seconds="$2" what="$3"
  "$PY" - "$url" "$seconds" "${children[@]}" 2>/dev/null <<'EOF' && return 0
import os, sys, time, urllib.request
url, deadline = sys.argv[1], time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    try:
        urllib.request.urlopen(url, timeout=2)
        sys.exit(0)
    except Exception:
        pass
    try:  # still_running: every child started so far is alive
        for pid in sys.argv[3:]:
            os.kill(int(pid), 0)
    except OSError:
        break
    time.sleep(0.2)
sys.exit(1)
EOF
  echo "$what did not answer at $url; the logs say:" >&2
  for f in "$DEMO_DIR"/logs/*.log; do echo "--- $(basename "$f")" >&2; tail -n 5 "$f" >&2; done
  exit 1
}

# --- PostgreSQL: a throw-away server on 127.0.0.1 --------------------------------------------
PG_PORT="$(free_port)"
mkdir -p "$DEMO_DIR/pg" "$DEMO_DIR/logs"
if [ "$(id -u)" -eq 0 ]; then  # PostgreSQL refuses to run as root
  chmod 711 "$DEMO_DIR"  # postgres may pass through to its own folder, and no further
  chown postgres: "$DEMO_DIR/pg"
  AS_PG=(runuser -u postgres --)
fi
echo "Starting PostgreSQL on 127.0.0.1:$PG_PORT" >&2
(cd "$DEMO_DIR/pg" && "${AS_PG[@]}" "$PG_BIN/initdb" -D "$DEMO_DIR/pg/data" -U postgres \
  --auth=trust --locale=C.UTF-8 -E UTF8 >"$DEMO_DIR/pg/initdb.log" 2>&1) \
  || { echo "initdb failed:" >&2; tail -n 20 "$DEMO_DIR/pg/initdb.log" >&2; exit 1; }
(cd "$DEMO_DIR/pg" && "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$DEMO_DIR/pg/data" -l "$DEMO_DIR/pg/server.log" \
  -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $DEMO_DIR/pg -c max_connections=200" \
  -w -t 60 start >/dev/null) \
  || { echo "PostgreSQL did not start:" >&2; tail -n 20 "$DEMO_DIR/pg/server.log" >&2; exit 1; }
"$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres research

export DEEP_RESEARCH_DB="postgresql://postgres@127.0.0.1:$PG_PORT/research"
export DEEP_RESEARCH_WORKERS=external  # dashboards queue and watch; the workers execute

# --- two workers (the first makes the schema, then the second joins) ---------------------------
for n in 1 2; do
  "$PY" -m research worker --concurrency 2 >"$DEMO_DIR/logs/worker-$n.log" 2>&1 &
  children+=("$!")
  wait_for_log "$DEMO_DIR/logs/worker-$n.log" "is executing queued runs" 120 "Worker $n"
done
echo "Two workers are executing queued runs." >&2

# --- two dashboards --------------------------------------------------------------------------
DASH_PORTS=()
for n in 1 2; do
  p="$(free_port)"
  DASH_PORTS+=("$p")
  "$PY" -m streamlit run app.py --server.headless true --server.address 127.0.0.1 \
    --server.port "$p" --browser.gatherUsageStats false --server.fileWatcherType none \
    --server.runOnSave false >"$DEMO_DIR/logs/dashboard-$n.log" 2>&1 &
  children+=("$!")
done
for n in 1 2; do
  wait_for_http "http://127.0.0.1:${DASH_PORTS[$((n - 1))]}/_stcore/health" 120 "Dashboard $n"
done

# --- the HTTP API server: queues and watches runs like the dashboards --------------------------
export DEEP_RESEARCH_API_SECRET="$("$PY" -c 'import secrets; print(secrets.token_hex(32))')"
API_PORT="$(free_port)"
"$PY" -m research serve --host 127.0.0.1 --port "$API_PORT" >"$DEMO_DIR/logs/api.log" 2>&1 &
children+=("$!")
wait_for_http "http://127.0.0.1:$API_PORT/v1/health" 120 "The API server"
API_TOKEN="$("$PY" -m research token create --name "team demo" 2>/dev/null | sed -n 's/^token: //p')"

# --- nginx: sticky sessions (a cookie per browser) and websockets -------------------------------
mkdir -p "$DEMO_DIR/nginx"
cat >"$DEMO_DIR/nginx/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
pid $DEMO_DIR/nginx/nginx.pid;
error_log $DEMO_DIR/logs/nginx-error.log warn;
events { worker_connections 512; }
http {
  access_log $DEMO_DIR/logs/nginx-access.log;
  client_body_temp_path $DEMO_DIR/nginx/body;
  proxy_temp_path $DEMO_DIR/nginx/proxy;
  fastcgi_temp_path $DEMO_DIR/nginx/fastcgi;
  uwsgi_temp_path $DEMO_DIR/nginx/uwsgi;
  scgi_temp_path $DEMO_DIR/nginx/scgi;
  client_max_body_size 200m;

  # Sticky sessions: a browser's first request picks a route, kept in a cookie; every later
  # request of that browser (its websocket, its uploads) goes to the same dashboard.
  map \$cookie_dr_route \$dr_route { "" \$request_id; default \$cookie_dr_route; }
  map \$http_upgrade \$connection_upgrade { default upgrade; "" close; }
  upstream dashboards {
    hash \$dr_route consistent;
    server 127.0.0.1:${DASH_PORTS[0]};
    server 127.0.0.1:${DASH_PORTS[1]};
  }
  server {
    listen 127.0.0.1:$PORT;
    add_header Set-Cookie "dr_route=\$dr_route; Path=/; HttpOnly; SameSite=Lax" always;
    add_header X-Dashboard \$upstream_addr always;  # which dashboard answered (demo only)
    proxy_http_version 1.1;
    proxy_set_header Host \$http_host;
    proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
    proxy_set_header X-Forwarded-Proto \$scheme;
    location / { proxy_pass http://dashboards; }
    # The HTTP API: its routes, its OpenAPI document and page. Event streams are passed on
    # as they come (no buffering) and may stay open as long as a run works.
    location ~ ^/(v1|mcp)(/|\$) {
      proxy_pass http://127.0.0.1:$API_PORT;
      proxy_buffering off;
      proxy_read_timeout 1d;
    }
    location ~ ^/(docs|openapi\.json)\$ { proxy_pass http://127.0.0.1:$API_PORT; }
    location /_stcore/stream {  # the dashboard's websocket: upgrade, and no idle time-out
      proxy_pass http://dashboards;
      proxy_set_header Upgrade \$http_upgrade;
      proxy_set_header Connection \$connection_upgrade;
      proxy_read_timeout 1d;
      proxy_send_timeout 1d;
    }
  }
}
EOF
"$NGINX" -c "$DEMO_DIR/nginx/nginx.conf" -p "$DEMO_DIR/nginx" -e "$DEMO_DIR/logs/nginx-error.log" \
  >"$DEMO_DIR/logs/nginx.log" 2>&1 &
children+=("$!")
wait_for_http "http://127.0.0.1:$PORT/_stcore/health" 30 "nginx"

cat <<EOF
The team demo is running:
  open http://127.0.0.1:$PORT
  two dashboards (127.0.0.1:${DASH_PORTS[0]}, 127.0.0.1:${DASH_PORTS[1]}) behind nginx, two workers,
  PostgreSQL at 127.0.0.1:$PG_PORT; logs and data in $DEMO_DIR
Runs use the keys in this shell's environment (the workers read them). Stop with Ctrl-C.
From the command line, in another terminal:
  DEEP_RESEARCH_DB=$DEEP_RESEARCH_DB DEEP_RESEARCH_WORKERS=external ./run.sh "your question"
The HTTP API, behind the same proxy (documentation: http://127.0.0.1:$PORT/docs):
  curl -H "Authorization: Bearer $API_TOKEN" http://127.0.0.1:$PORT/v1/runs
EOF

# Wait until a child stops on its own (then say which) or Ctrl-C arrives (the trap cleans up).
set +e
wait -n "${children[@]}"
status=$?
set -e
echo "A part of the demo stopped on its own (exit status $status); see the logs above." >&2
for f in "$DEMO_DIR"/logs/*.log; do echo "--- $(basename "$f")" >&2; tail -n 5 "$f" >&2; done
exit 1
