#!/usr/bin/env bash
# A throw-away PostgreSQL for tests, from the installed server binaries.
#
#   eval "$(scripts/pg.sh start)"          # prints export lines, nothing else on stdout
#   go test ./store/postgres/...
#   scripts/pg.sh stop "$SCENARIO_SERVER_TEST_PG_DIR"
#
# start: initdb into a fresh temp dir (owned by the postgres OS user when run as root), starts
# the server listening on 127.0.0.1 only, on a free port, with its unix socket inside that dir,
# waits until it accepts connections, creates the database scenario_server_test, and prints:
#   export SCENARIO_SERVER_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:PORT/scenario_server_test?sslmode=disable
#   export SCENARIO_SERVER_TEST_PG_DIR=/tmp/scenario-server-pg.XXXXXX
# Authentication is "trust" and durability is off (fsync=off): never use it for real data.
# PG_DURABLE=1 keeps PostgreSQL's defaults instead (fsync, synchronous_commit and
# full_page_writes on): the benchmark's ingestion figure on PostgreSQL (scripts/bench.sh -pg).
# When the binaries are missing and we run as root, installs the Debian package postgresql-15.
#
# stop DIR: stops the server started in DIR (fast shutdown) and removes DIR.
#
# Environment: PG_BIN (default /usr/lib/postgresql/$PG_VERSION/bin), PG_VERSION (default 15),
# PG_TMPDIR (default /tmp; where the temp dir goes: the postgres user must be able to reach it).
# Progress and errors go to stderr; the exit status is non-zero on failure.
set -euo pipefail

PG_VERSION=${PG_VERSION:-15}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/$PG_VERSION/bin}
MARKER=.scenario-server-pg
DB_NAME=scenario_server_test

log() { echo "pg.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# as_pg runs a command as the postgres OS user when we are root (PostgreSQL refuses to run as
# root), and as ourselves otherwise.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    if command -v runuser >/dev/null 2>&1; then
      runuser -u postgres -- "$@"
    else
      su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
    fi
  else
    "$@"
  fi
}

ensure_binaries() {
  if [ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pg_ctl" ]; then
    return
  fi
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    die "no PostgreSQL binaries in $PG_BIN; install postgresql-$PG_VERSION (needs root and apt-get)"
  fi
  log "installing postgresql-$PG_VERSION (binaries missing in $PG_BIN)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update >&2
  apt-get install -y --no-install-recommends "postgresql-$PG_VERSION" >&2
  [ -x "$PG_BIN/initdb" ] || die "postgresql-$PG_VERSION installed but $PG_BIN/initdb is still missing"
}

ensure_pg_user() {
  [ "$(id -u)" -eq 0 ] || return 0
  id postgres >/dev/null 2>&1 && return 0
  log "creating the postgres OS user"
  useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
}

# free_port prints a TCP port on 127.0.0.1 that nothing listens on right now. The server may
# still lose a race for it; start retries with another port then.
free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
    return
  fi
  local port
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
  die "no free port found"
}

start() {
  ensure_binaries
  ensure_pg_user
  local dir
  dir=$(mktemp -d "${PG_TMPDIR:-/tmp}/scenario-server-pg.XXXXXX")
  touch "$dir/$MARKER"
  if [ "$(id -u)" -eq 0 ]; then
    chown -R postgres: "$dir"
  fi
  chmod 700 "$dir"

  log "initdb into $dir/data"
  if ! as_pg "$PG_BIN/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C \
    --no-sync >"$dir/initdb.log" 2>&1; then
    cat "$dir/initdb.log" >&2
    rm -rf "$dir"
    die "initdb failed"
  fi

  local durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  if [ "${PG_DURABLE:-}" = 1 ]; then
    durability=""
  fi
  local port attempt started=
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    log "starting on 127.0.0.1:$port (attempt $attempt)"
    if as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -o \
      "-c listen_addresses=127.0.0.1 -p $port -k $dir $durability -c max_connections=200" \
      start >&2; then
      started=1
      break
    fi
    tail -n 20 "$dir/server.log" >&2 || true
  done
  if [ -z "$started" ]; then
    rm -rf "$dir"
    die "could not start PostgreSQL"
  fi

  local i
  for i in $(seq 1 100); do
    if "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres; then
      break
    fi
    [ "$i" -lt 100 ] || { stop "$dir"; die "PostgreSQL did not become ready"; }
    sleep 0.1
  done

  if ! "$PG_BIN/createdb" -h 127.0.0.1 -p "$port" -U postgres "$DB_NAME" >&2; then
    stop "$dir"
    die "createdb failed"
  fi
  log "ready: postgres://postgres@127.0.0.1:$port/$DB_NAME (stop with: scripts/pg.sh stop $dir)"
  echo "export SCENARIO_SERVER_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:$port/$DB_NAME?sslmode=disable"
  echo "export SCENARIO_SERVER_TEST_PG_DIR=$dir"
}

stop() {
  local dir=${1:-${SCENARIO_SERVER_TEST_PG_DIR:-}}
  [ -n "$dir" ] || die "usage: $0 stop DIR (or set SCENARIO_SERVER_TEST_PG_DIR)"
  [ -f "$dir/$MARKER" ] || die "$dir was not made by pg.sh start; not touching it"
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >&2 ||
      as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >&2 || true
  fi
  rm -rf "$dir"
  log "stopped and removed $dir"
}

case "${1:-}" in
start) start ;;
stop) stop "${2:-}" ;;
*) die "usage: $0 start | stop DIR" ;;
esac
