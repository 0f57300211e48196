package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The abuse suite: the classes of input that once took the server down, sent to the real
// binary (out of memory and stack overflows cannot be recovered in-process, so only a real
// process shows that they no longer happen). Each case checks the answer (a 4xx or a
// validation problem naming the limit, or a per-event error and a dead letter) and that the
// process is still alive and ready afterwards; the server's peak resident memory is logged.
// The other classes of the issue (a second process on one store, damaged stores, file sinks,
// silent changes, memory by count) have their tests beside the code they concern.

// abuseGraph: an HTTP source timed by #input.ts with no disorder, a filter with the given
// expression, 10 s tumbling counts per #input.key, and the collect sink "out".
func abuseGraph(filter string) json.RawMessage {
	f, _ := json.Marshal(filter)
	return json.RawMessage(`{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}},
    {"name": "maxOutOfOrderness", "value": "0s"}]}},
  {"id": "f", "type": "Filter", "expression": {"language": "expr", "expression": ` + string(f) + `}},
  {"id": "win", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.key"}]},
    {"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
    {"name": "windowLength", "value": "10s"}]},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [
    {"name": "value", "expression": {"language": "expr", "expression": "{key: #key[0], start: #window.start, n: #agg.n}"}}]}}
], "edges": [
  {"from": "in", "to": "f", "edgeType": null},
  {"from": "f", "to": "win", "edgeType": {"type": "FilterTrue"}},
  {"from": "win", "to": "out", "edgeType": null}
]}`)
}

// The reproductions.
const (
	memoryBomb   = `len(repeat(repeat("x", 999999), 999999)) > 0`
	neverEnding  = `let r = 1..999; all(r, all(r, all(r, all(r, true))))`
	poisonFilter = `len(repeat("x", #input.n)) >= 0` // fine for small n; n = 2e9 passes the memory budget
)

// peakRSS is the process's peak resident set (VmHWM), in bytes; 0 where /proc has none.
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// ready fails t unless the server answers /readyz with 200.
// ready waits until /readyz answers 200: the server serves and its store can be read and
// written again. The probe bounds the store's answer by 2 s, which a machine busy with the
// race detector and other tests can exceed for a moment, so a 503 is retried for up to 30 s;
// the process exiting, or no 200 within 30 s, fails the test.
func (p *serverProcess) ready(after string) {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, _, body, err := call(http.MethodGet, p.base+"/readyz", "", nil, nil)
		if err == nil && status == http.StatusOK {
			return
		}
		select {
		case exitErr := <-p.exited:
			p.exited <- exitErr
			p.t.Fatalf("after %s: the server exited (%v); /readyz %d %s, %v", after, exitErr, status, body, err)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("after %s: /readyz %d %s, %v (for 30 s)", after, status, body, err)
		}
	}
}

// post sends a JSON body and returns the status and the answer.
func (p *serverProcess) post(path string, body any) (int, []byte) {
	p.t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		p.t.Fatal(err)
	}
	status, _, answer, err := call(http.MethodPost, p.base+path, "application/json", nil, data)
	if err != nil {
		p.t.Fatalf("POST %s: %v (the server died?)", path, err)
	}
	return status, answer
}

// sendEvents posts NDJSON events to the scenario's source "in".
func (p *serverProcess) sendEvents(name string, lines [][]byte) {
	p.t.Helper()
	body := append(bytes.Join(lines, []byte("\n")), '\n')
	status, _, answer, err := call(http.MethodPost, p.base+"/api/scenarios/"+url.PathEscape(name)+"/sources/in/events",
		"application/x-ndjson", nil, body)
	if err != nil || status != http.StatusAccepted {
		p.t.Fatalf("sending events: %d %s, %v", status, answer, err)
	}
}

type deadLetterPage struct {
	DeadLetters []struct {
		DeadLetter struct {
			Source  string          `json:"source"`
			Offset  *int64          `json:"offset"`
			NodeID  string          `json:"nodeId"`
			Field   string          `json:"field"`
			Message string          `json:"message"`
			Record  json.RawMessage `json:"record"`
		} `json:"deadLetter"`
	} `json:"deadLetters"`
}

