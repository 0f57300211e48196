package engine

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/internal/names"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/slices"
	"github.com/scenario-server/scenario-server/value"
)

// Sources (Source/file, Source/http, Source/kafka): where events enter, with their event time
// and watermark (docs/semantics.md §1). The engine's PushJSON, PushValue and Replay decode and
// time a record for a source (Engine.pushValue), and it keeps the watermark; a deployment
// reads them through its input connectors. Nothing flows into a source.

// The subtypes of the sources (Source/file, Source/http, Source/kafka).
const (
	SourceFile  = "file"
	SourceHTTP  = "http"
	SourceKafka = "kafka"
)

// The kind IDs of the sources, for the connectors (nodes.Kind.ID).
const (
	SourceFileKind  = "Source/" + SourceFile
	SourceHTTPKind  = "Source/" + SourceHTTP
	SourceKafkaKind = "Source/" + SourceKafka
)

// Default durations.
const (
	DefaultMaxOutOfOrderness = 60 * time.Second
	DefaultIdleTimeout       = 3 * time.Minute
	// DefaultMaxFutureSkew is how far ahead of the wall clock a live source's event time may
	// be (docs/semantics.md §1).
	DefaultMaxFutureSkew = time.Hour
)

// fileSourceKind is the file source.
func fileSourceKind() *nodes.Kind {
	return sourceKind(SourceFile, "File source",
		"Reads events, one JSON object per line, from a file. A run or test replays the file once, in file order, as a bounded input; a deployment follows the file as lines are appended (tail -F).",
		true, "", nodes.ParamSpec{Name: "path", In: nodes.InParameters, Editor: nodes.EditorString, Type: "string", Required: true, Label: "Path",
			Description: "Path of the file, one JSON object per line; deployed, relative to the server's source directory (--source-dir)."})
}

// httpSourceKind is the HTTP source.
func httpSourceKind() *nodes.Kind {
	return sourceKind(SourceHTTP, "HTTP source",
		"Receives events POSTed to the server's ingestion endpoint for this scenario and source.",
		false, " Without it, the time the server accepted the event is used; a test or a run, which replays records and never reads the clock, gives every record time 0 (1970-01-01T00:00:00Z).")
}

// kafkaSourceKind is the Kafka source.
func kafkaSourceKind() *nodes.Kind {
	return sourceKind(SourceKafka, "Kafka source",
		"Reads events, JSON objects (the records' values), from every partition of a Kafka topic, on the brokers the server was started with (--kafka-brokers).",
		false, " Without it, the record's timestamp is used.", nodes.ParamSpec{Name: "topic", In: nodes.InParameters, Editor: nodes.EditorString, Type: "string", Required: true, Label: "Topic",
			Description: "The Kafka topic to read.", Aliases: []string{"Topic"}})
}

