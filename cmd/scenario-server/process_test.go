package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store/postgres/pgtest"
)

// Helpers of the tests that run the server binary as a process: build it, start it on a
// store, talk to it, kill it.

// buildServer builds the binary into a temporary directory of t, with -race when race is set.
func buildServer(t *testing.T, race bool) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "scenario-server")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	build := exec.CommandContext(t.Context(), "go", append(args, ".")...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// serverStore is where a server process keeps its data: a data directory (SQLite) or a
// PostgreSQL schema. Every process started on it sees the same data.
type serverStore struct {
	name        string
	dataDir     string // always set: the file sinks' directory, and SQLite's
	databaseURL string // PostgreSQL when set
}

func sqliteServerStore(t *testing.T) serverStore {
	return serverStore{name: "SQLite", dataDir: t.TempDir()}
}

// postgresServerStore is a fresh schema of the test database, dropped when t ends; without a
// test database, t is skipped (failed under CI=true: see pgtest.URL).
func postgresServerStore(t *testing.T) serverStore {
	t.Helper()
	_, connString := pgtest.Schema(t)
	return serverStore{name: "PostgreSQL", dataDir: t.TempDir(), databaseURL: connString}
}

// serverProcess is a running server binary.
type serverProcess struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string // http://host:port
	logs   *syncBuffer
	exited chan error
}

// startServer starts bin on st with the extra flags and waits until /readyz answers 200.
func startServer(t *testing.T, bin string, st serverStore, flags ...string) *serverProcess {
	t.Helper()
	args := append([]string{"--addr", "127.0.0.1:0", "--log-format", "json", "--data-dir", st.dataDir}, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), envDatabaseURL+"="+st.databaseURL, envDataDir+"=")
	p := &serverProcess{t: t, cmd: cmd, logs: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = p.logs
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("server logs:\n%s", lastLines(p.logs.String(), 40))
		}
	})
	p.base = "http://" + waitForLog(t, p.logs, "listening")["addr"].(string)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready after 30 s; logs:\n%s", p.logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// kill ends the process with SIGKILL, as a crash would, and waits for it.
func (p *serverProcess) kill() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		p.t.Fatal(err)
	}
	<-p.exited
}

// stop ends the process with SIGTERM and checks that it exits cleanly.
func (p *serverProcess) stop() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			p.t.Errorf("exit after SIGTERM: %v; logs:\n%s", err, lastLines(p.logs.String(), 20))
		}
	case <-time.After(30 * time.Second):
		p.t.Fatalf("still running 30 s after SIGTERM")
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// httpClient has a timeout, so a request to a killed server cannot hang a test.
var httpClient = &http.Client{Timeout: 60 * time.Second}

// call sends a request with a JSON body (nil for none) and returns the status, headers and
// body; the error is the transport's.
func call(method, u, contentType string, header map[string]string, body []byte) (int, http.Header, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, u, r)
	if err != nil {
		return 0, nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, data, err
}

// mustCall sends a request and fails t unless the answer has status want; it decodes the
// answer into out when not nil.
func (p *serverProcess) mustCall(method, path string, body any, want int, out any) {
	p.t.Helper()
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			p.t.Fatal(err)
		}
	}
	status, _, answer, err := call(method, p.base+path, "application/json", nil, data)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	if status != want {
		p.t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, answer)
	}
	if out != nil {
		if err := json.Unmarshal(answer, out); err != nil {
			p.t.Fatalf("%s %s: decoding %s: %v", method, path, answer, err)
		}
	}
}

// liveCounts is the part of GET .../counts the tests read.
type liveCounts struct {
	Running bool `json:"running"`
	Nodes   map[string]struct {
		In, Out, Errors, Late int64
	} `json:"nodes"`
	Sources []struct {
		Accepted, Processed, Committed, Backlog int64
	} `json:"sources"`
}

// waitCommitted waits until the scenario's first source has n events committed.
func (p *serverProcess) waitCommitted(name string, n int64, timeout time.Duration) liveCounts {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var lc liveCounts
		p.mustCall(http.MethodGet, "/api/scenarios/"+url.PathEscape(name)+"/counts", nil, http.StatusOK, &lc)
		if len(lc.Sources) > 0 && lc.Sources[0].Committed >= n {
			return lc
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%d events not committed after %v: %+v", n, timeout, lc)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// results reads every result of a collect sink with the cursor, as normalized JSON values.
func (p *serverProcess) results(name, sink string) []string {
	p.t.Helper()
	var out []string
	after := int64(0)
	for {
		var page struct {
			Results []struct {
				ID    int64           `json:"id"`
				Value json.RawMessage `json:"value"`
			} `json:"results"`
			Next int64 `json:"next"`
		}
		p.mustCall(http.MethodGet, fmt.Sprintf("/api/scenarios/%s/sinks/%s/results?after=%d&limit=1000", url.PathEscape(name), sink, after),
			nil, http.StatusOK, &page)
		if len(page.Results) == 0 {
			return out
		}
		for _, r := range page.Results {
			out = append(out, normJSON(p.t, r.Value))
		}
		after = page.Next
	}
}

// normJSON re-encodes a JSON value, numbers kept exact, so that texts compare as values.
func normJSON(t *testing.T, b []byte) string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