func (p *serverProcess) deadLetters(name string) deadLetterPage {
	p.t.Helper()
	var page deadLetterPage
	p.mustCall(http.MethodGet, "/api/scenarios/"+url.PathEscape(name)+"/dead-letters?limit=1000", nil, http.StatusOK, &page)
	return page
}

// problemCodes lists the codes of a validation answer's errors, or of a problem's errors.
func problemCodes(t *testing.T, answer []byte) []string {
	t.Helper()
	var v struct {
		Code   string `json:"code"`
		Errors []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
		Validation *struct {
			Errors []struct {
				Code string `json:"code"`
			} `json:"errors"`
		} `json:"validation"`
		Problems []struct {
			Code string `json:"code"`
		} `json:"problems"`
	}
	if err := json.Unmarshal(answer, &v); err != nil {
		t.Fatalf("answer %s: %v", answer, err)
	}
	codes := []string{}
	if v.Code != "" {
		codes = append(codes, v.Code)
	}
	for _, e := range v.Errors {
		codes = append(codes, e.Code)
	}
	if v.Validation != nil {
		for _, e := range v.Validation.Errors {
			codes = append(codes, e.Code)
		}
	}
	for _, e := range v.Problems {
		codes = append(codes, e.Code)
	}
	return codes
}

func hasCode(codes []string, want string) bool {
	for _, c := range codes {
		if c == want {
			return true
		}
	}
	return false
}

