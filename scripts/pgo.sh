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
# packages in it are compiled as they are in the server. Takes about a minute.
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
mv "$tmp/default.pgo" cmd/scenario-server/default.pgo
echo "wrote cmd/scenario-server/default.pgo ($(wc -c <cmd/scenario-server/default.pgo) bytes)"
