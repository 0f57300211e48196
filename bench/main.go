// Command bench measures the main job against hand-written references, side by side in one
// run, on this machine, and prints each figure, its reference and their ratio (issue 14):
//
//   - HTTP ingestion into a deployed hopping scenario (8 clients, NDJSON batches of 500),
//     on SQLite and, with -pg, on PostgreSQL, against a server that appends each body to a
//     file and fsyncs it (the ceiling);
//   - `scenario-server run` on the standard workload (1,000,000 events, 1,000 keys, hopping
//     60 s / 10 s, 5 s of disorder) against a loop that decodes the lines with goccy/go-json
//     and feeds a hand-written ring of slice partials; peak RSS from /usr/bin/time -v;
//   - the engine alone: the same scenario's engine fed the workload already decoded, against
//     the ring part of that loop fed the same decoded events (bench/engine.go);
//   - the window core on decoded events at 10 s and 1 s slices against the ring;
//   - session windows: allocations per event and live heap.
//
// Each pair runs -rounds times, alternated (product, reference, product, reference, ...);
// the figures are medians. The run and window core figures are events per CPU second of
// the process (user and system time, the garbage collector included), which a machine
// shared with other work does not skew as it skews wall time; ingestion is events per
// second of wall time, from the first request to the last 202. With -base-server and -base-bench (built from another revision,
// see scripts/bench.sh) the product of that revision runs in the same rounds, so the ratios
// before and after a change come from one run; the two take turns at going first in a round
// (inTurn). Run it through scripts/bench.sh, which
// builds the binaries; it is not a test and CI only compiles it. BENCH_CPUPROFILE=FILE
// writes a CPU profile of the timed part of a -child measurement.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

type options struct {
	server, baseServer, baseBench string
	rounds                        int
	events, coreEvents            int
	ingestEvents, clients, batch  int
	pg                            string
	only                          string
	profileDir                    string
}