func TestAbuse(t *testing.T) {
	bin := buildServer(t, raceEnabled)
	st := sqliteServerStore(t)
	// The cases below are stopped by the expression budgets, not by the test-run time limit;
	// a longer limit keeps a machine busy with the race detector from cutting them short.
	p := startServer(t, bin, st, "--test-timeout", "2m")
	pid := p.cmd.Process.Pid

	t.Run("memory-exhausting expression", func(t *testing.T) {
		p.t = t
		var nt struct {
			Expressions map[string]struct {
				Error string `json:"error"`
			} `json:"expressions"`
		}
		status, answer := p.post("/api/node-test", map[string]any{"graph": abuseGraph(memoryBomb), "nodeId": "f", "variables": map[string]any{"input": map[string]any{}}})
		if status != http.StatusOK || json.Unmarshal(answer, &nt) != nil || !strings.Contains(nt.Expressions["expression"].Error, "budget exceeded: more than 16777216 bytes") {
			t.Errorf("node-test: %d %s, want the memory budget named", status, answer)
		}
		var tr struct {
			TotalErrors int64 `json:"totalErrors"`
			Errors      []struct {
				NodeID, Field, Message string
			} `json:"errors"`
		}
		status, answer = p.post("/api/test", map[string]any{"graph": abuseGraph(memoryBomb), "records": `{"ts": 1, "key": "a", "n": 1}`})
		if status != http.StatusOK || json.Unmarshal(answer, &tr) != nil || tr.TotalErrors != 1 || tr.Errors[0].NodeID != "f" ||
			tr.Errors[0].Field != "expression" || !strings.Contains(tr.Errors[0].Message, "bytes of memory") {
			t.Errorf("test run: %d %s, want one per-event error at f.expression naming the memory budget", status, answer)
		}
		p.ready("the memory-exhausting expression")
	})

	t.Run("parser stack overflow", func(t *testing.T) {
		p.t = t
		const n = 1_000_000
		deep := map[string]string{
			"(":     strings.Repeat("(", n) + "1" + strings.Repeat(")", n),
			"-":     strings.Repeat("-", n) + "1",
			"!":     strings.Repeat("!", n) + "true",
			"[":     strings.Repeat("[", n) + strings.Repeat("]", n),
			"calls": strings.Repeat("abs(", n) + "1" + strings.Repeat(")", n),
		}
		// Within the 64 KiB length limit, 129 levels pass the depth limit of 128.
		deep["( short"] = strings.Repeat("(", 129) + "1" + strings.Repeat(")", 129)
		for name, text := range deep {
			want := "expression-too-long"
			if name == "( short" {
				want = "expression-too-deep"
			}
			g := abuseGraph(text)
			status, answer := p.post("/api/validation", map[string]any{"graph": g})
			if codes := problemCodes(t, answer); status != http.StatusOK || !hasCode(codes, want) {
				t.Errorf("%s: /api/validation %d %v, want %s", name, status, codes, want)
			}
			status, answer = p.post("/api/validation/node", map[string]any{"graph": g, "nodeId": "f"})
			if codes := problemCodes(t, answer); status != http.StatusOK || !hasCode(codes, want) {
				t.Errorf("%s: /api/validation/node %d %v, want %s", name, status, codes, want)
			}
			for path, body := range map[string]map[string]any{
				"/api/node-test": {"graph": g, "nodeId": "f"},
				"/api/test":      {"graph": g, "records": `{"ts": 1}`},
			} {
				status, answer = p.post(path, body)
				if codes := problemCodes(t, answer); status != http.StatusUnprocessableEntity || !hasCode(codes, want) {
					t.Errorf("%s: %s %d %v, want 422 with %s", name, path, status, codes, want)
				}
			}
			status, answer = p.post("/api/scenarios", map[string]any{"name": "deep " + strconv.Itoa(len(text)), "graph": g})
			if codes := problemCodes(t, answer); status != http.StatusUnprocessableEntity || !hasCode(codes, want) {
				t.Errorf("%s: saving %d %v, want 422 with %s", name, status, codes, want)
			}
		}
		p.ready("the deep expressions")
	})

	t.Run("state explosion", func(t *testing.T) {
		p.t = t
		g := json.RawMessage(strings.Replace(string(abuseGraph("true")), `{"name": "windowLength", "value": "10s"}`,
			`{"name": "windowLength", "value": "1d"}, {"name": "slide", "value": "1ms"}, {"name": "precision", "value": "1ms"}`, 1))
		g = json.RawMessage(strings.Replace(string(g), "aggregate-tumbling", "aggregate-hopping", 1))
		status, answer := p.post("/api/validation", map[string]any{"graph": g})
		if codes := problemCodes(t, answer); status != http.StatusOK || !hasCode(codes, "window-too-many-slices") || !hasCode(codes, "window-too-many-windows") {
			t.Errorf("/api/validation %d %v, want window-too-many-slices and window-too-many-windows", status, codes)
		}
		status, answer = p.post("/api/scenarios", map[string]any{"name": "explosion", "graph": g})
		if codes := problemCodes(t, answer); status != http.StatusUnprocessableEntity || !hasCode(codes, "window-too-many-slices") {
			t.Errorf("saving: %d %v, want 422 window-too-many-slices", status, codes)
		}
		p.ready("the state explosion")
	})

	t.Run("never-ending expression", func(t *testing.T) {
		p.t = t
		var tr struct {
			TotalErrors int64 `json:"totalErrors"`
			Errors      []struct{ NodeID, Field, Message string }
		}
		status, answer := p.post("/api/test", map[string]any{"graph": abuseGraph(neverEnding), "records": `{"ts": 1, "key": "a"}`})
		if status != http.StatusOK || json.Unmarshal(answer, &tr) != nil || tr.TotalErrors != 1 || !strings.Contains(tr.Errors[0].Message, "budget exceeded") {
			t.Fatalf("test run: %d %s, want one per-event error naming a budget", status, answer)
		}
		// Deployed: every event fails at the filter, is a dead letter, and the deployment goes on.
		p.mustCall(http.MethodPost, "/api/scenarios", map[string]any{"name": "stuck", "graph": abuseGraph(neverEnding)}, http.StatusCreated, nil)
		p.mustCall(http.MethodPost, "/api/scenarios/stuck/deploy", map[string]any{}, http.StatusOK, nil)
		var lines [][]byte
		for i := range 3 {
			lines = append(lines, fmt.Appendf(nil, `{"ts": %d, "key": "a"}`, 1000*i))
		}
		p.sendEvents("stuck", lines)
		p.waitCommitted("stuck", 3, time.Minute)
		if dl := p.deadLetters("stuck").DeadLetters; len(dl) != 3 || dl[2].DeadLetter.NodeID != "f" || *dl[2].DeadLetter.Offset != 2 ||
			!strings.Contains(dl[2].DeadLetter.Message, "budget exceeded") {
			t.Errorf("dead letters %+v, want 3 at node f, the last at offset 2", dl)
		}
		// Cancel while it works through 200 such events: it finishes within 5 s.
		lines = lines[:0]
		for i := range 200 {
			lines = append(lines, fmt.Appendf(nil, `{"ts": %d, "key": "a"}`, 10_000+i))
		}
		p.sendEvents("stuck", lines)
		start := time.Now()
		p.mustCall(http.MethodPost, "/api/scenarios/stuck/cancel", map[string]any{}, http.StatusOK, nil)
		took := time.Since(start)
		t.Logf("cancel of a deployment busy with never-ending expressions took %v", took.Round(time.Millisecond))
		if took > 5*time.Second {
			t.Errorf("cancel took %v, more than 5 s", took)
		}
		p.mustCall(http.MethodPost, "/api/scenarios/stuck/deploy", map[string]any{}, http.StatusOK, nil)
		p.ready("the never-ending expression")

		t.Logf("peak RSS of the server over the memory, parser, state and never-ending cases: %d MiB (race detector: %v)", peakRSS(pid)>>20, raceEnabled)

		// SIGTERM while it works through them: the process exits within 10 s.
		p.sendEvents("stuck", lines)
		start = time.Now()
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-p.exited:
			t.Logf("SIGTERM with a deployment busy with never-ending expressions: exit after %v (%v)", time.Since(start).Round(time.Millisecond), err)
			if err != nil {
				t.Errorf("exit after SIGTERM: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("still running 10 s after SIGTERM")
		}
	})

	t.Run("poison event", func(t *testing.T) {
		// A store of its own: the subtest runs alone too (the first server holds st's lock).
		st := sqliteServerStore(t)
		p := startServer(t, bin, st)
		// 90 good events (n = 1) over 90 s, 3 keys; the poison event (n = 2e9: repeat would
		// make 2 GB) is line 46 (offset 45); a sentinel 1,000 s later of its own key closes
		// every window but its own.
		const base = 1_700_000_000_000
		var good, all [][]byte
		for i := range 90 {
			ev := fmt.Appendf(nil, `{"ts": %d, "key": "k%d", "n": 1}`, base+int64(i)*1000, i%3)
			good = append(good, ev)
			all = append(all, ev)
			if i == 44 {
				all = append(all, fmt.Appendf(nil, `{"ts": %d, "key": "k0", "n": 2000000000}`, base+int64(i)*1000+500))
			}
		}
		sentinel := fmt.Appendf(nil, `{"ts": %d, "key": "zz-sentinel", "n": 1}`, base+1_000_000)
		good, all = append(good, sentinel), append(all, sentinel)

		p.mustCall(http.MethodPost, "/api/scenarios", map[string]any{"name": "poison", "graph": abuseGraph(poisonFilter)}, http.StatusCreated, nil)
		p.mustCall(http.MethodPost, "/api/scenarios/poison/deploy", map[string]any{}, http.StatusOK, nil)
		p.sendEvents("poison", all[:60])
		p.waitCommitted("poison", 60, time.Minute)
		p.stop() // a clean restart
		p = startServer(t, bin, st)
		p.sendEvents("poison", all[60:])
		p.waitCommitted("poison", int64(len(all)), time.Minute)
		p.kill() // and a crash
		p = startServer(t, bin, st)
		lc := p.waitCommitted("poison", int64(len(all)), time.Minute)
		if !lc.Running || lc.Nodes["f"].Errors != 1 {
			t.Errorf("after two restarts: running %v, filter errors %d, want running with 1 error", lc.Running, lc.Nodes["f"].Errors)
		}
		dl := p.deadLetters("poison").DeadLetters
		if len(dl) != 1 || dl[0].DeadLetter.Offset == nil || *dl[0].DeadLetter.Offset != 45 || dl[0].DeadLetter.NodeID != "f" ||
			!strings.Contains(string(dl[0].DeadLetter.Record), "2000000000") || !strings.Contains(dl[0].DeadLetter.Message, "bytes of memory") {
			t.Errorf("dead letters %+v, want the poison event at offset 45, node f", dl)
		}
		got := p.results("poison", "out")
		want := runGraph(t, bin, abuseGraph(poisonFilter), good)
		if len(want) == 0 || !strings.Contains(want[len(want)-1], "zz-sentinel") {
			t.Fatalf("the run's last result is not the sentinel's window: %v", want)
		}
		want = want[:len(want)-1]
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("results after two restarts:\n%s\nwant (scenario-server run without the poison event):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		p.ready("the poison event")
	})

	t.Run("memory by count, not size", func(t *testing.T) {
		// 16 events of 9 MiB each (144 MiB in the event log; the 400 of them killed the
		// server) are read back by bytes (8 MiB a read, at least one event; the store's
		// conformance suite checks the bound), not 2,000 at a time: the server stays up, and
		// its peak resident memory is logged.
		p := startServer(t, bin, sqliteServerStore(t)) // a process of its own, for its peak memory
		p.mustCall(http.MethodPost, "/api/scenarios", map[string]any{"name": "big events", "graph": abuseGraph("true")}, http.StatusCreated, nil)
		p.mustCall(http.MethodPost, "/api/scenarios/big%20events/deploy", map[string]any{}, http.StatusOK, nil)
		blob := strings.Repeat("x", 9<<20)
		for i := range 16 {
			p.sendEvents("big events", [][]byte{fmt.Appendf(nil, `{"ts": %d, "key": "a", "blob": %q}`, i*1000, blob)})
		}
		p.waitCommitted("big events", 16, 2*time.Minute)
		rss := peakRSS(p.cmd.Process.Pid)
		t.Logf("peak RSS with 144 MiB of events in the log: %d MiB (race detector: %v)", rss>>20, raceEnabled)
		if rss > 1<<30 {
			t.Errorf("peak RSS %d MiB", rss>>20)
		}
		p.ready("the big events")
	})
}

// runGraph replays lines through graph with `scenario-server run` and returns the values of
// its sink "out", normalized.
func runGraph(t *testing.T, bin string, graph json.RawMessage, lines [][]byte) []string {
	t.Helper()
	sc := filepath.Join(t.TempDir(), "scenario.json")
	if err := os.WriteFile(sc, graph, 0o600); err != nil {
		t.Fatal(err)
	}
	return runFile(t, bin, sc, append(bytes.Join(lines, []byte("\n")), '\n'))
}

// runFile replays input (JSON lines) through the scenario file with `scenario-server run` and
// returns the values of its sink "out", normalized.
func runFile(t *testing.T, bin, scenarioPath string, input []byte) []string {
	t.Helper()
	in := filepath.Join(t.TempDir(), "input.ndjson")
	if err := os.WriteFile(in, input, 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "run", "--scenario", scenarioPath, "--input", in)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("scenario-server run: %v\n%s", err, stderr.String())
	}
	var values []string
	s := bufio.NewScanner(&stdout)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		var line struct {
			Sink  string          `json:"sink"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(s.Bytes(), &line); err != nil || line.Sink != "out" {
			t.Fatalf("run output line %q: %v", s.Text(), err)
		}
		values = append(values, normJSON(t, line.Value))
	}
	return values
}
