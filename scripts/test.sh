#!/usr/bin/env bash
# The project's one test command: checks formatting and vet, then runs every
# test with the race detector. .ci/run calls this script; so does the README.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

# --- PostgreSQL for the store/postgres tests (block owned by the store package) ---
# Starts a throw-away PostgreSQL with scripts/pg.sh unless SCENARIO_SERVER_TEST_DATABASE_URL is
# already set, and stops it on exit. Under CI=true a failed start fails the run (the PostgreSQL
# tests would fail anyway); elsewhere they are skipped with a warning.
if [ -z "${SCENARIO_SERVER_TEST_DATABASE_URL:-}" ]; then
  echo "== postgres (scripts/pg.sh)"
  if pg_env=$(bash scripts/pg.sh start); then
    eval "$pg_env"
    export SCENARIO_SERVER_TEST_DATABASE_URL SCENARIO_SERVER_TEST_PG_DIR
    trap 'bash scripts/pg.sh stop "$SCENARIO_SERVER_TEST_PG_DIR" || true' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
  elif [ "${CI:-}" = "true" ]; then
    echo "scripts/pg.sh could not start PostgreSQL"; exit 1
  else
    echo "warning: scripts/pg.sh could not start PostgreSQL; the PostgreSQL store tests will be skipped"
  fi
fi
# --- end of the PostgreSQL block ---

echo "== go test -race"
go test -race -count=1 -timeout 30m ./...
