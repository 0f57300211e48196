#!/usr/bin/env bash
# The benchmark of the main job against hand-written references, side by side.
#
#   scripts/bench.sh [--base REV] [bench flags...]
#
# Builds scenario-server and the bench command (bench/) into a temp dir and runs the bench,
# which prints each figure, its reference and their ratio, with the load average. With
# --base REV (or -base REV, anywhere among the flags) it also builds REV's scenario-server
# and the bench command against REV's packages, and measures them in the same rounds (the
# "before" figures). The other flags go to the bench command: -rounds N, -only
# ingest,run,core,sessions, -pg postgres://... (PostgreSQL ingestion; use a server with fsync
# on), -cpuprofile-dir DIR, -events N (run and engine figures), -core-events N (window core
# and sessions), -ingest-events N (go run ./bench -h lists them). The defaults take about a
# minute on 2 cores, the builds included; the peak RSS figure needs /usr/bin/time (Debian package time).
set -euo pipefail
cd "$(dirname "$0")/.."
base=""
rest=()
while [ $# -gt 0 ]; do
  case "$1" in
    --base | -base)
      [ $# -ge 2 ] || { echo "bench.sh: $1 needs a revision" >&2; exit 2; }
      base=$2
      shift 2
      ;;
    --base=* | -base=*)
      base=${1#*=}
      shift
      ;;
    *)
      rest+=("$1")
      shift
      ;;
  esac
done
set -- ${rest[@]+"${rest[@]}"}
tmp=$(mktemp -d /tmp/scenario-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# The server reads its default.pgo (scripts/pgo.sh) by itself; the bench command is built with
# the same profile, so that the product's packages in it are compiled as in the server.
pgo() { if [ -f cmd/scenario-server/default.pgo ]; then echo "$PWD/cmd/scenario-server/default.pgo"; else echo off; fi; }
go build -o "$tmp/scenario-server" ./cmd/scenario-server
go build -pgo="$(pgo)" -o "$tmp/bench" ./bench
args=(-server "$tmp/scenario-server")
if [ -n "$base" ]; then
  mkdir "$tmp/base"
  git archive "$base" | tar -x -C "$tmp/base"
  # the bench command and the profile hook, against the base's packages
  cp -r bench "$tmp/base/"
  cp cmd/scenario-server/profile.go "$tmp/base/cmd/scenario-server/"
  goccy=$(go list -m -f '{{.Path}}@{{.Version}}' github.com/goccy/go-json)
  grep 'github.com/goccy/go-json' go.sum >>"$tmp/base/go.sum"
  (cd "$tmp/base" && go mod edit -require "$goccy" &&
    go build -o "$tmp/scenario-server-base" ./cmd/scenario-server &&
    go build -pgo="$(pgo)" -o "$tmp/bench-base" ./bench)
  args+=(-base-server "$tmp/scenario-server-base" -base-bench "$tmp/bench-base")
fi
"$tmp/bench" "${args[@]}" "$@"
