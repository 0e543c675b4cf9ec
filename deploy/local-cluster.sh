#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Several sandboxd instances behind HAProxy on loopback, in the foreground (CONTRACT §11):
#
#   deploy/local-cluster.sh --instances N --port P [--bin PATH] [--log-dir DIR] [--postgres]
#                           [-- SERVE-OPTIONS]
#
# starts N `sandboxd serve` instances (ids i1..iN, each on a free loopback port with a state
# directory of its own) and HAProxy on 127.0.0.1:P, configured by deploy/haproxy/haproxy-cfg.sh:
# /execute and other stateless requests are balanced, /v1/sessions/{id}... and /mcp (by
# Mcp-Session-Id) go to the instance whose id begins the session id. SERVE-OPTIONS go to every
# instance (default: --definitions examples/apps, the demo app of `make run`). --postgres first
# starts a PostgreSQL of Debian's `postgresql` package (as nobody when run as root, on a free
# loopback port, a password of its own) and gives every instance --state-store pointing at it,
# so that they share workspaces and runtime values ("local-cluster: postgresql pid PID url URL
# password-file FILE"); --state-store URL in SERVE-OPTIONS names a database of your own instead.
# One line per instance on stdout ("local-cluster: instance ID pid PID port PORT log FILE"),
# then "local-cluster: ready on http://127.0.0.1:P". An instance that dies is reported and the
# others go on; SIGTERM or SIGINT stops everything this script started and exits 0.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

usage() { sed -n '3,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
say() { echo "local-cluster: $*"; }

N="" PORT="" BIN=${SANDBOXD_BIN:-$ROOT/build/sandboxd} LOG_DIR="" POSTGRES=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --instances) N=${2:-}; shift 2 ;;
    --port) PORT=${2:-}; shift 2 ;;
    --bin) BIN=${2:-}; shift 2 ;;
    --log-dir) LOG_DIR=${2:-}; shift 2 ;;
    --postgres) POSTGRES=1; shift ;;
    --) shift; break ;;
    -h|--help) usage ;;
    *) echo "local-cluster: unknown argument '$1'" >&2; usage ;;
  esac
