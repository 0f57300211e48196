package examples_test

// Each example scenario is replayed by `scenario-server run` on its real data
// in testdata/, and every result row is compared to an independent oracle: the
// same question asked of PostgreSQL in SQL (examples/sql/<example>.sql) over the
// same data, loaded line by line into a throw-away schema. The test parses no
// JSON itself when loading: the raw lines go to PostgreSQL, which extracts the
// fields and computes every time (examples/sql/load.sql).
//
// SQL has no watermark, so it is the right oracle only when the engine dropped
// nothing: the test fails unless the run reports late=0 and errors=0. With
// maxOutOfOrderness 60 s no event of these files is late (the flights are in
// order; the access log is out of order by at most 59 s).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scenario-server/scenario-server/store/postgres/pgtest"
)

// oracleExample is one example scenario and how to compare its results.
type oracleExample struct {
	name  string   // examples/<name>.json and examples/sql/<name>.sql
	input string   // file under testdata/
	key   []string // columns identifying a row; "line" alone: the n-th result is line n
	// approx names the columns compared within a tolerance rather than exactly.
	approx map[string]func(got, want int64) bool
}

// hllTolerance accepts a HyperLogLog estimate within max(1, 2 %) of the exact
// count. With p = 14 the standard error is 1.04/sqrt(16384) = 0.8 %, and below
// a few thousand distinct values linear counting is closer still.
func hllTolerance(got, want int64) bool {
	tol := math.Max(1, 0.02*float64(want))
	return math.Abs(float64(got-want)) <= tol
}

var oracleExamples = []oracleExample{
	{name: "flights-per-origin-hourly", input: "flights-20k.ndjson", key: []string{"origin", "windowStart"}},
	{name: "flights-rolling-hour", input: "flights-20k.ndjson", key: []string{"line"}},
	{name: "accesslog-sessions", input: "access-log-10k.ndjson", key: []string{"client", "start"}},
	{name: "accesslog-errors", input: "access-log-10k.ndjson", key: []string{"start"},
		approx: map[string]func(got, want int64) bool{"clients": hllTolerance}},
}

func TestExamplesAgainstPostgres(t *testing.T) {
	pgtest.URL(t) // skip (or fail, under CI) before building anything
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found from %s: %v", root, err)
	}

	bin := buildServer(t, root)
	conn := loadDatabase(t, root, "testdata")

	for _, ex := range oracleExamples {
		t.Run(ex.name, func(t *testing.T) {
			got, runTime := runExample(t, bin, root, ex)
			want, sqlTime := queryOracle(t, conn, ex)
			compareRows(t, ex, got, want)
			t.Logf("%s: %d engine rows compared with %d oracle rows; run %s, SQL %s", ex.name, len(got), len(want),
				runTime.Round(time.Millisecond), sqlTime.Round(time.Millisecond))
		})
	}
}

// Each example's saved test case, which a fresh server imports with it (examples/samples:
// the first 300 lines of its data file, and the values its sink must write on them), expects
// what PostgreSQL answers to the example's question over those 300 lines, row for row.
func TestExampleSamplesAgainstPostgres(t *testing.T) {
	pgtest.URL(t) // skip (or fail, under CI) before reading anything
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	conn := loadDatabase(t, root, filepath.Join("examples", "samples"))
	for _, ex := range oracleExamples {
		t.Run(ex.name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("samples", ex.name+".expected.json"))
			if err != nil {
				t.Fatal(err)
			}
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber()
			var expected map[string][]row
			if err := d.Decode(&expected); err != nil {
				t.Fatalf("samples/%s.expected.json: %v", ex.name, err)
			}
			if len(expected) != 1 || expected["out"] == nil {
				t.Fatalf("samples/%s.expected.json has sinks %v; want only out", ex.name, slices.Collect(maps.Keys(expected)))
			}
			got := expected["out"]
			if slices.Equal(ex.key, []string{"line"}) {
				for i, r := range got {
					r["line"] = int64(i + 1)
				}
			}
			want, _ := queryOracle(t, conn, ex)
			if len(want) == 0 {
				t.Fatal("the oracle has no row for the sample")
			}
			compareRows(t, ex, got, want)
			t.Logf("%s: %d expected values compared with %d oracle rows", ex.name, len(got), len(want))
		})
	}
}

// buildServer builds cmd/scenario-server into a temporary directory.
func buildServer(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "scenario-server")
	start := time.Now()
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/scenario-server")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/scenario-server: %v\n%s", err, out)
	}
	t.Logf("built scenario-server in %s", time.Since(start).Round(time.Millisecond))
	return bin
}

