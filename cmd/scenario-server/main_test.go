package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/deploy"
)

func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func TestParseServeFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want serveConfig
	}{
		{
			name: "defaults",
			want: serveConfig{Addr: "127.0.0.1:8080", DataDir: "./data", LogFormat: "text", LogLevel: slog.LevelInfo,
				MaxBodyBytes: api.DefaultMaxBodyBytes, ShutdownTimeout: 10 * time.Second, MaxConnections: defaultMaxConnections(),
				ResultRetention: 7 * 24 * time.Hour, BatchKeyRetention: 24 * time.Hour, AuditRetention: 400 * 24 * time.Hour, MaxDeploymentState: 1 << 30, MaxTotalState: defaultMaxTotalState(), LargeEventBytes: defaultLargeEventBytes(), EventMemory: defaultEventMemory(), TakeOver: true, CrashLoopLimit: 3, Guard: defaultGuard(),
				MaxDeployments: defaultMaxDeployments(), MaxNodeSeries: 100_000, MaxDeadLetters: 10_000, MaxResultBytes: 1 << 30, MaxTotalResultBytes: 8 << 30, MinFreeDisk: 256 << 20, EventTimeout: 30 * time.Second, Kafka: deploy.KafkaCluster{TransactionTimeout: 15 * time.Minute, FetchMemory: defaultKafkaFetchMemory()}},
		},
		{
			name: "environment",
			env: map[string]string{envAddr: ":9000", envDataDir: "/var/lib/ss", envLogFormat: "json", envLogLevel: "debug",
				envMaxBodyBytes: "2048", envDatabaseURL: "postgres://db/x", envResultRetention: "1h", envBatchKeyRetention: "0", envAuditRetention: "0",
				envMaxDeploymentState: "0", envMaxTotalState: "0", envLargeEventBytes: "0", envEventMemory: "0", envKafkaFetchMemory: "0", envNoResume: "1", envTakeOver: "false", envCrashLoopLimit: "7", envMaxDeployments: "0", envMaxNodeSeries: "0", envMaxDeadLetters: "0", envMaxResultBytes: "0", envMaxTotalResults: "0", envMinFreeDisk: "0"},
			want: serveConfig{Addr: ":9000", DataDir: "/var/lib/ss", DatabaseURL: "postgres://db/x", LogFormat: "json",
				LogLevel: slog.LevelDebug, MaxBodyBytes: 2048, ShutdownTimeout: 10 * time.Second, MaxConnections: defaultMaxConnections(),
				ResultRetention: time.Hour, BatchKeyRetention: 0, AuditRetention: 0, MaxDeploymentState: 0, NoResume: true, CrashLoopLimit: 7, Guard: defaultGuard(),
				MaxDeployments: 0, MaxNodeSeries: 0, MaxDeadLetters: 0,
				EventTimeout: 30 * time.Second, Kafka: deploy.KafkaCluster{TransactionTimeout: 15 * time.Minute}},
		},
		{
			name: "flags win over the environment",
			args: []string{"--addr", "0.0.0.0:80", "--data-dir", "d", "--log-format", "text", "--log-level", "warn",
				"--max-body-bytes", "100", "--shutdown-timeout", "1s", "--result-retention", "0", "--batch-key-retention", "2h", "--audit-retention", "720h",
				"--max-deployment-state", "4096", "--max-total-state", "8192", "--large-event-bytes", "70000", "--event-memory", "80000", "--kafka-fetch-memory", "90000", "--max-connections", "50",
				"--max-streams", "7", "--max-streams-per-client", "3", "--ingest-body-bytes", "99999", "--request-body-bytes", "88888", "--event-timeout", "0",
				"--min-body-rate", "100", "--max-bodies-per-client", "4",
				"--take-over=false", "--max-deployments", "5", "--max-node-series", "12", "--max-dead-letters", "3", "--max-result-bytes", "4000", "--max-total-result-bytes", "6000", "--min-free-disk", "5000"},
			env: map[string]string{envAddr: ":9000", envDataDir: "/var/lib/ss", envLogFormat: "json", envMaxBodyBytes: "2048",
				envResultRetention: "1h", envMaxDeploymentState: "0", envMaxTotalState: "0", envLargeEventBytes: "5", envEventMemory: "6", envKafkaFetchMemory: "7", envMaxDeployments: "9", envMaxNodeSeries: "7", envMaxDeadLetters: "8", envMaxResultBytes: "9", envMaxTotalResults: "10"},
			want: serveConfig{Addr: "0.0.0.0:80", DataDir: "d", LogFormat: "text", LogLevel: slog.LevelWarn,
				MaxBodyBytes: 100, ShutdownTimeout: time.Second, ResultRetention: 0, BatchKeyRetention: 2 * time.Hour, AuditRetention: 720 * time.Hour,
				MaxDeploymentState: 4096, MaxTotalState: 8192, LargeEventBytes: 70000, EventMemory: 80000, MaxConnections: 50, TakeOver: false, CrashLoopLimit: 3, EventTimeout: 0, Kafka: deploy.KafkaCluster{TransactionTimeout: 15 * time.Minute, FetchMemory: 90000}, MaxDeployments: 5, MaxNodeSeries: 12, MaxDeadLetters: 3, MaxResultBytes: 4000, MaxTotalResultBytes: 6000, MinFreeDisk: 5000, Guard: func() guardConfig {
					g := defaultGuard()
					g.maxStreams, g.perClient, g.ingestBytes, g.requestBytes = 7, 3, 99999, 88888
					g.minBodyRate, g.bodiesPer = 100, 4
					return g
				}()},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseServeFlags(tt.args, env(tt.env), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseServeFlagsErrors(t *testing.T) {
	tests := []struct {
		args []string
		env  map[string]string
	}{
		{args: []string{"--log-format", "xml"}},
		{args: []string{"--log-level", "loud"}},
		{args: []string{"--max-body-bytes", "0"}},
		{args: []string{"--no-such-flag"}},
		{args: []string{"extra"}},
		{env: map[string]string{envMaxBodyBytes: "10MB"}},
		{args: []string{"--result-retention", "-1h"}},
		{args: []string{"--audit-retention", "-1h"}},
		{args: []string{"--max-dead-letters", "-1"}},
		{args: []string{"--max-result-bytes", "-1"}},
		{args: []string{"--max-total-result-bytes", "-1"}},
		{args: []string{"--min-free-disk", "-1"}},
		{env: map[string]string{envMaxResultBytes: "1GiB"}},
		{env: map[string]string{envMaxDeadLetters: "many"}},
		{env: map[string]string{envTakeOver: "sometimes"}},
		{env: map[string]string{envBatchKeyRetention: "a day"}},
		{args: []string{"--max-deployment-state", "-1"}},
		{env: map[string]string{envMaxDeploymentState: "1GiB"}},
		{args: []string{"--max-connections", "-1"}},
		{args: []string{"--max-streams", "-1"}},
		{args: []string{"--max-streams-per-client", "-1"}},
		{args: []string{"--ingest-body-bytes", "-1"}},
		{args: []string{"--request-body-bytes", "-1"}},
		{args: []string{"--request-body-bytes", "65535"}},
		{args: []string{"--ingest-body-bytes", "1000"}},
		{args: []string{"--min-body-rate", "-1"}},
		{args: []string{"--max-bodies-per-client", "-1"}},
		{args: []string{"--event-timeout", "-1s"}},
	}
	for _, tt := range tests {
		if _, err := parseServeFlags(tt.args, env(tt.env), io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("args %q env %v: error %v, want a usage error", tt.args, tt.env, err)
		}
	}
	if _, err := parseServeFlags([]string{"-h"}, env(nil), io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

// A duration or a number that does not parse says what the flag takes, and the flags are
// listed for -h only (new-user round 136: --result-retention 30d printed 200 lines of flags,
// then "parse error").
func TestFlagErrorsSayWhatTheyTake(t *testing.T) {
	var stderr bytes.Buffer
	_, err := parseServeFlags([]string{"--result-retention", "30d"}, env(nil), &stderr)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--result-retention takes a duration such as 168h") {
		t.Errorf("--result-retention 30d: %v", err)
	}
	if strings.Contains(stderr.String(), "Flags:") || !strings.Contains(stderr.String(), "serve -h lists the flags") {
		t.Errorf("--result-retention 30d wrote %q; want no list of the flags", stderr.String())
	}
	if _, err := parseServeFlags([]string{"--max-result-bytes", "1GiB"}, env(nil), io.Discard); !strings.Contains(err.Error(), "--max-result-bytes takes a whole number, without a unit") {
		t.Errorf("--max-result-bytes 1GiB: %v", err)
	}
	stderr.Reset()
	if _, err := parseServeFlags([]string{"--help"}, env(nil), &stderr); !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr.String(), "Flags:") {
		t.Errorf("--help: %v, %d bytes of usage", err, stderr.Len())
	}
	var out bytes.Buffer
	err = runCommand(t.Context(), []string{"run", "--scenario", "s.json", "--max-state", "1KB"}, env(nil), nil, &out, &stderr)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--max-state takes a whole number") {
		t.Errorf("run --max-state 1KB: %v", err)
	}
}

func TestRunCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := runCommand(t.Context(), []string{"help"}, env(nil), nil, &out, &errOut); err != nil || !strings.Contains(out.String(), "Usage:") {
		t.Errorf("help: %v, %q", err, out.String())
	}
	if err := runCommand(t.Context(), []string{"deploy"}, env(nil), nil, &out, &errOut); !errors.Is(err, errUsage) {
		t.Errorf("unknown command: %v", err)
	}
	if err := runCommand(t.Context(), []string{"serve", "--log-format", "xml"}, env(nil), nil, &out, &errOut); !errors.Is(err, errUsage) {
		t.Errorf("serve with a bad flag: %v", err)
	}
	// token -h is help (exit 0), not an unknown token command.
	for _, h := range []string{"-h", "--help"} {
		out.Reset()
		if err := runCommand(t.Context(), []string{"token", h}, env(nil), nil, &out, &errOut); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "scenario-server token create") {
			t.Errorf("token %s: %v, %q", h, err, out.String())
		}
	}
}