// sourceKind is a source of subtype typ; a bounded one (a file: a run or test reads it to its
// end) needs a timestamp. Each has an idle timeout, which deployments use (a deployed file
// is followed as it grows). untimed says, for one that is not bounded, what time an event
// without a timestamp expression gets.
func sourceKind(typ, label, desc string, bounded bool, untimed string, extra ...nodes.ParamSpec) *nodes.Kind {
	params := append([]nodes.ParamSpec{}, extra...)
	tsDesc := "Event time: epoch milliseconds (a fraction of one floored) or an RFC 3339 string, e.g. #input.ts or parseTime(#input.date, \"yyyy/MM/dd HH:mm\")." + untimed
	params = append(params,
		nodes.ParamSpec{Name: "timestamp", In: nodes.InParameters, Editor: nodes.EditorExpression, Type: "timestamp", Required: bounded, Label: "Timestamp", Description: tsDesc},
		nodes.ParamSpec{Name: "maxOutOfOrderness", In: nodes.InParameters, Editor: nodes.EditorDuration, Type: "duration", Default: "60s", Label: "Max out-of-orderness",
			Description: "How late an event may come: the watermark is the largest event time seen less this (0 allowed)."},
		nodes.ParamSpec{Name: "schema", In: nodes.InParameters, Editor: nodes.EditorJSONSchema, Type: "object", Label: "JSON Schema",
			Description: "Optional JSON Schema of the events; #input is typed from it (dynamic without it)."},
		nodes.ParamSpec{Name: "enforceSchema", In: nodes.InParameters, Editor: nodes.EditorBoolean, Type: "boolean", Default: false, Label: "Enforce schema",
			Description: "Check each event against the JSON Schema: an event that does not fit is an error at the source (field schema, saying where and why, e.g. /amount: got string, want number) and goes no further; deployed, it goes to the dead letters. Needs a schema."},
		nodes.ParamSpec{Name: "maxFutureSkew", In: nodes.InParameters, Editor: nodes.EditorDuration, Type: "duration", Default: "1h", Label: "Max future skew",
			Description: "Deployed: an event whose time is further ahead of the server's clock than this is refused, as an error at the source that does not move the watermark, so one mistyped timestamp cannot make every later event late. Tests and runs have no such bound."},
	)
	idleDesc := "A source silent this long stops holding back the watermark of the nodes it feeds: its watermark moves on at the wall clock's pace."
	if bounded {
		idleDesc = "Deployed (the file followed as it grows): a file with no new line this long stops holding back the watermark of the nodes it feeds, so the windows open at its last line close. A run or test ends with the file and never reads the clock."
	}
	params = append(params, nodes.ParamSpec{Name: "idleTimeout", In: nodes.InParameters, Editor: nodes.EditorDuration, Type: "duration", Default: "3m", Label: "Idle timeout",
		Description: idleDesc})
	return &nodes.Kind{
		ID: "Source/" + typ, NodeType: scenario.TypeSource, Subtype: typ, Group: nodes.GroupSources, Label: label, Description: desc, Role: nodes.RoleSource,
		Parameters: params,
		Validate:   func(c *nodes.Check) { checkSource(c, bounded) },
		Typed:      typedSource,
		Runtime:    builder(newSource),
	}
}

func checkSource(c *nodes.Check, bounded bool) {
	inputType := expression.Unknown
	enforce, _ := c.Bool("enforceSchema")
	raw := c.Literal("schema")
	if enforce && raw == nil {
		c.Errorf("enforceSchema", nodes.CodeInvalidParameter, "enforceSchema needs a JSON Schema in parameter \"schema\"")
	}
	fromRegistry := false
	if raw == nil {
		raw = c.SourceSchema() // a schema registry's, if any
		fromRegistry = raw != nil
	}
	if raw != nil {
		t, err := expression.TypeFromJSONSchema(raw)
		switch {
		case fromRegistry && err == nil && !nodes.TypeFits(t):
			// Not the scenario's fault: a registry schema of many fields leaves #input
			// untyped, as a registry that is down does, rather than stopping the deploy.
			c.Warnf("topic", nodes.CodeSourceSchemaUnknown, "#input is not typed from the schema registry: the type of the topic's schema has more than %d parts (record fields and list elements, nested)", nodes.MaxTypeParts)
		case err != nil:
			c.Errorf("schema", nodes.CodeInvalidSchema, "%v", err)
		case t.Kind != expression.KindRecord && t.Kind != expression.KindUnknown:
			c.Errorf("schema", nodes.CodeInvalidSchema, "the schema describes %s values, but events are JSON objects (\"type\": \"object\")", t.Kind)
		default:
			t.Nullable = false // an event is never null
			inputType = t
			if enforce {
				if s, err := nodes.CompileEventSchema(raw); err != nil {
					c.Errorf("schema", nodes.CodeInvalidSchema, "the schema cannot be enforced: %v", err)
				} else {
					c.Record("schema", s)
				}
			}
		}
	}
	c.Duration("maxOutOfOrderness", false)
	c.Duration("maxFutureSkew", false)
	c.Duration("idleTimeout", true)
	for _, name := range []string{"path", "topic"} {
		if _, ok := c.Kind().Param(name); ok && c.Given(name) {
			if s, ok := c.String(name); ok && s == "" {
				c.Errorf(name, nodes.CodeInvalidParameter, "parameter %q must not be empty", name)
			}
		}
	}
	env := c.With(nodes.EmptyScope(), nodes.VarInput, inputType)
	if e := c.ExpressionParam("timestamp"); e != nil {
		if prog := c.Compile("timestamp", e, env.Env(), expression.Unknown); prog != nil {
			switch t := prog.Result(); t.Kind {
			case expression.KindInteger, expression.KindFloat, expression.KindNumber, expression.KindString, expression.KindUnknown:
			default:
				c.ResultProblem("timestamp", e, "the timestamp must be epoch milliseconds (an integer) or an RFC 3339 string, but it is %s", t)
			}
		}
	}
	c.SetVisible(env)
	c.SetOut(c.With(env, nodes.VarMeta, nodes.MetaType))
}

