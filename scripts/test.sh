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

echo "== go test -race"
go test -race -count=1 -timeout 30m ./...
