#!/usr/bin/env bash
# Writes cmd/scenario-server/default.pgo: a CPU profile of the server doing its main job, which
# the Go toolchain uses when it builds the server (profile-guided optimization,
# https://go.dev/doc/pgo: `go build` and `go run` of a main package read the default.pgo beside
# it; the compiler inlines and devirtualizes the hot calls). Run it after a change that moves
# where the server spends its time; a stale profile is still correct, only less useful.
#
#   scripts/pgo.sh
#
# The profile merges, from binaries built without a profile:
#   - `scenario-server run` on the bench's standard workload (4,000,000 events, 1,000 keys,
#     hopping 60 s / 10 s, Count and Sum, JSON lines out), three runs;
#   - one HTTP ingestion run of the bench (1,000,000 events, 8 clients, batches of 500) into a
#     deployed hopping scenario on SQLite.
# scripts/bench.sh builds the bench command with the same profile, so that the product's
# packages in it are compiled as they are in the server. It keeps the profile there when
# `run` is slower with the new one (below). Takes about two minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d /tmp/scenario-pgo.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
go build -pgo=off -o "$tmp/scenario-server" ./cmd/scenario-server
go build -pgo=off -o "$tmp/bench" ./bench
"$tmp/bench" -child workload -events 4000000 -output "$tmp/events.ndjson" -input "$tmp/scenario.json"
for i in 1 2 3; do
  SCENARIO_SERVER_CPUPROFILE="$tmp/run$i.pprof" "$tmp/scenario-server" run \
    --scenario "$tmp/scenario.json" --input "$tmp/events.ndjson" --output /dev/null
done
"$tmp/bench" -server "$tmp/scenario-server" -only ingest -rounds 1 -ingest-events 1000000 \
  -cpuprofile-dir "$tmp/ingest"
go tool pprof -proto "$tmp"/run*.pprof "$tmp"/ingest/*.pprof >"$tmp/default.pgo"

# A profile of a few seconds steers inlining by chance as much as by cause: one written again
# made `run` 11 % slower (note 36). The new profile replaces the one there only when `run`
# built with it takes no more CPU time than with the old, the median of 5 runs each, taking
# turns (PGO_FORCE=1 replaces it regardless).
current=cmd/scenario-server/default.pgo
if [ -f "$current" ] && [ "${PGO_FORCE:-}" != 1 ]; then
  go build -pgo="$PWD/$current" -o "$tmp/with-current" ./cmd/scenario-server
  go build -pgo="$tmp/default.pgo" -o "$tmp/with-new" ./cmd/scenario-server
  cpu() { # user + system CPU seconds of one run
    /usr/bin/time -f "%U %S" -o "$tmp/time" "$1" run --scenario "$tmp/scenario.json" \
      --input "$tmp/events.ndjson" --output /dev/null 2>/dev/null
    awk '{ print $1 + $2 }' "$tmp/time"
  }
  : >"$tmp/current.s"; : >"$tmp/new.s"
  for i in 1 2 3 4 5; do
    cpu "$tmp/with-current" >>"$tmp/current.s"
    cpu "$tmp/with-new" >>"$tmp/new.s"
  done
  median() { sort -n "$1" | sed -n 3p; }
  old_s=$(median "$tmp/current.s") new_s=$(median "$tmp/new.s")
  echo "run, median CPU seconds of 5: with the current profile $old_s, with the new $new_s"
  if awk -v o="$old_s" -v n="$new_s" 'BEGIN { exit !(n > o * 1.02) }'; then
    echo "kept the current profile: the new one is slower (PGO_FORCE=1 to replace it anyway)"
    exit 0
  fi
fi
mv "$tmp/default.pgo" "$current"
echo "wrote $current ($(wc -c <"$current") bytes)"