// SourcePlan is a source's plan (Source/file, Source/http, Source/kafka).
type SourcePlan struct {
	Timestamp nodes.Expr // nil Program: no timestamp expression
	// MaxOutOfOrderness and MaxFutureSkew, defaults applied.
	MaxOutOfOrderness, MaxFutureSkew time.Duration
	// Live: the source's kind has an idle timeout, IdleTimeout (default applied), which a
	// deployment uses: every source kind of the engine's (a deployed file is followed as it
	// grows), not always one registered from outside.
	Live        bool
	IdleTimeout time.Duration
	Topic, Path string // Kafka's topic, a file's path ("" for the others)
	// Schema is the compiled schema each event is checked against (enforceSchema); nil:
	// events are not checked.
	Schema *nodes.EventSchema
}

func typedSource(c *nodes.Check) any {
	p := &SourcePlan{
		Timestamp:         c.Expr("timestamp"),
		MaxOutOfOrderness: c.DurationOr("maxOutOfOrderness", DefaultMaxOutOfOrderness),
		MaxFutureSkew:     c.DurationOr("maxFutureSkew", DefaultMaxFutureSkew),
	}
	if _, live := c.Kind().Param("idleTimeout"); live {
		p.Live, p.IdleTimeout = true, c.DurationOr("idleTimeout", DefaultIdleTimeout)
	}
	p.Topic, _ = c.Plan().Params["topic"].(string)
	p.Path, _ = c.Plan().Params["path"].(string)
	p.Schema, _ = c.Plan().Params["schema"].(*nodes.EventSchema)
	return p
}

// source is a source node's reading state.
type source struct {
	*node
	ev         event // reused for each event of the source
	timestamp  *evaluator
	outOfOrder int64 // ms
	seen       bool
	maxTime    int64
	// ownTime: an event came with its own time (a multi-source line's timestamp, PushValue's
	// eventTime), for TimeHint (not kept in snapshots: TimeHint is for bounded runs).
	ownTime bool
	// live sources: the idle timeout (ms, 0: none), the wall-clock time of
	// the last arrival (ms), and the watermark floor an idle step gave.
	idleTimeout int64
	lastArrival int64
	idleW       int64
	// maxFutureSkew (ms, 0: none) bounds how far ahead of the wall clock a live source's
	// event time may be.
	maxFutureSkew int64
	// parts: a live source whose events come with input partitions (Kafka; see
	// Engine.SetInputPartition) keeps per partition what its watermark needs; maxTime is
	// then the partitions' floor (partitionFloor), not the largest event time.
	parts map[int32]*partState
	// listed: the source's input lists its partitions (MarkPartitions): while a partition
	// holds nothing back, the watermark goes no further than what the last listing knew.
	listed bool
	// floor is what the last scan of parts found (partitionFloor), for partitionEvent.
	floor      floorScan
	decoder    value.Decoder
	wantFields *value.FieldSet // top-level #input fields the scenario reads; nil: all
	// The record being pushed: its wanted fields (by position in
	// wantFields) when fields is not nil, and otherwise input.
	fields    []value.Value
	present   uint64 // bit k: the record has field k
	input     value.Value
	lazyInput bool // #input is made from fields when needed
	// schema (enforceSchema; nil: none) checks each event before it goes on, from raw, the
	// record as JSON, when it was decoded from JSON, and otherwise from input.
	schema *nodes.EventSchema
	raw    []byte
	// feeds, when not nil, is the aggregate the source's one edge leads to, whose groupBy
	// and aggregateBy expressions all read one field of #input: the source hands it each
	// event directly (see wire). tsField: the timestamp expression reads one field of
	// #input.
	feeds   *aggregator
	tsField bool
}

// wire sets s.feeds and s.tsField: an event then reaches its aggregate, and its event time,
// with each field read where the source holds it (inputField) instead of through the graph
// and the event's slots; what is counted, reported and added is the same (TestDirectSinkAgreesWithGraph).
func (s *source) wire(e *Engine, n *node) {
	s.tsField = s.timestamp != nil && e.oneInputField(s.timestamp.path)
	if len(n.out) != 1 || len(n.main) != 1 || e.opts.Observe != nil {
		return
	}
	a := n.main[0].agg
	if a == nil || a.endCond != nil {
		return
	}
	for _, ev := range a.groupBy {
		if !e.oneInputField(ev.path) {
			return
		}
	}
	for _, ev := range a.aggBy {
		if ev != nil && !e.oneInputField(ev.path) {
			return
		}
	}
	s.feeds = a
}