// run with a scenario that does not decode lists each problem once, on stderr, and its error
// counts them (it said the first problem again, "decoding scenario" twice).
func TestRunUndecodableScenario(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(path, []byte("{\"nodes\": [\n x"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := runCommand(t.Context(), []string{"run", "--scenario", path, "--input", os.DevNull}, env(nil), nil, &out, &errOut)
	want := path + ": at 2:2: invalid JSON: unexpected character 'x', expected a JSON value [invalid-json]\n"
	if err == nil || err.Error() != "scenario "+path+" does not decode: 1 problem(s)" || errOut.String() != want {
		t.Errorf("error %v, stderr %q; want the problem once", err, errOut.String())
	}
}

// serve, in process: it opens the store in the data directory, answers, and returns nil once
// its context is cancelled.
func TestServeInProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	addr, logs, stop := serveInProcess(t, nil, map[string]string{envDataDir: dir})
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz: %d", resp.StatusCode)
	}
	if _, err := os.Stat(filepath.Join(dir, "scenario-server.db")); err != nil {
		t.Errorf("no database in the data directory: %v", err)
	}
	stop()
	waitForLog(t, logs, "stopped")
}

// A request's headers are bounded (maxHeaderBytes): 100 KB of them are answered 431, 60 KB
// pass; the limit applies before any authentication (round 26: 1 MB header lines held
// unfinished on 300 connections took the server from 41 to 584 MB).
func TestRequestHeadersBounded(t *testing.T) {
	addr, logs, stop := serveInProcess(t, nil, map[string]string{envDataDir: filepath.Join(t.TempDir(), "data")})
	defer func() {
		stop()
		waitForLog(t, logs, "stopped")
	}()
	for _, tc := range []struct {
		bytes, want int
	}{{60_000, http.StatusOK}, {100_000, http.StatusRequestHeaderFieldsTooLarge}} {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/healthz", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Padding", strings.Repeat("a", tc.bytes))
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("%d bytes of headers: %v", tc.bytes, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%d bytes of headers: %d, want %d", tc.bytes, resp.StatusCode, tc.want)
		}
	}
}