// loadDatabase connects to a schema of the test database, dropped when t ends,
// copies the raw lines of both data files (in dir, under root) into it and derives the
// typed tables with sql/load.sql. The connection's time zone is UTC.
func loadDatabase(t *testing.T, root, dir string) *pgx.Conn {
	t.Helper()
	ctx := t.Context()
	schema, connString := pgtest.Schema(t)
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		t.Fatalf("parsing %s: %v", pgtest.URLEnv, err)
	}
	cfg.RuntimeParams["timezone"] = "UTC"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connecting to %s: %v", pgtest.URLEnv, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) }) // before the schema is dropped
	var tz string
	if err := conn.QueryRow(ctx, "SHOW TimeZone").Scan(&tz); err != nil || tz != "UTC" {
		t.Fatalf("session time zone is %q (%v), want UTC", tz, err)
	}

	start := time.Now()
	for table, file := range map[string]string{
		"flights_raw":    "flights-20k.ndjson",
		"access_log_raw": "access-log-10k.ndjson",
	} {
		if _, err := conn.Exec(ctx, "CREATE TABLE "+table+" (line bigint PRIMARY KEY, doc text NOT NULL)"); err != nil {
			t.Fatalf("creating %s: %v", table, err)
		}
		rows := rawLines(t, filepath.Join(root, dir, file))
		n, err := conn.CopyFrom(ctx, pgx.Identifier{table}, []string{"line", "doc"}, pgx.CopyFromRows(rows))
		if err != nil || n != int64(len(rows)) {
			t.Fatalf("copying %s into %s: %d of %d rows: %v", file, table, n, len(rows), err)
		}
	}
	if _, err := conn.Exec(ctx, readSQL(t, "load")); err != nil {
		t.Fatalf("sql/load.sql: %v", err)
	}
	t.Logf("loaded the data into PostgreSQL schema %s in %s", schema, time.Since(start).Round(time.Millisecond))
	return conn
}

// rawLines returns (line number, line) for every non-blank line of path; line
// numbers count every line from 1, as the engine's replay does.
func rawLines(t *testing.T, path string) [][]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if strings.TrimSpace(line) != "" {
			rows = append(rows, []any{int64(i + 1), line})
		}
	}
	return rows
}

func readSQL(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("sql", name+".sql"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// row is one result: column or field name to value. Values are int64,
// float64, string, bool, nil (SQL), or what encoding/json gives with UseNumber
// (engine).
type row map[string]any

// summaryRE finds the run's summary line on stderr ("summary: events=... outputs=... late=... errors=... ...").
var summaryRE = regexp.MustCompile(`(?:^|\s)events=(\d+) outputs=(\d+) late=(\d+) errors=(\d+)(?:\s|$)`)

// runExample replays the example's data through `scenario-server run` and
// returns the values of its sink, with "line" set to the result's 1-based
// position when the example is keyed by line.
func runExample(t *testing.T, bin, root string, ex oracleExample) ([]row, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run",
		"--scenario", filepath.Join("examples", ex.name+".json"),
		"--input", filepath.Join("testdata", ex.input),
		"--output", "-")
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("scenario-server run %s: %v\nstderr:\n%s", ex.name, err, tail(stderr.String(), 4000))
	}

	var summary []string
	for line := range strings.SplitSeq(stderr.String(), "\n") {
		if m := summaryRE.FindStringSubmatch(line); m != nil {
			summary = m
		}
	}
	if summary == nil {
		t.Fatalf("no summary line (events=... outputs=... late=... errors=...) on stderr:\n%s", tail(stderr.String(), 4000))
	}
	t.Logf("summary: %s", strings.TrimSpace(summary[0]))
	if summary[3] != "0" || summary[4] != "0" {
		t.Fatalf("the run reports late=%s errors=%s: the engine dropped or failed events, so SQL over "+
			"all the rows is not the same question and the comparison is invalid\nstderr:\n%s",
			summary[3], summary[4], tail(stderr.String(), 4000))
	}
	if want := strconv.Itoa(len(rawLines(t, filepath.Join(root, "testdata", ex.input)))); summary[1] != want {
		t.Fatalf("the run read events=%s, the file has %s", summary[1], want)
	}

	var rows []row
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		d.UseNumber()
		var out struct {
			Sink  string `json:"sink"`
			Value row    `json:"value"`
		}
		if err := d.Decode(&out); err != nil {
			t.Fatalf("output line %d: %v: %s", len(rows)+1, err, sc.Bytes())
		}
		if out.Sink != "out" || out.Value == nil {
			t.Fatalf("output line %d: want {\"sink\": \"out\", \"value\": {...}}, got %s", len(rows)+1, sc.Bytes())
		}
		if slices.Equal(ex.key, []string{"line"}) {
			out.Value["line"] = int64(len(rows) + 1)
		}
		rows = append(rows, out.Value)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if summary[2] != strconv.Itoa(len(rows)) {
		t.Errorf("the summary says outputs=%s, stdout has %d results", summary[2], len(rows))
	}
	return rows, elapsed
}