// oneInputField says whether p (nil: not a path) reads one field of #input (#input.amount).
func (e *Engine) oneInputField(p *pathRef) bool {
	return p != nil && p.slot == e.inputSlot && len(p.steps) == 1 && p.steps[0].index < 0
}

// inputField reads the field of #input that p names (oneInputField) for the event being
// pushed in c, as c.read(p) would: where it was decoded, or in the record given.
func (s *source) inputField(c *event, p *pathRef) (value.Value, error) {
	if s.lazyInput {
		if v, ok := s.lazyField(p.steps[0]); ok {
			return v, nil
		}
	} else if r := s.input.Record(); r != nil {
		return p.field(r, p.steps[0].name), nil
	}
	return c.read(p)
}

func newSource(e *Engine, n *node) (operator, error) {
	p := n.plan.Typed.(*SourcePlan)
	s := &source{node: n, idleW: idleFloorUnset}
	s.timestamp = n.evaluator(p.Timestamp)
	s.outOfOrder = p.MaxOutOfOrderness.Milliseconds()
	if p.Live {
		s.idleTimeout = p.IdleTimeout.Milliseconds()
	}
	s.maxFutureSkew = p.MaxFutureSkew.Milliseconds()
	s.schema = p.Schema
	n.src = s
	e.sources[n.id] = s
	return s, nil
}

// releaseEvent drops the record last pushed (eventHolder).
func (s *source) releaseEvent() {
	s.input, s.raw, s.lazyInput = value.Null(), nil, false
	s.decoder.Release()
	clear(s.fields)
	clear(s.ev.slots)
	s.ev.held = 0
}

// process: nothing enters a source along an edge (validation refuses edges into sources).
func (s *source) process(*Engine, *node, *event, string) {}

func (s *source) appendState(b []byte) []byte {
	b = slices.AppendBool(b, s.seen)
	b = binary.AppendVarint(b, s.maxTime)
	return binary.AppendVarint(b, s.idleW)
}

func (s *source) skipState(r *slices.Reader) { r.Bool(); r.Varint(); r.Varint() }

func (s *source) restoreState(e *Engine, r *slices.Reader) error {
	s.seen = r.Bool()
	s.maxTime = r.Varint()
	s.idleW = r.Varint()
	if s.idleTimeout > 0 {
		// Silent since the restore, not since the epoch: an idle step needs a whole
		// idle timeout without events from now on, even when the next event fails
		// before it gets a time.
		s.lastArrival = e.opts.now().UnixMilli()
	}
	return nil
}

// partState is what a partitioned source keeps per input partition.
type partState struct {
	seen    bool
	max     int64 // the largest event time of the partition's events
	arrival int64 // wall-clock ms of its last event (of the restore, after one)
	pending bool  // records wait to be read (Engine.SetPartitionsPending)
	// marked is max when a listing of the input was asked (MarkPartitions), confirmed the
	// marked value of the last listing that answered (ConfirmPartitions): the largest event
	// time of the partition's events fetched before it. math.MinInt64: none.
	marked, confirmed int64
	hi                int // its index in the floor's heap (floorScan), -1: not in it
}

func (s *source) part(p int32) *partState {
	if s.parts == nil {
		s.parts = map[int32]*partState{}
	}
	ps := s.parts[p]
	if ps == nil {
		ps = &partState{marked: math.MinInt64, confirmed: math.MinInt64, hi: -1}
		s.parts[p] = ps
		s.floor.fresh = false
	}
	return ps
}

// floorScan is what partitionFloor's scan of the partitions found, so that an event need not
// scan them all again (partitionEvent): a scan per event made 1,000 partitions cost 11 µs an
// event.
type floorScan struct {
	fresh bool  // the rest holds: no partition's pending flag or arrival changed since
	at    int64 // the wall-clock ms of the scan
	// heap holds the seen partitions that hold the floor back, least largest event time
	// first (partState.hi is each one's index); unseen says an unseen one holds it (the
	// floor is then math.MinInt64), idle that one holds nothing back, confirmed is the
	// largest confirmed event time of all.
	heap      []*partState
	unseen    bool
	idle      bool
	confirmed int64
	// until is the wall-clock ms at which the first of those that hold it by their recent
	// events stops holding it (math.MaxInt64: none does).
	until int64
}