// serveInProcess runs serve in this process on 127.0.0.1:0 with JSON logs, the args added and
// the environment vars, and returns its address once it listens, its logs, and stop, which
// cancels it and fails t when it returns an error or not within 15 s.
func serveInProcess(t *testing.T, args []string, vars map[string]string) (addr string, logs *syncBuffer, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	logs = &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, append([]string{"--addr", "127.0.0.1:0", "--log-format", "json"}, args...), env(vars), logs)
	}()
	addr = waitForLog(t, logs, "listening")["addr"].(string)
	return addr, logs, func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("serve did not return after cancel")
		}
	}
}

// The binary, as "go run ./cmd/scenario-server" runs it: it starts on a free port with a
// fresh data directory, answers /readyz, and exits cleanly (status 0) on SIGTERM. The time
// from starting the process to the first 200 from /readyz is logged (go test -v).
func TestBinaryStartsAndStops(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "scenario-server")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.CommandContext(t.Context(), "go", append(args, ".")...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	work := t.TempDir()
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Dir = work // the default data directory, ./data, lands here
	cmd.Env = append(os.Environ(), envDataDir+"=", envDatabaseURL+"=")
	logs := &syncBuffer{}
	cmd.Stderr = logs
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	})

	listening := waitForLog(t, logs, "listening")
	url := "http://" + listening["addr"].(string) + "/readyz"
	var ready time.Duration
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				ready = time.Since(start)
				break
			}
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("not ready after 30 s; logs:\n%s", logs)
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("process start to ready (/readyz 200): %v; the server's own count from init to listening: %v",
		ready.Round(time.Millisecond), listening["startup"])
	if _, err := os.Stat(filepath.Join(work, "data", "scenario-server.db")); err != nil {
		t.Errorf("no database in ./data: %v", err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v; logs:\n%s", err, logs)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("still running 15 s after SIGTERM; logs:\n%s", logs)
	}
	waitForLog(t, logs, "stopped")
}