done
SERVE_ARGS=("$@")
[[ ${#SERVE_ARGS[@]} -gt 0 ]] || SERVE_ARGS=(--definitions "$ROOT/examples/apps")
[[ $N =~ ^[0-9]+$ && $N -ge 1 && $N -le 32 ]] || { echo "local-cluster: --instances: 1 to 32" >&2; exit 2; }
[[ $PORT =~ ^[0-9]+$ && $PORT -ge 1 && $PORT -le 65535 ]] || { echo "local-cluster: --port: 1 to 65535" >&2; exit 2; }
[[ -x $BIN ]] || { echo "local-cluster: no sandboxd at $BIN (make build, or --bin)" >&2; exit 2; }
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
[[ -x $HAPROXY ]] || { echo "local-cluster: haproxy is not installed (make deps)" >&2; exit 2; }

WORK=$(mktemp -d /tmp/sandboxd-cluster.XXXXXX) || exit 1
[[ -n $LOG_DIR ]] || LOG_DIR=$WORK/logs
mkdir -p "$LOG_DIR" || exit 1
PIDS=() IDS=() PORTS=() HAPROXY_PID="" PG_BIN="" AS_PG=()

stop_all() {
  local pid
  for pid in $HAPROXY_PID "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  # sandboxd finishes what is running first (its --drain-timeout-s); do not wait forever.
  for _ in $(seq 1 900); do
    local alive=0
    for pid in $HAPROXY_PID "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive -eq 0 ]] && break
    sleep 0.1
  done
  for pid in $HAPROXY_PID "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  wait 2>/dev/null
  # The database last: the instances wrote to it until they stopped.
  [[ -n $PG_BIN ]] && "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$WORK/postgres/data" -m fast -w stop >/dev/null 2>&1
  rm -rf "$WORK"
}
trap 'say "stopping"; stop_all; exit 0' TERM INT HUP

fail() {
  echo "local-cluster: $*" >&2
  stop_all
  exit 1
}

# The port an instance listens on, from its "sandboxd listening" log line.
listen_port() {
  sed -n 's/.*"msg":"sandboxd listening".*"port":\([0-9]*\).*/\1/p' "$1" | head -1
}

# A PostgreSQL of its own (Debian's server binaries) for the instances to share: initdb and
# pg_ctl as an unprivileged user, TCP on loopback only, a random password that sandboxd reads
# from a file (never in the URL, where the process list would show it).
start_postgres() {
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [[ -n $PG_BIN && -x $PG_BIN/pg_ctl ]] || fail "PostgreSQL is not installed (make deps)"
  local dir=$WORK/postgres password port
  mkdir -m 0700 "$dir" || fail "cannot make $dir"
  if [[ $(id -u) -eq 0 ]]; then
    # nobody passes through the work directory to its own, and sees nothing else there
    chmod 0711 "$WORK" && chown nobody "$dir" && AS_PG=(runuser -u nobody --)
  fi
  password=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  (umask 077 && printf '%s\n' "$password" >"$WORK/store-password") || fail "cannot write the password file"
  (umask 077 && printf '%s\n' "$password" >"$dir/initdb-password")
  [[ ${#AS_PG[@]} -gt 0 ]] && chown nobody "$dir/initdb-password"
  "${AS_PG[@]}" "$PG_BIN/initdb" -D "$dir/data" -U sandboxd --auth-local=trust \
    --auth-host=scram-sha-256 --pwfile="$dir/initdb-password" -E UTF8 --locale=C.UTF-8 \
    >"$LOG_DIR/postgres-initdb.log" 2>&1 || fail "initdb failed: $(tail -3 "$LOG_DIR/postgres-initdb.log")"
  rm -f "$dir/initdb-password"
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1" start >/dev/null ||
    fail "PostgreSQL did not start: $(tail -3 "$dir/server.log")"
  "${AS_PG[@]}" psql -X -q -h "$dir" -p "$port" -U sandboxd -d postgres -c "CREATE DATABASE sandboxd" \
    >/dev/null || fail "cannot create the database sandboxd"
  STORE_URL="postgresql://sandboxd@127.0.0.1:$port/sandboxd"
  SERVE_ARGS+=(--state-store "$STORE_URL" --state-store-password-file "$WORK/store-password")
  say "postgresql pid $(head -1 "$dir/data/postmaster.pid") url $STORE_URL password-file $WORK/store-password"
}
[[ $POSTGRES -eq 1 ]] && start_postgres

for i in $(seq 1 "$N"); do
  id=i$i
  mkdir -p -m 0700 "$WORK/$id" "$WORK/$id/state"
  "$BIN" serve --host 127.0.0.1 --port 0 --instance-id "$id" --state-dir "$WORK/$id/state" \
    "${SERVE_ARGS[@]}" >"$LOG_DIR/$id.log" 2>&1 &
  PIDS+=($!)
  IDS+=("$id")
done
for i in "${!IDS[@]}"; do
  port=""
  for _ in $(seq 1 1200); do
    port=$(listen_port "$LOG_DIR/${IDS[$i]}.log")
    [[ -n $port ]] && break
    kill -0 "${PIDS[$i]}" 2>/dev/null ||
      fail "instance ${IDS[$i]} exited while starting: $(tail -5 "$LOG_DIR/${IDS[$i]}.log")"
    sleep 0.1
  done
  [[ -n $port ]] || fail "instance ${IDS[$i]} did not start within 120 s"
  PORTS+=("$port")
  say "instance ${IDS[$i]} pid ${PIDS[$i]} port $port log $LOG_DIR/${IDS[$i]}.log"
done

# Health checks use /readyz (503 while an instance starts or drains); a sandboxd without it
# answers 404 there, and then /healthz is the best there is.
CHECK=/readyz
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${PORTS[0]}/readyz")
[[ $code == 200 ]] || CHECK=/healthz
specs=()
for i in "${!IDS[@]}"; do specs+=(--instance "${IDS[$i]}=127.0.0.1:${PORTS[$i]}"); done
"$ROOT/deploy/haproxy/haproxy-cfg.sh" --bind "127.0.0.1:$PORT" --check-path "$CHECK" "${specs[@]}" \
  >"$WORK/haproxy.cfg" || fail "cannot write the HAProxy configuration"
"$HAPROXY" -db -f "$WORK/haproxy.cfg" >"$LOG_DIR/haproxy.log" 2>&1 &
HAPROXY_PID=$!
ready=0
for _ in $(seq 1 300); do
  kill -0 "$HAPROXY_PID" 2>/dev/null || fail "haproxy exited: $(tail -5 "$LOG_DIR/haproxy.log")"
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz")
  [[ $code == 200 ]] && { ready=1; break; }
  sleep 0.1
done
[[ $ready -eq 1 ]] || fail "haproxy does not answer on 127.0.0.1:$PORT ($(tail -3 "$LOG_DIR/haproxy.log"))"
say "ready on http://127.0.0.1:$PORT"

while true; do
  wait -n -p gone
  status=$?
  [[ -n ${gone:-} ]] || continue # a signal interrupted wait; its trap has run
  if [[ $gone == "$HAPROXY_PID" ]]; then
    fail "haproxy exited with status $status: $(tail -5 "$LOG_DIR/haproxy.log")"
  fi
  for i in "${!PIDS[@]}"; do
    [[ ${PIDS[$i]} == "$gone" ]] && say "instance ${IDS[$i]} exited with status $status; the others go on"
  done
  gone=""
done