// partitionEvent records an event of time t of partition ps, arrived at now (wall ms), and
// raises the source's maxTime to the partitions' floor; it says whether maxTime may have
// moved. Between scans of the partitions (partitionFloor) the floor is the least of a heap
// of those that hold it back, fixed for the event's partition in O(log n); it scans them
// again when the event's partition did not hold the floor back, when a partition's idle
// time may have passed, or when the clock went back.
func (s *source) partitionEvent(ps *partState, t, now int64) bool {
	f := &s.floor
	// (A clock that stepped back, since the scan or since ps's last event, could make a
	// partition hold or stop holding before the scan's until: scan again.)
	held := ps.seen && (ps.pending || now-ps.arrival < s.idleTimeout) && now >= ps.arrival
	old := ps.max
	if !ps.seen || t > ps.max {
		ps.max = t
	}
	ps.seen, ps.arrival = true, now
	if partitionScanAlways || !held || !f.fresh || now >= f.until || now < f.at || ps.hi < 0 {
		return s.raiseFloor(now)
	}
	if ps.max == old {
		return false
	}
	f.down(ps.hi)
	if f.unseen {
		return false
	}
	floor := f.heap[0].max
	if s.listed && f.idle {
		floor = min(floor, f.confirmed)
	}
	if floor <= s.maxTime {
		return false
	}
	s.maxTime = floor
	return true
}

// down moves the heap's element i, whose largest event time grew, down to its place.
func (f *floorScan) down(i int) {
	h := f.heap
	for {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if c+1 < len(h) && h[c+1].max < h[c].max {
			c++
		}
		if h[i].max <= h[c].max {
			break
		}
		h[i], h[c] = h[c], h[i]
		h[i].hi, h[c].hi = i, c
		i = c
	}
}

// partitionScanAlways makes partitionEvent scan the partitions for every event (tests: the
// scan is the oracle of the heap).
var partitionScanAlways = false

// partitionFloor is the event time a partitioned source's watermark follows at wall-clock
// time now (ms), as with Flink's per-split watermarks and idleness: the least largest event
// time over the partitions that hold it back. A partition holds it back while records of it
// wait (entirely, when it has had no event yet) and until it has been silent for the idle
// timeout, as docs/semantics.md §1 has a source do. When none holds it back, the largest event time
// of all. When the input lists its partitions (listed) and one of them holds nothing back,
// the floor goes no further than the largest event time of the events fetched before the
// last listing that answered: that partition's next records may have been produced at any
// time since that listing, after those events, but not before them. ok is false while no
// partition has had an event. It builds s.floor for partitionEvent.
func (s *source) partitionFloor(now int64) (floor int64, ok bool) {
	f := &s.floor
	*f = floorScan{fresh: true, at: now, heap: f.heap[:0], confirmed: math.MinInt64, until: math.MaxInt64}
	active, any := false, false
	latest := int64(math.MinInt64)
	for _, ps := range s.parts {
		ps.hi = -1
		if ps.seen {
			any = true
			latest = max(latest, ps.max)
			f.confirmed = max(f.confirmed, ps.confirmed)
		}
		recent := ps.seen && now-ps.arrival < s.idleTimeout
		if !ps.pending && !recent {
			f.idle = true
			continue
		}
		active = true
		if !ps.seen {
			f.unseen = true
		} else {
			ps.hi = len(f.heap)
			f.heap = append(f.heap, ps)
		}
		if recent && !ps.pending {
			f.until = min(f.until, ps.arrival+s.idleTimeout)
		}
	}
	for i := len(f.heap)/2 - 1; i >= 0; i-- {
		f.down(i)
	}
	if !any {
		return 0, false
	}
	switch {
	case !active:
		floor = latest
	case f.unseen:
		floor = math.MinInt64
	default:
		floor = f.heap[0].max
	}
	if s.listed && f.idle {
		floor = min(floor, f.confirmed)
	}
	return floor, true
}

// raiseFloor moves a partitioned source's maxTime up to its partition floor at now; it says
// whether it moved.
func (s *source) raiseFloor(now int64) bool {
	floor, ok := s.partitionFloor(now)
	if !ok || (s.seen && floor <= s.maxTime) {
		return false
	}
	s.maxTime, s.seen = floor, true
	return true
}