// syncBuffer is a bytes.Buffer that a process or goroutine writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitForLog waits up to 30 s for the JSON log record with the message msg and returns it.
func waitForLog(t *testing.T, logs *syncBuffer, msg string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["msg"] == msg {
				return rec
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("no %q in the logs:\n%s", msg, logs)
	return nil
}

// run warns when every event time is before 1973-03-03: a timestamp in seconds read as ms
// (1,700,000,000 s is 2023-11-14; as ms 1970-01-20T16:13:20Z). A timestamp in microseconds
// is past the event times the engine takes (2^50 ms): its per-event error says to divide.
func TestRunWarnsOfTimestampUnits(t *testing.T) {
	dir := t.TempDir()
	scenarioPath := filepath.Join(dir, "s.json")
	graph := `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}}]}},
  {"id": "out", "type": "Sink", "ref": {"typ": "stdout", "parameters": [
    {"name": "value", "expression": {"language": "expr", "expression": "#input.ts"}}]}}
], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`
	if err := os.WriteFile(scenarioPath, []byte(graph), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(events string) string {
		t.Helper()
		input := filepath.Join(dir, "in.ndjson")
		if err := os.WriteFile(input, []byte(events), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		// (An input whose every event fails is an error too: TestRunEveryEventFailedAtTheSource.)
		err := runCommand(t.Context(), []string{"run", "--scenario", scenarioPath, "--input", input}, env(nil), nil, &out, &errOut)
		if err != nil && !strings.Contains(err.Error(), "events failed at the source") {
			t.Fatalf("run: %v\n%s", err, errOut.String())
		}
		return errOut.String()
	}
	const seconds = `warning: source "in": every event time is before 1973-03-03 (the latest is 1700000030 ms, 1970-01-20T16:13:20.03Z): ` +
		"event times are epoch milliseconds; if the timestamp is in seconds, multiply it by 1000\n"
	if got := run("{\"ts\": 1700000000}\n{\"ts\": 1700000030}\n"); !strings.Contains(got, seconds) {
		t.Errorf("stderr %q; want %q", got, seconds)
	}
	if got := run("{\"ts\": 1700000000000}\n"); strings.Contains(got, "warning") {
		t.Errorf("stderr %q; want no warning for ms", got)
	}
	const micro = "event time 1700000000000000 ms is out of range (±1125899906842624 ms, the year 37648); " +
		"event times are epoch milliseconds: if the timestamp is in microseconds, divide it by 1000"
	if got := run("{\"ts\": 1700000000000000}\n"); !strings.Contains(got, micro) {
		t.Errorf("stderr %q; want %q", got, micro)
	}
	// A record without the field: the error names the expression (the record has no null).
	const missing = "error: line 1: node in field timestamp: not an event time: the timestamp expression #input.ts is null for this record (is the field missing?)"
	if got := run("{\"time\": 1700000000000}\n"); !strings.Contains(got, missing) {
		t.Errorf("stderr %q; want %q", got, missing)
	}
	// Without a timestamp expression every event is at 0: said (a new-user round), unless the
	// lines give their own times.
	untimed := strings.Replace(graph, `, "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}}]`, "", 1)
	if err := os.WriteFile(scenarioPath, []byte(untimed), 0o600); err != nil {
		t.Fatal(err)
	}
	const atZero = `warning: source "in": the source has no timestamp expression, and no event came with a time of its own: every event is at event time 0 (1970-01-01T00:00:00Z)`
	if got := run("{\"ts\": 1700000000000}\n"); !strings.Contains(got, atZero) {
		t.Errorf("stderr without a timestamp expression %q; want %q", got, atZero)
	}
	if got := run(`{"sourceId": "in", "record": {"ts": 1}, "timestamp": 1700000000000}` + "\n"); strings.Contains(got, "warning") {
		t.Errorf("stderr %q; want no warning for lines with their own times", got)
	}
	// A line's own time of 0 or before is its own too (hostile round 164: warned).
	if got := run(`{"sourceId": "in", "record": {"ts": 1}, "timestamp": -5000}` + "\n" + `{"ts": 2}` + "\n"); strings.Contains(got, "warning") {
		t.Errorf("stderr %q; want no warning for a line with its own time of -5000", got)
	}
}

// run without --input reads standard input, and says so first: from a terminal it waited
// without a word (a new user). With --input - it says nothing.
func TestRunSaysItReadsStandardInput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.json")
	graph := `{"nodes": [{"id": "in", "type": "Source", "ref": {"typ": "http"}},
  {"id": "out", "type": "Sink", "ref": {"typ": "stdout", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "#input.a"}}]}}],
  "edges": [{"from": "in", "to": "out", "edgeType": null}]}`
	if err := os.WriteFile(path, []byte(graph), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		note bool
	}{{nil, true}, {[]string{"--input", "-"}, false}} {
		var out, errOut bytes.Buffer
		args := append([]string{"run", "--scenario", path}, tc.args...)
		if err := runCommand(t.Context(), args, env(nil), strings.NewReader(`{"a": 7}`+"\n"), &out, &errOut); err != nil {
			t.Fatal(err)
		}
		const note = "reading events from standard input (--input FILE reads a file)\n"
		if strings.HasPrefix(errOut.String(), note) != tc.note || out.String() != `{"sink":"out","value":7}`+"\n" {
			t.Errorf("%v: stdout %q, stderr %q; want the note %v", tc.args, out.String(), errOut.String(), tc.note)
		}
	}
}

// run stops with an error once its window state passes --max-state: a count window of 10,000
// events sliding by 1 keeps 10,000 count-slices for each key from its first event (24 bytes
// each and a Max cell, so over 240,000 bytes a key), so 300 lines of new keys pass a budget of
// 1,000,000 bytes within their first 5 keys; the run says so, names the node, and reads no
// more. Without a budget the same input ran to its end (a hostile round's 2,000 lines ended the
// process out of memory).
func TestRunStateBudget(t *testing.T) {
	dir := t.TempDir()
	scenarioPath := filepath.Join(dir, "s.json")
	graph := `{"nodes": [
 {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [{"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}}]}},
 {"id": "agg", "type": "CustomNode", "nodeType": "aggregate-count", "outputVar": "agg", "parameters": [
   {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
   {"name": "aggregations", "value": [{"name": "m", "aggregator": "Max", "aggregateBy": {"language": "expr", "expression": "#input.v"}}]},
   {"name": "windowLength", "value": 10000}, {"name": "slide", "value": 1}]},
 {"id": "out", "type": "Sink", "ref": {"typ": "stdout", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "#agg.m"}}]}}],
 "edges": [{"from": "in", "to": "agg", "edgeType": null}, {"from": "agg", "to": "out", "edgeType": null}]}`
	var lines strings.Builder
	for i := range 300 {
		fmt.Fprintf(&lines, "{\"t\": %d, \"k\": %d, \"v\": 1.5}\n", i, i)
	}
	input := filepath.Join(dir, "in.ndjson")
	if err := os.WriteFile(scenarioPath, []byte(graph), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(input, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := runCommand(t.Context(), []string{"run", "--scenario", scenarioPath, "--input", input, "--max-state", "1000000"}, env(nil), nil, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "passed its budget of 1000000 bytes") || !strings.Contains(err.Error(), `aggregate node "agg"`) {
		t.Fatalf("run: %v; want the state budget's error naming agg\n%s", err, errOut.String())
	}
	var events int
	if _, serr := fmt.Sscanf(errOut.String()[strings.Index(errOut.String(), "summary: "):], "summary: events=%d", &events); serr != nil || events < 1 || events > 5 {
		t.Errorf("stopped after %d events (%v); want within the first 5\n%s", events, serr, errOut.String())
	}
	errOut.Reset()
	if err := runCommand(t.Context(), []string{"run", "--scenario", scenarioPath, "--input", input, "--max-state", "-1"}, env(nil), nil, &out, &errOut); !errors.Is(err, errUsage) {
		t.Errorf("--max-state -1: %v; want a usage error", err)
	}
}

// The designer journey on the examples, out of the box: a first start from the repository's
// root (as `go run ./cmd/scenario-server` is) copies their data files under the source
// directory, each example's saved test case (its first 300 lines) passes, and a deployed
// example reads its file and shows its results through its collect sink: flights per origin
// per hour has DTW's hour from 2001-01-01 00:00 UTC (978307200000 ms), whose one flight, the
// file's first line (00:47, delay 66), makes flights 1, avgDelay and maxDelay 66 and delayed 1
// (66 > 15), worked out by hand from the file.
func TestExamplesTestAndDeployOutOfTheBox(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "data")
	t.Chdir(root)
	addr, logs, stop := serveInProcess(t, nil, map[string]string{envDataDir: dir})
	defer func() {
		stop()
		waitForLog(t, logs, "stopped")
	}()
	for _, f := range []string{"flights-20k.ndjson", "access-log-10k.ndjson"} {
		want, err := os.ReadFile(filepath.Join(root, "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "sources", "testdata", f))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("sources/testdata/%s: %d bytes, %v; want the %d of testdata/%s", f, len(got), err, len(want), f)
		}
	}
	base := "http://" + addr + "/api/scenarios/"
	client := &http.Client{Timeout: time.Minute}
	post := func(path, body string, out any) {
		t.Helper()
		resp, err := client.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("POST %s: %v: %s", path, err, b)
		}
	}
	for _, name := range exampleNames {
		var run struct {
			Passed bool
			Tests  []struct {
				Name     string
				Passed   bool
				Failures []string
			}
		}
		post(name+"/tests/run", "{}", &run)
		if !run.Passed || len(run.Tests) != 1 || run.Tests[0].Name != "sample" {
			t.Errorf("%s's test cases: %+v; want its one, sample, passed", name, run)
		}
	}
	var deployed map[string]any
	post("flights-per-origin-hourly/deploy", `{"comment": "out of the box"}`, &deployed)
	want := `{"avgDelay":66,"delayed":1,"flights":1,"maxDelay":66,"origin":"DTW","windowEnd":978310800000,"windowStart":978307200000}`
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := client.Get(base + "flights-per-origin-hourly/sinks/out/results?limit=1000")
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Results []struct {
				Value json.RawMessage
			}
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range page.Results {
			var v map[string]any
			if json.Unmarshal(r.Value, &v) == nil {
				if b, _ := json.Marshal(v); string(b) == want {
					found = true
				}
			}
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no result %s through the collect sink within a minute (%d results)", want, len(page.Results))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A port in use says what to do: stop the other program, or another --addr (a new user's
// second start beside a first said only "bind: address already in use").
func TestServePortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = serve(t.Context(), []string{"--addr", ln.Addr().String(), "--log-format", "json"},
		env(map[string]string{envDataDir: filepath.Join(t.TempDir(), "data")}), io.Discard)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := strconv.Atoi(port)
	if next := fmt.Sprintf("--addr 127.0.0.1:%d", p+1); err == nil || !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), next) {
		t.Errorf("serve on a port in use: %v; want the cause and what to do (%s)", err, next)
	}
	for addr, want := range map[string]string{"127.0.0.1:8080": "127.0.0.1:8081", ":9000": "127.0.0.1:9001", "[::1]:80": "[::1]:81", "x": "127.0.0.1:8081", "h:65535": "127.0.0.1:8081"} {
		if got := nextPort(addr); got != want {
			t.Errorf("nextPort(%q) = %q; want %q", addr, got, want)
		}
	}
}

// "version" and --version say the build: "scenario-server dev" from a checkout, the source
// revision when go build recorded one, and the Go version (a new-user round found no way to
// tell which build a server was).
func TestVersionCommand(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var stdout bytes.Buffer
		if err := runCommand(t.Context(), args, func(string) string { return "" }, nil, &stdout, io.Discard); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if got := stdout.String(); !strings.HasPrefix(got, "scenario-server ") || !strings.HasSuffix(got, ", "+runtime.Version()+"\n") {
			t.Errorf("%v said %q; want scenario-server, its version, and %s", args, got, runtime.Version())
		}
	}
}

// run exits with an error when every event failed at its source (the wrong input file: a
// new-user round ran the flights scenario on the access log, 100 errors and status 0), and
// not when one of them went in: three lines without the timestamp's field, then the same
// with a fourth that has it.
func TestRunEveryEventFailedAtTheSource(t *testing.T) {
	dir := t.TempDir()
	scenarioPath := writeKScenario(t, dir)
	wrong := "{\"k\": 1}\n{\"k\": 2}\n{\"k\": 3}\n"
	for _, c := range []struct {
		input, want string
	}{
		{wrong, "every one of the 3 events failed at the source"},
		{wrong + "{\"t\": 1000, \"k\": 4}\n", ""},
	} {
		input := filepath.Join(dir, "in.ndjson")
		if err := os.WriteFile(input, []byte(c.input), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		err := runCommand(t.Context(), []string{"run", "--scenario", scenarioPath, "--input", input}, env(nil), nil, &out, &errOut)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%d lines: %v; want %q\n%s", strings.Count(c.input, "\n"), err, c.want, errOut.String())
		}
		if c.want == "" && !strings.Contains(out.String(), "4") {
			t.Errorf("the fourth line's output is not there: %q", out.String())
		}
	}
}

// The JSON log writes a duration as the text log does, "1.5s", not as nanoseconds
// (1500000000); other numbers stay numbers.
func TestJSONLogDurations(t *testing.T) {
	for _, c := range []struct{ format, want string }{
		{"json", `"wait":"1.5s","n":3`},
		{"text", `wait=1.5s n=3`},
	} {
		var out strings.Builder
		newLogger(serveConfig{LogFormat: c.format, LogLevel: slog.LevelInfo}, &out).Info("x", "wait", 1500*time.Millisecond, "n", 3)
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("%s: %s; want %s", c.format, out.String(), c.want)
		}
	}
}