func main() {
	var o options
	child := flag.String("child", "", "internal: run one measurement in this process (ref-run, ceiling, core-product, core-ring, engine-product, engine-count, engine-ring, sessions); workload writes the run figure's events to -output and its scenario to -input")
	dir := flag.String("dir", "", "internal: the ceiling server's directory")
	input := flag.String("input", "", "internal: ref-run's input")
	output := flag.String("output", "", "internal: ref-run's output")
	precision := flag.Int64("precision", 10_000, "internal: the core figures' slice width, ms")
	flag.StringVar(&o.server, "server", "", "the scenario-server binary to measure (required)")
	flag.StringVar(&o.baseServer, "base-server", "", "the scenario-server binary of the revision to compare with")
	flag.StringVar(&o.baseBench, "base-bench", "", "this command built against the revision to compare with (window core and sessions figures)")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds of each pair; the figures are medians")
	flag.IntVar(&o.events, "events", 1_000_000, "events of the run workload")
	flag.IntVar(&o.coreEvents, "core-events", 1_000_000, "events of the window core and sessions figures")
	flag.IntVar(&o.ingestEvents, "ingest-events", 200_000, "events sent in each ingestion run")
	flag.IntVar(&o.clients, "clients", 8, "concurrent clients of the load client")
	flag.IntVar(&o.batch, "batch", 500, "events per NDJSON batch")
	flag.StringVar(&o.pg, "pg", "", "a postgres:// URL: also measure ingestion on PostgreSQL (fsync should be on)")
	flag.StringVar(&o.only, "only", "ingest,run,core,sessions", "which figures, comma-separated")
	flag.StringVar(&o.profileDir, "cpuprofile-dir", "", "write CPU profiles of one extra ingestion run per server into this directory")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), `bench measures the main job against hand-written references, side by side, and prints
each figure, its reference, their ratio and the target. scripts/bench.sh builds it and the
server and passes -server; sizes below the defaults check that it runs, not the ratios.

Usage: bench -server PATH [flags]
`)
		flag.PrintDefaults()
	}
	flag.Parse()
	var err error
	switch *child {
	case "":
		err = orchestrate(o)
	case "ref-run":
		err = refRun(*input, *output)
	case "workload":
		// The run figure's input (-output) and scenario (-input), to run or profile by hand.
		if err = writeWorkload(*output, o.events); err == nil {
			err = os.WriteFile(*input, []byte(runScenario), 0o600)
		}
	case "ceiling":
		err = ceilingServer(*dir)
	case "core-product", "core-ring":
		f := coreProduct
		if *child == "core-ring" {
			f = coreRing
		}
		var rate float64
		var results int
		rate, results, err = f(o.coreEvents, *precision)
		if err == nil {
			err = json.NewEncoder(os.Stdout).Encode(map[string]float64{"rate": rate, "results": float64(results)})
		}
	case "engine-product", "engine-count", "engine-ring":
		f := map[string]func(int, string) (float64, int64, error){
			"engine-product": engineProduct, "engine-count": engineCount, "engine-ring": engineRing}[*child]
		var rate float64
		var results int64
		rate, results, err = f(o.events, *output)
		if err == nil {
			err = json.NewEncoder(os.Stdout).Encode(map[string]float64{"rate": rate, "results": float64(results)})
		}
	case "sessions":
		var allocs float64
		var half, end uint64
		allocs, half, end, err = sessions(o.coreEvents)
		if err == nil {
			err = json.NewEncoder(os.Stdout).Encode(map[string]float64{"allocs": allocs, "heapHalf": float64(half), "heapEnd": float64(end)})
		}
	default:
		err = fmt.Errorf("unknown -child %q", *child)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// timedPart starts the CPU profile BENCH_CPUPROFILE names, if any, and returns its stop.
func timedPart() func() {
	path := os.Getenv("BENCH_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// inTurn runs after, and before when there is a base, in round's order: the product first in
// even rounds, the base first in odd ones, so that what the first of a pair pays is spread
// over both (a control of one revision against itself, product first each round, measured the
// second of each pair 11 % faster on the engine-alone figure).
func inTurn(round int, base bool, after, before func() error) error {
	if !base {
		return after()
	}
	if round%2 == 1 {
		after, before = before, after
	}
	if err := after(); err != nil {
		return err
	}
	return before()
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// figure is one measured pair (or trio, with the base revision).
type figure struct {
	name, unit string
	target     float64 // the ratio the issue asks for; 0: none
	after      []float64
	before     []float64
	ref        []float64
}

func (f figure) print() {
	a, r := median(f.after), median(f.ref)
	line := fmt.Sprintf("%-34s product %10s %s  reference %10s", f.name, human(a), f.unit, human(r))
	if len(f.before) > 0 {
		b := median(f.before)
		line += fmt.Sprintf("  ratio %.2f (before: %s, ratio %.2f)", a/r, human(b), b/r)
	} else {
		line += fmt.Sprintf("  ratio %.2f", a/r)
	}
	if f.target > 0 {
		verdict := "MET"
		if a/r < f.target {
			verdict = "NOT MET"
		}
		line += fmt.Sprintf("  target ≥%.2f %s", f.target, verdict)
	}
	fmt.Println(line)
}

func human(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.2f M", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1f k", x/1e3)
	}
	return fmt.Sprintf("%.3g", x)
}

func orchestrate(o options) error {
	if o.server == "" {
		return errors.New("-server is required (scripts/bench.sh builds it)")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if o.rounds < 1 || o.events < 1 || o.coreEvents < 2 || o.ingestEvents < 1 || o.clients < 1 || o.batch < 1 {
		return errors.New("-rounds, -events, -ingest-events, -clients and -batch must be at least 1, -core-events at least 2")
	}
	only := map[string]bool{}
	for _, s := range strings.Split(o.only, ",") {
		s = strings.TrimSpace(s)
		switch s {
		case "ingest", "run", "core", "sessions":
			only[s] = true
		default:
			return fmt.Errorf("-only: unknown figure %q (ingest, run, core, sessions)", s)
		}
	}
	host, _ := os.Hostname()
	cpus, _ := exec.Command("nproc").Output()
	fmt.Printf("bench %s on %s (%s CPUs), load average %s; medians of %d round(s), alternated\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), host, strings.TrimSpace(string(cpus)), loadavg(), o.rounds)
	if only["core"] {
		for _, p := range []int64{10_000, 1_000} {
			f := figure{name: fmt.Sprintf("window core, %d s slices", p/1000), unit: "ev/CPU-s", target: map[int64]float64{10_000: 0.6, 1_000: 0.5}[p]}
			for round := range o.rounds {
				err := inTurn(round, o.baseBench != "", func() error {
					v, err := childRate(self, "core-product", o, p)
					f.after = append(f.after, v)
					return err
				}, func() error {
					v, err := childRate(o.baseBench, "core-product", o, p)
					f.before = append(f.before, v)
					return err
				})
				if err != nil {
					return err
				}
				v, err := childRate(self, "core-ring", o, p)
				if err != nil {
					return err
				}
				f.ref = append(f.ref, v)
			}
			f.print()
		}
		fmt.Printf("  (load average %s)\n", loadavg())
	}
	if only["sessions"] {
		for _, b := range []string{self, o.baseBench} {
			if b == "" {
				continue
			}
			out, err := exec.Command(b, "-child", "sessions", "-core-events", strconv.Itoa(o.coreEvents)).Output()
			if err != nil {
				return fmt.Errorf("sessions: %w", err)
			}
			var r map[string]float64
			if err := json.Unmarshal(out, &r); err != nil {
				return err
			}
			which := "product"
			if b != self {
				which = "before"
			}
			fmt.Printf("%-34s %-7s %.3f allocs/event; live heap after %d events %.1f MB, after %d %.1f MB (target: 0 allocs, heap flat)\n",
				"sessions (timeout 2 s, 1,000 keys)", which, r["allocs"], o.coreEvents/2, r["heapHalf"]/1e6, o.coreEvents, r["heapEnd"]/1e6)
		}
	}
	if only["run"] {
		if err := runFigure(self, o); err != nil {
			return err
		}
		if err := engineFigure(self, o); err != nil {
			return err
		}
	}
	if only["ingest"] {
		if err := ingestFigures(self, o); err != nil {
			return err
		}
	}
	fmt.Printf("load average at the end %s\n", loadavg())
	return nil
}

func childRate(bin, child string, o options, precision int64) (float64, error) {
	r, err := childFigures(bin, child, "-core-events", strconv.Itoa(o.coreEvents),
		"-precision", strconv.FormatInt(precision, 10))
	return r["rate"], err
}

// childFigures runs bin -child child with args and returns the figures it prints.
func childFigures(bin, child string, args ...string) (map[string]float64, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(bin, append([]string{"-child", child}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s -child %s: %w: %s", bin, child, err, stderr.String())
	}
	var r map[string]float64
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, err
	}
	return r, nil
}

// engineFigure measures the engine alone (engine-product, and engine-product of -base-bench)
// against the reference loop's ring part (engine-ring), alternated, and checks that both
// give the same number of results. In the same rounds it measures engine-count and the
// window core at 10 s slices on the same events, and prints where the time per event goes
// on each side (enginePerEvent).
func engineFigure(self string, o options) error {
	dir, err := os.MkdirTemp("", "bench-engine-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "out.ndjson")
	f := figure{name: "engine alone (decoded events)", unit: "ev/CPU-s", target: 0.85}
	var results, counted, core, coreRef []float64
	measure := func(bin, child string, into *[]float64) error {
		r, err := childFigures(bin, child, "-events", strconv.Itoa(o.events), "-output", out)
		if err != nil {
			return err
		}
		*into = append(*into, r["rate"])
		results = append(results, r["results"])
		return nil
	}
	for round := range o.rounds {
		err := inTurn(round, o.baseBench != "",
			func() error { return measure(self, "engine-product", &f.after) },
			func() error { return measure(o.baseBench, "engine-product", &f.before) })
		if err != nil {
			return err
		}
		if err := measure(self, "engine-ring", &f.ref); err != nil {
			return err
		}
		if err := measure(self, "engine-count", &counted); err != nil {
			return err
		}
		for _, c := range []struct {
			child string
			into  *[]float64
		}{{"core-product", &core}, {"core-ring", &coreRef}} {
			r, err := childFigures(self, c.child, "-core-events", strconv.Itoa(o.events), "-precision", "10000")
			if err != nil {
				return err
			}
			*c.into = append(*c.into, r["rate"])
		}
	}
	for _, r := range results[1:] {
		if r != results[0] {
			return fmt.Errorf("engine alone: the product and the reference gave different numbers of results: %v", results)
		}
	}
	f.print()
	fmt.Printf("  (%.0f results each; load average %s)\n", results[0], loadavg())
	fmt.Println("  " + enginePerEvent(median(f.after), median(counted), median(core), median(f.ref), median(coreRef)))
	return nil
}

// enginePerEvent says where the engine alone's time per event goes, from the median rates
// (events per CPU second) of: the engine (product), the engine with results counted, not
// written (counted), the window core (core), and on the reference's side the ring with its
// JSON lines (ref) and without (coreRef). The window core's events are built outside its
// timing, so "the engine's layers" is all the engine does around the window operator:
// reading the record's fields, the event time and watermark, the group key and inputs,
// handing each result to the sink.
func enginePerEvent(product, counted, core, ref, coreRef float64) string {
	ns := func(rate float64) float64 { return 1e9 / rate }
	return fmt.Sprintf("per event: window core %.1f ns (ring %.1f ns); the engine's layers around it %.1f ns "+
		"(the engine with results counted, not written, less the window core); results as JSON lines %.1f ns "+
		"(reference %.1f ns); in all %.1f ns (reference %.1f ns)",
		ns(core), ns(coreRef), ns(counted)-ns(core), ns(product)-ns(counted), ns(ref)-ns(coreRef), ns(product), ns(ref))
}

var (
	maxRSS  = regexp.MustCompile(`Maximum resident set size \(kbytes\): (\d+)`)
	cpuUser = regexp.MustCompile(`User time \(seconds\): ([0-9.]+)`)
	cpuSys  = regexp.MustCompile(`System time \(seconds\): ([0-9.]+)`)
)

// timed runs args under /usr/bin/time -v and returns the CPU time (user and system) and the
// peak RSS in kB.
func timed(args ...string) (time.Duration, int64, error) {
	cmd := exec.Command("/usr/bin/time", append([]string{"-v"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err != nil {
		return 0, 0, fmt.Errorf("%v: %w: %s", args, err, stderr.String())
	}
	m := maxRSS.FindSubmatch(stderr.Bytes())
	u, sy := cpuUser.FindSubmatch(stderr.Bytes()), cpuSys.FindSubmatch(stderr.Bytes())
	if m == nil || u == nil || sy == nil {
		return 0, 0, fmt.Errorf("no peak RSS or CPU times in /usr/bin/time's output: %s", stderr.String())
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	us, _ := strconv.ParseFloat(string(u[1]), 64)
	ss, _ := strconv.ParseFloat(string(sy[1]), 64)
	return time.Duration((us + ss) * float64(time.Second)), kb, nil
}

func runFigure(self string, o options) error {
	dir, err := os.MkdirTemp("", "bench-run-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	input := filepath.Join(dir, "events.ndjson")
	if err := writeWorkload(input, o.events); err != nil {
		return err
	}
	scen := filepath.Join(dir, "scenario.json")
	if err := os.WriteFile(scen, []byte(runScenario), 0o600); err != nil {
		return err
	}
	out := filepath.Join(dir, "out.ndjson")
	f := figure{name: "scenario-server run", unit: "ev/CPU-s", target: 0.7}
	rss := figure{name: "peak RSS of run", unit: "MB"}
	product := func(bin string) (float64, float64, error) {
		d, kb, err := timed(bin, "run", "--scenario", scen, "--input", input, "--output", out)
		return float64(o.events) / d.Seconds(), float64(kb) / 1024, err
	}
	for round := range o.rounds {
		err := inTurn(round, o.baseServer != "", func() error {
			v, m, err := product(o.server)
			f.after, rss.after = append(f.after, v), append(rss.after, m)
			return err
		}, func() error {
			v, m, err := product(o.baseServer)
			f.before, rss.before = append(f.before, v), append(rss.before, m)
			return err
		})
		if err != nil {
			return err
		}
		d, kb, err := timed(self, "-child", "ref-run", "-input", input, "-output", out)
		if err != nil {
			return err
		}
		f.ref, rss.ref = append(f.ref, float64(o.events)/d.Seconds()), append(rss.ref, float64(kb)/1024)
	}
	f.print()
	line := fmt.Sprintf("%-34s product %8.1f MB  reference %8.1f MB", rss.name, median(rss.after), median(rss.ref))
	if len(rss.before) > 0 {
		line += fmt.Sprintf("  (before: %.1f MB)", median(rss.before))
	}
	verdict := "MET"
	if median(rss.after) > 64 {
		verdict = "NOT MET"
	}
	fmt.Printf("%s  target ≤64 MB %s\n  (load average %s)\n", line, verdict, loadavg())
	return nil
}

func ingestFigures(self string, o options) error {
	bodies := batches(workloadLines(o.ingestEvents), o.batch)
	stores := []struct{ name, url string }{{"SQLite", ""}}
	if o.pg != "" {
		stores = append(stores, struct{ name, url string }{"PostgreSQL", o.pg})
	}
	run := 0
	for _, st := range stores {
		f := figure{name: "HTTP ingestion, " + st.name, unit: "ev/s", target: map[string]float64{"SQLite": 0.3, "PostgreSQL": 0.2}[st.name]}
		proc := figure{name: "  processed too", unit: "ev/s"}
		var retries []float64
		product := func(bin, profile string) (float64, float64, error) {
			run++
			acc, done, r, err := ingestProduct(bin, st.url, fmt.Sprintf("bench%d-%d", time.Now().Unix(), run), bodies, o.ingestEvents, o.clients, profile)
			retries = append(retries, float64(r))
			return float64(o.ingestEvents) / acc.Seconds(), float64(o.ingestEvents) / done.Seconds(), err
		}
		for round := range o.rounds {
			err := inTurn(round, o.baseServer != "", func() error {
				a, p, err := product(o.server, "")
				if err != nil {
					return fmt.Errorf("ingestion on %s: %w", st.name, err)
				}
				f.after, proc.after = append(f.after, a), append(proc.after, p)
				return nil
			}, func() error {
				a, p, err := product(o.baseServer, "")
				if err != nil {
					return fmt.Errorf("ingestion on %s (base): %w", st.name, err)
				}
				f.before, proc.before = append(f.before, a), append(proc.before, p)
				return nil
			})
			if err != nil {
				return err
			}
			d, err := ingestCeiling(self, bodies, o.clients)
			if err != nil {
				return err
			}
			f.ref = append(f.ref, float64(o.ingestEvents)/d.Seconds())
			proc.ref = f.ref
		}
		f.print()
		proc.print()
		fmt.Printf("  (%d events a run, %d clients, batches of %d; 429 answers a run: median %.0f; load average %s)\n",
			o.ingestEvents, o.clients, o.batch, median(retries), loadavg())
		if o.profileDir != "" {
			// The server writes its profile when it exits, into a directory that must exist.
			if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
				return err
			}
			for _, b := range []struct{ bin, name string }{{o.server, "after"}, {o.baseServer, "before"}} {
				if b.bin == "" {
					continue
				}
				p := filepath.Join(o.profileDir, fmt.Sprintf("ingest-%s-%s.pprof", strings.ToLower(st.name), b.name))
				if _, _, err := product(b.bin, p); err != nil {
					return err
				}
				fmt.Printf("  CPU profile of the server (%s): %s\n", b.name, p)
			}
		}
	}
	return nil
}