// queryOracle runs sql/<example>.sql.
func queryOracle(t *testing.T, conn *pgx.Conn, ex oracleExample) ([]row, time.Duration) {
	t.Helper()
	start := time.Now()
	rs, err := conn.Query(t.Context(), readSQL(t, ex.name))
	if err != nil {
		t.Fatalf("sql/%s.sql: %v", ex.name, err)
	}
	defer rs.Close()
	var rows []row
	for rs.Next() {
		vals, err := rs.Values()
		if err != nil {
			t.Fatalf("sql/%s.sql: %v", ex.name, err)
		}
		r := row{}
		for i, fd := range rs.FieldDescriptions() {
			switch v := vals[i].(type) {
			case int16:
				r[fd.Name] = int64(v)
			case int32:
				r[fd.Name] = int64(v)
			case float32:
				r[fd.Name] = float64(v)
			case int64, float64, string, bool, nil:
				r[fd.Name] = v
			default:
				t.Fatalf("sql/%s.sql: column %s has type %T; cast it to bigint, float8 or text", ex.name, fd.Name, v)
			}
		}
		rows = append(rows, r)
	}
	if err := rs.Err(); err != nil {
		t.Fatalf("sql/%s.sql: %v", ex.name, err)
	}
	return rows, time.Since(start)
}

// keyOf renders the key columns of r; engine numbers that are integers render
// as the SQL int64 would.
func keyOf(r row, cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		v, ok := r[c]
		switch {
		case !ok:
			parts[i] = "<missing>"
		default:
			if n, isNum := v.(json.Number); isNum {
				if iv, err := strconv.ParseInt(string(n), 10, 64); err == nil {
					v = iv
				}
			}
			parts[i] = fmt.Sprintf("%#v", v)
		}
	}
	return strings.Join(parts, " ")
}

// compareRows matches the engine's rows to the oracle's by key: each must
// match exactly one row of the other side, with equal values in every column.
func compareRows(t *testing.T, ex oracleExample, got, want []row) {
	t.Helper()
	const show = 5
	wantBy := map[string]row{}
	for _, w := range want {
		k := keyOf(w, ex.key)
		if _, dup := wantBy[k]; dup {
			t.Fatalf("sql/%s.sql returns key %s twice", ex.name, k)
		}
		wantBy[k] = w
	}
	gotBy := map[string]row{}
	var dups []string
	for _, g := range got {
		k := keyOf(g, ex.key)
		if _, dup := gotBy[k]; dup {
			dups = append(dups, fmt.Sprintf("%s: %s", k, fmtRow(g)))
			continue
		}
		gotBy[k] = g
	}
	var missing, extra, differ []string
	approxStats := map[string]*approxStat{}
	for _, k := range sortedKeys(wantBy) {
		if _, ok := gotBy[k]; !ok {
			missing = append(missing, fmt.Sprintf("%s: %s", k, fmtRow(wantBy[k])))
		}
	}
	for _, k := range sortedKeys(gotBy) {
		w, ok := wantBy[k]
		if !ok {
			extra = append(extra, fmt.Sprintf("%s: %s", k, fmtRow(gotBy[k])))
			continue
		}
		for c := range ex.approx {
			logApprox(approxStats, c, gotBy[k][c], w[c])
		}
		if problems := diffRow(ex, gotBy[k], w); len(problems) > 0 {
			differ = append(differ, fmt.Sprintf("%s: %s\n\t\tengine: %s\n\t\tsql:    %s",
				k, strings.Join(problems, "; "), fmtRow(gotBy[k]), fmtRow(w)))
		}
	}
	report := func(what string, list []string) {
		if len(list) == 0 {
			return
		}
		shown := list[:min(show, len(list))]
		t.Errorf("%s: %d %s (key %s), first %d:\n\t%s", ex.name, len(list), what,
			strings.Join(ex.key, ", "), len(shown), strings.Join(shown, "\n\t"))
	}
	for _, c := range sortedKeys(approxStats) {
		st := approxStats[c]
		t.Logf("%s: %s estimated within tolerance of the exact count: %d of %d rows exact, largest difference %d (%.2f %%)",
			ex.name, c, st.exact, st.rows, st.maxDiff, 100*st.maxRel)
	}
	report("engine rows with a duplicate key", dups)
	report("oracle rows missing from the engine's output", missing)
	report("extra engine rows the oracle does not have", extra)
	report("rows that differ", differ)
	if len(got) != len(want) && len(missing)+len(extra)+len(dups) == 0 {
		t.Errorf("%s: engine %d rows, oracle %d", ex.name, len(got), len(want))
	}
}