// A UTF-8 byte order mark before the input's first line is skipped, with CRLF line ends (a
// file a Windows tool wrote): the first record was refused, "unexpected character '\ufeff'"
// (a new-user round). By hand: two records in, their k out.
func TestRunSkipsAByteOrderMark(t *testing.T) {
	dir := t.TempDir()
	scenarioPath := writeKScenario(t, dir)
	var out, errOut bytes.Buffer
	in := strings.NewReader("\ufeff{\"t\": 1000, \"k\": 1}\r\n{\"t\": 2000, \"k\": 2}\r\n")
	if err := runCommand(t.Context(), []string{"run", "--scenario", scenarioPath, "--input", "-"}, env(nil), in, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	want := "{\"sink\":\"out\",\"value\":1}\n{\"sink\":\"out\",\"value\":2}\n"
	if out.String() != want || strings.Contains(errOut.String(), "error:") {
		t.Errorf("output %q, stderr %q; want %q and no error", out.String(), errOut.String(), want)
	}
}

// A scenario file larger than run takes is refused before it is read whole (a hostile round:
// a 300 MB file took 614 MB of memory to be refused).
func TestRunScenarioFileBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxRunScenarioBytes + 1); err != nil { // sparse: nothing written
		t.Fatal(err)
	}
	f.Close()
	var out, errOut bytes.Buffer
	err = runCommand(t.Context(), []string{"run", "--scenario", path, "--input", os.DevNull}, env(nil), nil, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "is larger than 64 MiB") {
		t.Errorf("run of a scenario file of 64 MiB and a byte: %v; want it refused as larger than 64 MiB", err)
	}
}

