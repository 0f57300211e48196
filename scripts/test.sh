#!/usr/bin/env bash
# The project's one test command: checks formatting and vet, starts a
# throw-away PostgreSQL (scripts/pg.sh), runs the designer's steps (chromium,
# npm ci, Vitest, a rebuild that must equal web/dist, the browser test), then
# runs every Go test with the race detector. .ci/run calls this script; so
# does the README.
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

# --- designer UI (block owned by web/) ---
# Installs what the UI tests need (Debian's Chromium when missing and we are root; the npm
# packages from web/package-lock.json), runs the Vitest unit tests, rebuilds the UI and fails when
# the committed build (web/dist, embedded in the binary) differs from it, then runs the browser
# tests: playwright-core drives /usr/bin/chromium against a server built from this tree, on a
# free port with a new data directory. Screenshots go to web/test-results/ (git-ignored).
echo "== designer (web/): npm ci, vitest, build, browser tests"
if [ -z "${CHROMIUM_PATH:-}" ] && [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "the browser tests need Chromium: apt-get install chromium (or set CHROMIUM_PATH)"; exit 1
  fi
fi
# In a git checkout the fresh build is compared with the committed one (git diff: a build made and
# not committed fails too); in a copy of the tree that is not one (an unpacked archive), with the
# build the tree came with, kept aside file by file.
dist_before=$(mktemp -d)
cp -a web/dist/. "$dist_before/"
(cd web && npm ci --no-audit --no-fund --loglevel=error && npx vitest run && npm run --silent build) || { rm -rf "$dist_before"; exit 1; }
if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  dist_diff=$(git status --short -- web/dist)
else
  dist_diff=$(diff -rq "$dist_before" web/dist || true)
fi
rm -rf "$dist_before"
if [ -n "$dist_diff" ]; then
  echo "$dist_diff" | head -20
  echo "web/dist differs from a fresh build: run (cd web && npm ci && npm run build) and commit web/dist"; exit 1
fi
ui_tmp=$(mktemp -d)
go build -o "$ui_tmp/scenario-server" ./cmd/scenario-server
ui_status=0
(cd web && SCENARIO_SERVER_BIN="$ui_tmp/scenario-server" npm run --silent e2e) || ui_status=$?
rm -rf "$ui_tmp"
if [ "$ui_status" != 0 ]; then
  echo "designer browser tests failed; screenshots are in web/test-results/"; exit "$ui_status"
fi
# --- end of the designer block ---

echo "== go test -race"
# Without the server's profile (cmd/scenario-server/default.pgo, scripts/pgo.sh): every test
# binary, and the servers the tests build with go build -race, then share one compiled copy
# of the packages instead of a second one for the profile. The browser tests above ran the
# server as it ships, built with it.
GOFLAGS="${GOFLAGS:-} -pgo=off" go test -race -count=1 -timeout 30m ./...
