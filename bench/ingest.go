package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// serveCeiling serves the fsync-to-file reference (see ceilingServer) on a free loopback
// port, printing the address to addrOut.
func serveCeiling(f *os.File, addrOut io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Fprintln(addrOut, ln.Addr().String())
	var mu sync.Mutex
	bufs := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := bufs.Get().(*bytes.Buffer)
		defer bufs.Put(buf)
		if err := readBody(buf, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		_, err := f.Write(buf.Bytes())
		if err == nil {
			err = f.Sync()
		}
		mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	return http.Serve(ln, h)
}

// batches splits lines into NDJSON bodies of size lines each.
func batches(lines [][]byte, size int) [][]byte {
	var out [][]byte
	for i := 0; i < len(lines); i += size {
		var b bytes.Buffer
		for _, l := range lines[i:min(i+size, len(lines))] {
			b.Write(l)
			b.WriteByte('\n')
		}
		out = append(out, b.Bytes())
	}
	return out
}

// load is the load client: clients goroutines POST the bodies to url, each under the
// Idempotency-Key b<index>, and retry a body answered 429 (back-pressure) after a short
// pause. It returns how long it took until every body was answered 202, and the 429s.
func load(url string, bodies [][]byte, clients int) (time.Duration, int64, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	var next, retries atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(bodies) {
					return
				}
				for {
					req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(bodies[i]))
					req.Header.Set("Content-Type", "application/x-ndjson")
					req.Header.Set("Idempotency-Key", "b"+strconv.Itoa(i))
					resp, err := c.Do(req)
					if err != nil {
						errOnce.Do(func() { firstErr = err })
						return
					}
					msg, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusTooManyRequests {
						retries.Add(1)
						time.Sleep(20 * time.Millisecond)
						continue
					}
					if resp.StatusCode != http.StatusAccepted {
						errOnce.Do(func() { firstErr = fmt.Errorf("batch %d: %s: %s", i, resp.Status, msg) })
						return
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), retries.Load(), firstErr
}

// server is a started scenario-server serve process.
type server struct {
	cmd  *exec.Cmd
	base string // http://host:port
	errs *bytes.Buffer
}

// startServer starts bin serve on a free loopback port with its store in dataDir, or in
// PostgreSQL when databaseURL is set, and waits until it listens.
func startServer(bin, dataDir, databaseURL string, extraEnv ...string) (*server, error) {
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir, "--log-format", "json",
		"--ingest-rate", "0")
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.Env = append(cmd.Env, "DATABASE_URL="+databaseURL)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, errs: &bytes.Buffer{}}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			var l struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "listening" && !sent {
				addr <- l.Addr
				sent = true
				continue
			}
			if s.errs.Len() < 1<<16 {
				s.errs.Write(sc.Bytes())
				s.errs.WriteByte('\n')
			}
		}
		if !sent {
			close(addr)
		}
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			cmd.Wait()
			return nil, fmt.Errorf("the server exited before listening: %s", s.errs)
		}
		s.base = "http://" + a
	case <-time.After(60 * time.Second):
		s.stop()
		return nil, errors.New("the server did not listen within 60 s")
	}
	return s, nil
}

func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

func (s *server) call(method, path, body string) ([]byte, error) {
	req, _ := http.NewRequestWithContext(context.Background(), method, s.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return b, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	return b, nil
}

// ingestScenario is the deployed scenario of the ingestion figure: the standard workload's
// hopping window, results into a collect sink.
const ingestScenario = `{"nodes": [
 {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
   {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.time"}},
   {"name": "maxOutOfOrderness", "value": "5s"}]}},
 {"id": "per key", "type": "CustomNode", "nodeType": "aggregate-hopping", "outputVar": "agg", "parameters": [
   {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.key"}]},
   {"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"},
     {"name": "total", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.amount"}}]},
   {"name": "windowLength", "value": "60s"}, {"name": "slide", "value": "10s"}, {"name": "precision", "value": "10s"}]},
 {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [
   {"name": "value", "expression": {"language": "expr", "expression": "{key: #key[0], start: #window.start, n: #agg.n, total: #agg.total}"}}]}}],
 "edges": [{"from": "in", "to": "per key", "edgeType": null}, {"from": "per key", "to": "out", "edgeType": null}]}`

// ingestProduct deploys the ingestion scenario on a fresh server and sends bodies with the
// load client. It returns the time until every batch was answered 202, and the time until
// the deployment had processed them all.
func ingestProduct(bin, databaseURL, name string, bodies [][]byte, events int, clients int, profile string) (accepted, processed time.Duration, retries int64, err error) {
	dir, err := os.MkdirTemp("", "bench-server-")
	if err != nil {
		return 0, 0, 0, err
	}
	defer os.RemoveAll(dir)
	var env []string
	if profile != "" {
		env = append(env, "SCENARIO_SERVER_CPUPROFILE="+profile)
	}
	if databaseURL != "" {
		// A fresh database per run, as SQLite gets a fresh directory: each binary migrates
		// its own.
		db := fmt.Sprintf("bench_%d", time.Now().UnixNano())
		if err := pgExec(databaseURL, "CREATE DATABASE "+db); err != nil {
			return 0, 0, 0, err
		}
		defer func() { _ = pgExec(databaseURL, "DROP DATABASE "+db+" WITH (FORCE)") }()
		u, err := url.Parse(databaseURL)
		if err != nil {
			return 0, 0, 0, err
		}
		u.Path = "/" + db
		databaseURL = u.String()
	}
	s, err := startServer(bin, dir, databaseURL, env...)
	if err != nil {
		return 0, 0, 0, err
	}
	defer s.stop()
	if _, err := s.call("POST", "/api/scenarios", `{"name": "`+name+`", "graph": `+ingestScenario+`}`); err != nil {
		return 0, 0, 0, err
	}
	path := "/api/scenarios/" + name
	if _, err := s.call("POST", path+"/deploy", `{}`); err != nil {
		return 0, 0, 0, err
	}
	start := time.Now()
	accepted, retries, err = load(s.base+path+"/sources/in/events", bodies, clients)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%w (server: %s)", err, s.errs)
	}
	for {
		b, err := s.call("GET", path+"/counts", "")
		if err != nil {
			return 0, 0, 0, err
		}
		var c struct {
			Sources []struct {
				Processed int64 `json:"processed"`
			} `json:"sources"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			return 0, 0, 0, err
		}
		if len(c.Sources) == 1 && c.Sources[0].Processed >= int64(events) {
			break
		}
		if time.Since(start) > 10*time.Minute {
			return 0, 0, 0, errors.New("the deployment did not process the events within 10 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	processed = time.Since(start)
	if profile != "" {
		s.cmd.Process.Signal(syscall.SIGUSR1)
		time.Sleep(200 * time.Millisecond)
	}
	return accepted, processed, retries, nil
}

// pgExec runs one statement on the database at databaseURL.
func pgExec(databaseURL, statement string) error {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, statement)
	return err
}

// ingestCeiling starts the reference server (this binary, -child ceiling) and sends bodies.
func ingestCeiling(self string, bodies [][]byte, clients int) (time.Duration, error) {
	dir, err := os.MkdirTemp("", "bench-ceiling-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(self, "-child", "ceiling", "-dir", dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return 0, err
	}
	d, _, err := load("http://"+strings.TrimSpace(addr)+"/", bodies, clients)
	return d, err
}