// SIGTERM stops a run that is still reading its scenario (a named pipe whose writer writes
// nothing): it exits 130, "interrupted", as during the replay (a hostile round: it heard
// neither SIGTERM nor SIGINT, and needed SIGKILL).
func TestRunInterruptedBeforeItsScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildServer(t, false)
	fifo := filepath.Join(t.TempDir(), "scenario.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--scenario", fifo, "--input", os.DevNull)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// Opening the pipe for writing succeeds once the run has it open for reading; the run
	// then waits for its data.
	var w *os.File
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		if w, err = os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			break
		}
		if !errors.Is(err, syscall.ENXIO) || time.Now().After(deadline) {
			t.Fatalf("opening the pipe for writing: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer w.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "interrupted") {
			t.Errorf("run after SIGTERM: %v, stderr %q; want exit status 130, interrupted", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("run did not stop within 20 s of SIGTERM while reading its scenario; stderr %q", stderr.String())
	}
}

// writeKScenario writes, as dir/s.json, a scenario of an HTTP source timed by #input.t into a
// stdout sink of #input.k, and returns its path.
func writeKScenario(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "s.json")
	graph := `{"nodes": [
 {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [{"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}}]}},
 {"id": "out", "type": "Sink", "ref": {"typ": "stdout", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "#input.k"}}]}}],
 "edges": [{"from": "in", "to": "out", "edgeType": null}]}`
	if err := os.WriteFile(path, []byte(graph), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// run writes the scenario's validation warnings, as /api/validation gives them: a Count with
// an aggregateBy (ignored) went unseen by a new user of run, who expected SQL's COUNT(x).
func TestRunWritesValidationWarnings(t *testing.T) {
	dir := t.TempDir()
	scenarioPath := filepath.Join(dir, "s.json")
	graph := `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "file", "parameters": [{"name": "path", "value": "x"},
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}}]}},
  {"id": "w", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
    {"name": "groupBy", "value": []},
    {"name": "aggregations", "value": [{"name": "n", "aggregator": "Count", "aggregateBy": {"language": "expr", "expression": "#input.x"}}]},
    {"name": "windowLength", "value": "1m"}]},
  {"id": "out", "type": "Sink", "ref": {"typ": "stdout", "parameters": [
    {"name": "value", "expression": {"language": "expr", "expression": "#agg.n"}}]}}
], "edges": [{"from": "in", "to": "w", "edgeType": null}, {"from": "w", "to": "out", "edgeType": null}]}`
	input := filepath.Join(dir, "in.ndjson")
	if err := os.WriteFile(scenarioPath, []byte(graph), 0o600); err != nil {
		t.Fatal(err)
	}
	// Count counts the three events, x or not: the window's one result is 3.
	if err := os.WriteFile(input, []byte("{\"ts\": 1, \"x\": 1}\n{\"ts\": 2, \"x\": null}\n{\"ts\": 3}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := runCommand(t.Context(), []string{"run", "--scenario", scenarioPath, "--input", input}, env(nil), nil, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	const want = `warning: ` + `node "w" field "aggregations[0].aggregateBy": Count takes no input; aggregateBy is ignored`
	if got := errOut.String(); !strings.Contains(got, strings.TrimPrefix(want, "warning: ")) || !strings.Contains(got, "warning: "+scenarioPath+": ") {
		t.Errorf("stderr %q; want %q", got, want)
	}
	if got := out.String(); got != "{\"sink\":\"out\",\"value\":3}\n" {
		t.Errorf("output %q; want the one window's count, 3", got)
	}
}