func (s *source) watermark() int64 {
	w := int64(math.MinInt64)
	if s.maxTime >= math.MinInt64+s.outOfOrder {
		w = s.maxTime - s.outOfOrder
	}
	return max(w, s.idleW)
}

// materialize makes #input whole from the decoded fields.
func (s *source) materialize() value.Value {
	var keys []string
	var vals []value.Value
	for k, name := range s.wantFields.Names() {
		if s.present&(1<<k) != 0 {
			keys = append(keys, name)
			vals = append(vals, s.fields[k])
		}
	}
	return value.NewRecord(keys, vals)
}

// lazyField reads a top-level field of #input where it was decoded.
func (s *source) lazyField(step pathStep) (value.Value, bool) {
	if step.index >= 0 || s.fields == nil {
		return value.Null(), false
	}
	k := step.field
	if k < 0 {
		k = s.wantFields.Index(step.name)
	}
	if k >= 0 {
		return s.fields[k], true
	}
	return value.Null(), false
}

// decode decodes a record as the source's next input: only the fields the
// scenario reads when that is known (into fields, or a record of them), and
// otherwise the whole record.
func (s *source) decode(b []byte) error {
	if s.schema != nil {
		s.raw = b // whole, whatever the scenario reads of it
	}
	var err error
	switch {
	case s.fields != nil:
		s.present, err = s.decoder.ParseFieldsInto(b, s.wantFields, s.fields)
		s.input, s.lazyInput = value.Null(), true
	case s.wantFields != nil:
		s.input, err = s.decoder.ParseFields(b, s.wantFields)
		s.lazyInput = false
	default:
		// Not only JSON, an object: a bad line reads the same however the
		// source decodes.
		s.input, err = s.decoder.ParseObject(b)
		s.lazyInput = false
	}
	return err
}

// conform checks the record being pushed against the source's schema (enforceSchema): the
// JSON it was decoded from, or the value it was given as.
func (s *source) conform() error {
	raw := s.raw
	s.raw = nil
	if raw != nil {
		return s.schema.CheckJSON(raw)
	}
	return s.schema.Check(schemaInput(s.input))
}

// schemaInput is v in the form the schema library reads: map[string]any, []any,
// json.Number, float64, string, bool or nil.
func schemaInput(v value.Value) any {
	switch v.Kind() {
	case value.KindBool:
		return v.Bool()
	case value.KindInt:
		return json.Number(strconv.FormatInt(v.Int(), 10))
	case value.KindFloat:
		return v.Float()
	case value.KindString:
		return v.Str()
	case value.KindList:
		items := v.List()
		out := make([]any, len(items))
		for i, x := range items {
			out[i] = schemaInput(x)
		}
		return out
	case value.KindRecord:
		r := v.Record()
		out := make(map[string]any, len(r.Keys))
		for i, k := range r.Keys {
			out[k] = schemaInput(r.Values[i])
		}
		return out
	}
	return nil
}

// eventTime evaluates the source's timestamp expression on ev, which holds
// #input alone.
func (s *source) eventTime(e *Engine, ev *event) (int64, error) {
	if s.timestamp == nil {
		if e.opts.Bounded {
			// Never the wall clock in a replay or a test (docs/semantics.md §1):
			// without a timestamp given with the record, time 0.
			return 0, nil
		}
		return e.opts.now().UnixMilli(), nil
	}
	from := s
	if !s.tsField {
		from = nil
	}
	tv, err := s.timestamp.evalFrom(from, ev)
	if err != nil {
		return 0, err
	}
	if tv.IsNull() {
		// Say which expression: the event has no null of its own when the field is missing.
		// (Its text, of up to 64 KiB, is cut: the message is made for every such event.)
		return 0, fmt.Errorf("%w: the timestamp expression %s is null for this record (is the field missing?)", expression.ErrEventTime, names.Cut(s.timestamp.prog.Text(), 200))
	}
	return expression.EventTime(tv)
}

// partitionsWaiting says whether some partition of a partitioned source has records
// waiting to be read (SetPartitionsPending): its source is not idle.
func (s *source) partitionsWaiting() bool {
	for _, ps := range s.parts {
		if ps.pending {
			return true
		}
	}
	return false
}

// idleFloorUnset is idleW before any idle step.
const idleFloorUnset = math.MinInt64
