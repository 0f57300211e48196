package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/postgres"
	"github.com/scenario-server/scenario-server/store/sqlite"
)

// crashSeedEnv sets the seed of the crash test's kill points (default: the clock's).
const crashSeedEnv = "SCENARIO_SERVER_CRASH_SEED"

// The sentinel is an event months after the file's last, of its own client, sent last: its watermark closes every
// session of the file, and only its own session stays open (only the end of input, which a
// deployment never has, would close it).
const crashSentinel = `{"ts":"2016-01-01T00:00:00Z","client":"zz-sentinel","method":"GET","path":"/","status":200,"bytes":1}`

// The access-log sessions example, deployed with an http source and a collect sink, is sent
// the 9,999 events of its file in batches of 500 (each with an Idempotency-Key) and the
// sentinel, while the server is killed with SIGKILL at three random points (seeded, logged):
// while a batch is in flight or just after. Each time it is restarted on the same store, and
// the client re-sends the batch it got no answer for. The collected sessions equal those of
// `scenario-server run` on the same file, none missing, none twice, and the source counted
// each event once. On SQLite and on PostgreSQL.
//
// Beside the first client, three companion clients each send the same file, in order, to a
// deployment of the example of their own: each sends batch b when the first client sends
// its batch b, and again under its key until it is answered 202 (through the kills and
// restarts). The store commits the concurrent batches together (group commit), and every
// deployment's sessions must equal `scenario-server run`. The test logs how many of the
// first client's batches were committed in one group with a companion's (the same
// acceptedAt).
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	bin := buildServer(t, raceEnabled)
	seed := crashSeed(t)

	data, err := os.ReadFile("../../testdata/access-log-10k.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	input := append(bytes.Clone(data), []byte(crashSentinel+"\n")...)
	want := runExpected(t, bin, input)

	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(input))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	if len(lines) != 10_000 {
		t.Fatalf("%d events, want 9,999 and the sentinel", len(lines))
	}
	for i, st := range []func(*testing.T) serverStore{sqliteServerStore, postgresServerStore} {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		t.Run([]string{"SQLite", "PostgreSQL"}[i], func(t *testing.T) {
			t.Parallel()
			crashRun(t, bin, st(t), rng, lines, want)
		})
	}
}

// crashSeed is the seed of a crash test's kill points: crashSeedEnv's, or the clock's; logged.
func crashSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(crashSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", crashSeedEnv, s, err)
		}
	}
	t.Logf("kill points from seed %d (rerun with %s=%d)", seed, crashSeedEnv, seed)
	return seed
}

// runExpected runs `scenario-server run` on the example with input and returns its values,
// normalized, without the sentinel's session (the last: only the end of input closes it).
func runExpected(t *testing.T, bin string, input []byte) []string {
	t.Helper()
	values := runFile(t, bin, "../../examples/accesslog-sessions.json", input)
	if len(values) == 0 || !strings.Contains(values[len(values)-1], "zz-sentinel") {
		t.Fatalf("the run's last result is not the sentinel's session")
	}
	return values[:len(values)-1]
}

// liveAccessLogGraph is the example with an http source (timestamp kept); its sink is a
// collect sink already.
func liveAccessLogGraph(t *testing.T) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile("../../examples/accesslog-sessions.json")
	if err != nil {
		t.Fatal(err)
	}
	g := string(b)
	for old, repl := range map[string]string{
		`"typ": "file",
        "parameters": [
          {
            "name": "path",
            "value": "testdata/access-log-10k.ndjson"
          },`: `"typ": "http",
        "parameters": [`,
	} {
		if !strings.Contains(g, old) {
			t.Fatalf("the example changed: %q not in it", old)
		}
		g = strings.Replace(g, old, repl, 1)
	}
	return json.RawMessage(g)
}