// approxStat sums up how far the estimates of one approximate column are
// from the exact values, over the rows whose keys match.
type approxStat struct {
	rows, exact, maxDiff int64
	maxRel               float64
}

func logApprox(stats map[string]*approxStat, col string, g, w any) {
	num, ok := g.(json.Number)
	want, ok2 := w.(int64)
	if !ok || !ok2 {
		return
	}
	got, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil {
		return
	}
	st := stats[col]
	if st == nil {
		st = &approxStat{}
		stats[col] = st
	}
	st.rows++
	d := got - want
	if d < 0 {
		d = -d
	}
	if d == 0 {
		st.exact++
	}
	st.maxDiff = max(st.maxDiff, d)
	if want != 0 {
		st.maxRel = max(st.maxRel, float64(d)/float64(want))
	}
}

// diffRow compares every column of the oracle's row w with the engine's g;
// the engine must have no other field.
func diffRow(ex oracleExample, g, w row) []string {
	var problems []string
	for _, c := range sortedKeys(g) {
		if _, ok := w[c]; !ok {
			problems = append(problems, fmt.Sprintf("field %s is not in the oracle", c))
		}
	}
	for _, c := range sortedKeys(w) {
		gv, ok := g[c]
		if !ok {
			problems = append(problems, fmt.Sprintf("field %s missing", c))
			continue
		}
		if p := diffValue(gv, w[c], ex.approx[c]); p != "" {
			problems = append(problems, c+": "+p)
		}
	}
	return problems
}

// diffValue compares the engine's value g with the oracle's w: integers
// exactly (the engine must print an integer), floats within 1e-9 relative
// (1e-9 absolute near 0), strings and null exactly. approx, when set, compares
// integers instead.
func diffValue(g, w any, approx func(got, want int64) bool) string {
	switch w := w.(type) {
	case nil:
		if g != nil {
			return fmt.Sprintf("got %v, want null", g)
		}
	case string:
		if s, ok := g.(string); !ok || s != w {
			return fmt.Sprintf("got %#v, want %q", g, w)
		}
	case bool:
		if b, ok := g.(bool); !ok || b != w {
			return fmt.Sprintf("got %#v, want %v", g, w)
		}
	case int64:
		var n int64
		switch g := g.(type) {
		case int64: // the line of a result keyed by position
			n = g
		case json.Number:
			i, err := strconv.ParseInt(string(g), 10, 64)
			if err != nil {
				return fmt.Sprintf("got %s, want the integer %d", g, w)
			}
			n = i
		default:
			return fmt.Sprintf("got %#v, want the integer %d", g, w)
		}
		if approx != nil {
			if !approx(n, w) {
				return fmt.Sprintf("got %d, want %d within tolerance", n, w)
			}
		} else if n != w {
			return fmt.Sprintf("got %d, want %d", n, w)
		}
	case float64:
		num, ok := g.(json.Number)
		if !ok {
			return fmt.Sprintf("got %#v, want the number %v", g, w)
		}
		f, err := strconv.ParseFloat(string(num), 64)
		if err != nil {
			return fmt.Sprintf("got %s, want the number %v", num, w)
		}
		if math.Abs(f-w) > 1e-9*math.Max(1, math.Abs(w)) {
			return fmt.Sprintf("got %s, want %v (difference %g)", num, strconv.FormatFloat(w, 'g', -1, 64), f-w)
		}
	default:
		return fmt.Sprintf("oracle value of type %T", w)
	}
	return ""
}

func fmtRow(r row) string {
	var b strings.Builder
	b.WriteString("{")
	for i, k := range sortedKeys(r) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %v", k, r[k])
	}
	b.WriteString("}")
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