func crashRun(t *testing.T, bin string, st serverStore, rng *rand.Rand, lines [][]byte, want []string) {
	const name, batchSize = "access sessions live", 500
	// Killed on purpose 3 times in a row: no crash-loop protection.
	flags := []string{"--checkpoint-interval", "100ms", "--crash-loop-limit", "0"}
	srv := startServer(t, bin, st, flags...)
	srv.mustCall(http.MethodPost, "/api/scenarios", map[string]any{"name": name, "graph": liveAccessLogGraph(t)}, http.StatusCreated, nil)
	srv.mustCall(http.MethodPost, "/api/scenarios/"+url.PathEscape(name)+"/deploy", map[string]any{"comment": "crash test"}, http.StatusOK, nil)
	companions := []string{"access sessions 2", "access sessions 3", "access sessions 4"}
	for _, c := range companions {
		srv.mustCall(http.MethodPost, "/api/scenarios", map[string]any{"name": c, "graph": liveAccessLogGraph(t)}, http.StatusCreated, nil)
		srv.mustCall(http.MethodPost, "/api/scenarios/"+url.PathEscape(c)+"/deploy", map[string]any{"comment": "crash test"}, http.StatusOK, nil)
	}
	var base atomic.Pointer[string] // the running server, for the companion clients
	base.Store(&srv.base)

	var batches [][]byte
	for i := 0; i < len(lines); i += batchSize {
		batches = append(batches, append(bytes.Join(lines[i:min(i+batchSize, len(lines))], []byte("\n")), '\n'))
	}
	// Three distinct batches, not the first nor the last, each with a delay from the start
	// of its request to the kill: 0-30 ms lands before, during or after its commit.
	points := rng.Perm(len(batches) - 2)[:3]
	for i := range points {
		points[i]++
	}
	slices.Sort(points)
	sendTo := func(base, scenario string, b int) (int, []byte, error) {
		status, _, body, err := call(http.MethodPost, base+"/api/scenarios/"+url.PathEscape(scenario)+"/sources/log/events",
			"application/x-ndjson", map[string]string{"Idempotency-Key": fmt.Sprintf("batch-%d", b)}, batches[b])
		return status, body, err
	}
	send := func(srv *serverProcess, b int) (int, []byte, error) { return sendTo(srv.base, name, b) }
	type answer202 struct {
		FirstOffset int64     `json:"firstOffset"`
		Duplicate   bool      `json:"duplicate"`
		AcceptedAt  time.Time `json:"acceptedAt"`
	}
	var acceptedAt []time.Time // of the first client's batches stored by their 202
	accept := func(srv *serverProcess, b int) (duplicate bool) {
		t.Helper()
		status, body, err := send(srv, b)
		if err != nil || status != http.StatusAccepted {
			t.Fatalf("batch %d: %d %s %v", b, status, body, err)
		}
		var res answer202
		if err := json.Unmarshal(body, &res); err != nil || res.FirstOffset != int64(b*batchSize) {
			t.Fatalf("batch %d stored at offset %d (%v), want %d", b, res.FirstOffset, err, b*batchSize)
		}
		if !res.Duplicate {
			acceptedAt = append(acceptedAt, res.AcceptedAt)
		}
		return res.Duplicate
	}
	// The companion clients: batch b when the first client sends it, again until a 202 (a
	// kill or a restart in between answers nothing, or 409 while the deployment resumes).
	var companionMu sync.Mutex
	companionAccepted := map[int64]bool{} // acceptedAt in µs
	companionErr := make(chan error, len(companions))
	var goes []chan int
	for _, c := range companions {
		next := make(chan int, len(batches))
		goes = append(goes, next)
		go func() {
			for b := range next {
				for attempt := 0; ; attempt++ {
					status, body, err := sendTo(*base.Load(), c, b)
					if err == nil && status == http.StatusAccepted {
						var res answer202
						if err := json.Unmarshal(body, &res); err != nil || res.FirstOffset != int64(b*batchSize) {
							companionErr <- fmt.Errorf("%s: batch %d stored at offset %d (%v), want %d", c, b, res.FirstOffset, err, b*batchSize)
							return
						}
						companionMu.Lock()
						companionAccepted[res.AcceptedAt.UnixMicro()] = true
						companionMu.Unlock()
						break
					}
					if attempt == 1200 {
						companionErr <- fmt.Errorf("%s: batch %d not accepted after a minute: %d %s %v", c, b, status, body, err)
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			companionErr <- nil
		}()
	}
	companionsSend := func(b int) {
		for _, g := range goes {
			g <- b
		}
	}
	for b := range batches {
		// A client that sends at its own pace: checkpoints (every 100 ms) fall between and
		// during batches, so a kill finds some events covered by one and some not.
		time.Sleep(time.Duration(rng.IntN(81)) * time.Millisecond)
		companionsSend(b)
		if !slices.Contains(points, b) {
			accept(srv, b)
			continue
		}
		delay := time.Duration(rng.IntN(31)) * time.Millisecond
		type answer struct {
			status int
			err    error
		}
		answered := make(chan answer, 1)
		go func() {
			status, _, err := send(srv, b)
			answered <- answer{status, err}
		}()
		time.Sleep(delay)
		srv.kill()
		a := <-answered
		acked := a.err == nil && a.status == http.StatusAccepted
		covered, stored := inspectStore(t, st, name)
		srv = startServer(t, bin, st, flags...)
		base.Store(&srv.base)
		how := "acknowledged before the kill"
		if !acked {
			how = "not acknowledged (" + fmt.Sprint(a.err) + "); re-sent: "
			if accept(srv, b) {
				how += "it had been stored, kept once"
			} else {
				how += "stored now"
			}
		}
		t.Logf("%s: SIGKILL %v after sending batch %d (events %d-%d); the last checkpoint covered %d of the %d stored events; %s",
			st.name, delay, b, b*batchSize, min((b+1)*batchSize, len(lines))-1, covered, stored, how)
	}

	for _, g := range goes {
		close(g)
	}
	for range companions {
		if err := <-companionErr; err != nil {
			t.Fatal(err)
		}
	}
	grouped := 0
	for _, at := range acceptedAt {
		if companionAccepted[at.UnixMicro()] {
			grouped++
		}
	}
	t.Logf("%s: %d of the first client's %d stored batches were committed in one group with a companion's batch",
		st.name, grouped, len(acceptedAt))
	for _, c := range companions {
		lc := srv.waitCommitted(c, int64(len(lines)), time.Minute)
		if got := srv.results(c, "out"); !slices.Equal(got, want) {
			t.Errorf("%s collected %d sessions, not those of `scenario-server run` (%d)", c, len(got), len(want))
		}
		if in := lc.Nodes["log"].In; in != int64(len(lines)) || lc.Nodes["log"].Errors != 0 {
			t.Errorf("%s: the source counted %d events (%d errors), want %d", c, in, lc.Nodes["log"].Errors, len(lines))
		}
	}
	lc := srv.waitCommitted(name, int64(len(lines)), time.Minute)
	got := srv.results(name, "out")
	if len(got) != len(want) {
		t.Errorf("%d sessions collected, `scenario-server run` gives %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("session %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	if in := lc.Nodes["log"].In; in != int64(len(lines)) || lc.Nodes["log"].Errors != 0 {
		t.Errorf("the source counted %d events (%d errors), want %d", in, lc.Nodes["log"].Errors, len(lines))
	}
	t.Logf("%s: %d events over 3 kills; %d sessions collected, equal to `scenario-server run`; source in=%d, sessions out=%d",
		st.name, len(lines), len(got), lc.Nodes["log"].In, lc.Nodes["sessions"].Out)
	srv.stop()
}

// inspectStore opens the store of a stopped server and returns the events the running
// deployment's last checkpoint covers and the events its log holds.
func inspectStore(t *testing.T, st serverStore, name string) (covered, stored int64) {
	t.Helper()
	var s store.Store
	var err error
	if st.databaseURL != "" {
		s, err = postgres.Open(t.Context(), st.databaseURL)
	} else {
		s, err = sqlite.Open(t.Context(), st.dataDir)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	active, err := s.ListActiveDeployments(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(active, func(d store.Deployment) bool { return d.Scenario == name })
	if i < 0 {
		t.Fatalf("no active deployment of %q: %v", name, active)
	}
	cp, err := s.GetLatestCheckpoint(t.Context(), active[i].ID)
	if err != nil {
		t.Fatal(err)
	}
	covered = cp.Positions[0].Offset
	stored = covered
	for {
		events, err := s.ReadEvents(t.Context(), store.EventLog{Scenario: name, Source: "log"}, stored, store.MaxReadLimit)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) == 0 {
			return covered, stored
		}
		stored = events[len(events)-1].Offset + 1
	}
}
