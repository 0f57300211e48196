package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/scenario-server/scenario-server/connector"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/value"
)

// sinks holds a deployment's sinks: the Output of each (connectors.go), written between two
// checkpoints and prepared, then committed or aborted, at each checkpoint (see
// connector.Output), and the collect results, which go into the same store transaction as the
// checkpoint.
//
// Only the deployment's goroutine uses it.
type sinks struct {
	outputs map[string]*sink // by sink node id
	ids     []string         // the sink node ids, sorted
	collect []store.NewSinkResult
	// collectBytes is the bytes of the values in collect (see Config.MaxPendingResultBytes).
	// Past maxCollectBytes (one event's results alone can pass the pending bound: the
	// bound is looked at between events) no more is kept and overflow is set: the
	// deployment then fails, keeping its last checkpoint.
	collectBytes    int64
	maxCollectBytes int64
	overflow        bool
	// The results of all the runtime's deployments waiting for their checkpoints, collect
	// results and dead letters and what the Outputs hold (Config.MaxTotalPendingResultBytes;
	// nil: no bound): shared holds their bytes, of which reported are this deployment's
	// (deployment.syncPending keeps it right as they go) and outCharged the part of those its
	// Outputs held when last counted; past sharedMax no more is kept, and overflow and
	// overShared are set.
	shared     *atomic.Int64
	sharedMax  int64
	reported   int64
	outCharged int64
	reserved   int64 // what the value being encoded reserved in shared (roomFor)
	overShared bool
	// written counts every value written, to tell whether an idle tick emitted anything.
	written int64
	// subjects are the sinks that encode their values against a schema-registry subject
	// (a Kafka sink's valueSubject), readies those whose Output may not take values yet
	// (readyOutput); both in id order.
	subjects, readies []*sink
	// settlers settle the restored states of sink kinds the version has no sink of
	// (connector.Sink.Settle), before the sinks prepare; never written to.
	settlers []connector.Output
}

// sink is one sink node of a deployment and its Output.
type sink struct {
	id, kind string
	out      connector.Output
	// exclusive is what the sink writes that no other sink may (connector.Sink.Exclusive:
	// its kind and normalised value); "" when none. shown is the value as the scenario gives
	// it, for messages.
	exclusive, shown string
	// subject is the schema-registry subject its values are encoded against, "" when none.
	subject string
}

// newSinks returns an empty set of sinks keeping at most maxCollectBytes of collect results
// waiting for a checkpoint (0: no limit).
func newSinks(maxCollectBytes int64) *sinks {
	return &sinks{outputs: map[string]*sink{}, maxCollectBytes: maxCollectBytes}
}

// add adds sink node id of kind, written through out.
func (s *sinks) add(k *sink) {
	s.outputs[k.id] = k
	s.ids = slices.Sorted(maps.Keys(s.outputs))
	s.subjects, s.readies = s.subjects[:0], s.readies[:0]
	for _, id := range s.ids {
		k := s.outputs[id]
		if k.subject != "" {
			s.subjects = append(s.subjects, k)
		}
		if _, ok := k.out.(readyOutput); ok {
			s.readies = append(s.readies, k)
		}
	}
}

// exclusives returns the sinks that write what no other sink may, by id.
func (s *sinks) exclusives() []*sink {
	var list []*sink
	for _, id := range s.ids {
		if k := s.outputs[id]; k.exclusive != "" {
			list = append(list, k)
		}
	}
	return list
}

// output is the engine's Output.
func (s *sinks) output(sinkID string, v value.Value, _ int64) {
	s.written++
	if k := s.outputs[sinkID]; k != nil && !s.overflow {
		if !s.roomFor(v) {
			return
		}
		k.out.Write(v)
		if s.reserved > 0 {
			s.shared.Add(-s.reserved) // what Write kept is counted below (or by addResult)
			s.reserved = 0
		}
		// Past maxCollectBytes with the collect results, as addResult: nothing more is kept
		// and the deployment fails, keeping its last checkpoint.
		out := int64(s.outputBytes())
		if s.maxCollectBytes > 0 && s.collectBytes+out > s.maxCollectBytes {
			s.overflow = true
		}
		// And past the server's bound with every deployment's results: 24 deployments each
		// holding 255 Kafka records of 1 MB for their checkpoints, each within its own
		// bound, ended a server out of memory (hostile round).
		if d := out - s.outCharged; s.shared != nil && d > 0 {
			if s.shared.Add(d) > s.sharedMax {
				s.shared.Add(-d)
				s.overflow, s.overShared = true, true
				return
			}
			s.outCharged, s.reported = out, s.reported+d
		}
	}
}

// reserveFrom is the size of a value's JSON from which the value reserves it in the server's
// bound on waiting results while it is encoded (sinks.roomFor).
const reserveFrom = 1 << 20

// roomFor reports whether v's JSON may be encoded for a sink: at least as many bytes as it
// takes (jsonAtLeast) are within what the deployment's bound and the server's leave, and one
// of reserveFrom bytes or more reserves them in the server's while it is encoded (reserved).
// When not, it sets overflow (and overShared) as addResult does, before anything is encoded:
// a record of 1,500 paths to one string of 60 KB, read at no cost, encoded to 90 MB for each
// event, and 150 deployments doing so at once ended a server out of memory (hostile
// re-test), the bounds looked at only after.
func (s *sinks) roomFor(v value.Value) bool {
	room := int64(math.MaxInt64)
	if s.maxCollectBytes > 0 {
		room = s.maxCollectBytes - s.collectBytes - int64(s.outputBytes())
	}
	shared := int64(math.MaxInt64)
	if s.shared != nil {
		shared = s.sharedMax - s.shared.Load()
	}
	n := jsonAtLeast(v, min(room, shared))
	switch {
	case n > room:
		s.overflow = true
		return false
	case n > shared:
		s.overflow, s.overShared = true, true
		return false
	case s.shared != nil && n >= reserveFrom:
		if s.shared.Add(n) > s.sharedMax {
			s.shared.Add(-n)
			s.overflow, s.overShared = true, true
			return false
		}
		s.reserved = n
	}
	return true
}

// jsonAtLeast is at least the bytes of v's JSON: a string's or key's bytes and its quotes, a
// byte a number, 4 a boolean or null, the brackets and separators of lists and records. It
// stops counting once past stop.
func jsonAtLeast(v value.Value, stop int64) int64 {
	switch v.Kind() {
	case value.KindString:
		return int64(len(v.Str())) + 2
	case value.KindList:
		n := int64(1) // the brackets, and a comma an item but the last
		for _, x := range v.List() {
			if n += jsonAtLeast(x, stop-n) + 1; n > stop {
				break
			}
		}
		return max(n, 2)
	case value.KindRecord:
		r := v.Record()
		n := int64(1) // the braces, and a key's quotes, colon and comma an entry but the last's comma
		for i, x := range r.Values {
			if n += int64(len(r.Keys[i])) + 4 + jsonAtLeast(x, stop-n); n > stop {
				break
			}
		}
		return max(n, 2)
	case value.KindInt, value.KindFloat:
		return 1
	}
	return 4
}

// outputBytes is the bytes the Outputs hold for the next checkpoint.
func (s *sinks) outputBytes() int {
	n := 0
	for _, k := range s.outputs {
		n += k.out.PendingBytes()
	}
	return n
}

// sharedNear reports that the results waiting in all deployments hold half the server's
// bound on them or more (Config.MaxTotalPendingResultBytes): a paused step waits for them to
// be committed before its next part (deployment.pauseStep).
func (s *sinks) sharedNear() bool {
	return s.shared != nil && s.shared.Load() >= s.sharedMax/2
}

// pending reports how many collect results and Output values wait for the next checkpoint.
// collectResultBytes is what a collect result (or a dead letter) waiting for a checkpoint is
// counted besides its value's bytes: its store.NewSinkResult in the list (a string and a
// slice, 40 bytes) and its share of the list's growth. Counted by their values alone, the
// 10,000,000 results of 1 byte one event made (a for-each of 100,000 into 100 sinks) passed
// no bound and held 1.5 GB.
const collectResultBytes = 64

// addResult adds a collect result (or a dead letter) for the next checkpoint.
func (s *sinks) addResult(r store.NewSinkResult) {
	n := int64(len(r.Value)) + collectResultBytes
	if s.maxCollectBytes > 0 && s.collectBytes+n > s.maxCollectBytes {
		s.overflow = true
		return
	}
	if s.shared != nil {
		// (What the value reserved while it was encoded, roomFor, is still in shared.)
		if s.shared.Add(n)-s.reserved > s.sharedMax {
			s.shared.Add(-n)
			s.overflow, s.overShared = true, true
			return
		}
		s.reported += n
	}
	s.collect = append(s.collect, r)
	s.collectBytes += n
}

func (s *sinks) pending() int {
	n := len(s.collect)
	for _, k := range s.outputs {
		n += k.out.Pending()
	}
	return n
}

// restore hands each Output its state in the checkpoint restored (own: the deployment's
// own checkpoint; false: another version's). Of another version's checkpoint, the state of
// that version's sink that wrote what a sink writes alone (connector.Sink.Exclusive: the
// same file), sameAs[sink id] (its id there), is the sink's own: it is the same file's
// (a file sink cuts the file back to the checkpoint's size, as when the same version is
// deployed again). The state of another sink the version has, of the same kind, goes to that
// sink as one of its others (so that, say, a Kafka sink settles its own transaction before
// it sets up the producers whose ids would abort it); the states of sinks the version does
// not have (or not of the same kind) go, as others, to the first sink of their kind by node
// id. The states of a kind the version has no sink of go to an Output settle makes for the
// kind (connector.Sink.Settle; nil: they are dropped, and dropped names them).
func (s *sinks) restore(ctx context.Context, states map[string]outputState, own bool, sameAs map[string]string,
	settle func(kind string) connector.Output, dropped func(kind string, n int)) error {
	mine := map[string][]byte{}
	taken := map[string]bool{} // states given as a sink's own by sameAs
	if !own {
		for id, prev := range sameAs {
			if st, ok := states[prev]; ok && s.outputs[id] != nil && s.outputs[id].kind == st.kind {
				mine[id], taken[prev] = st.state, true
			}
		}
	}
	others := map[string][][]byte{}   // by sink id
	leftover := map[string][][]byte{} // by kind
	for _, id := range slices.Sorted(maps.Keys(states)) {
		st := states[id]
		k := s.outputs[id]
		switch {
		case taken[id]:
		case k != nil && k.kind == st.kind && own:
			mine[id] = st.state
		case k != nil && k.kind == st.kind:
			others[id] = append(others[id], st.state)
		default:
			leftover[st.kind] = append(leftover[st.kind], st.state)
		}
	}
	for _, id := range s.ids {
		k := s.outputs[id]
		theirs := others[id]
		if l := leftover[k.kind]; l != nil {
			theirs = append(theirs, l...)
			delete(leftover, k.kind)
		}
		if err := k.out.Restore(ctx, mine[id], theirs); err != nil {
			return err
		}
	}
	for _, kind := range slices.Sorted(maps.Keys(leftover)) {
		var out connector.Output
		if settle != nil {
			out = settle(kind)
		}
		if out == nil {
			if dropped != nil {
				dropped(kind, len(leftover[kind]))
			}
			continue
		}
		if err := out.Restore(ctx, nil, leftover[kind]); err != nil {
			out.Close()
			return err
		}
		s.settlers = append(s.settlers, out)
	}
	return nil
}

// unsettled describes what the Outputs have not settled of committed checkpoints
// (connector.Unsettled), "" when nothing.
func (s *sinks) unsettled() string {
	var what []string
	for _, out := range s.all() {
		if u, ok := out.(connector.Unsettled); ok {
			if w := u.Unsettled(); w != "" {
				what = append(what, w)
			}
		}
	}
	return strings.Join(what, "; ")
}

// all returns the settlers, then the sinks' Outputs by node id.
func (s *sinks) all() []connector.Output {
	out := slices.Clone(s.settlers)
	for _, id := range s.ids {
		out = append(out, s.outputs[id].out)
	}
	return out
}

// prepare is phase 1 of the checkpoint: the Outputs prepare, by node id, and the states to
// record are returned. At the first that fails, every Output is aborted and its error
// returned: the ones after it do not prepare (a Kafka sink would produce a transaction only
// to abort it).
func (s *sinks) prepare(ctx context.Context) (map[string]outputState, error) {
	states := map[string]outputState{}
	for _, out := range s.settlers {
		// Settled ones prepare nothing more (and record no state).
		if _, err := out.Prepare(ctx); err != nil {
			s.abort(ctx)
			return nil, err
		}
	}
	for _, id := range s.ids {
		k := s.outputs[id]
		st, err := k.out.Prepare(ctx)
		if err != nil {
			s.abort(ctx)
			return nil, err
		}
		if len(st) > 0 {
			states[id] = outputState{kind: k.kind, state: st}
		}
	}
	return states, nil
}

// commit is phase 2, once the store committed the checkpoint: every Output commits. (The
// collect results went with the checkpoint.)
func (s *sinks) commit(ctx context.Context) {
	for _, out := range s.all() {
		out.Commit(ctx)
	}
}

// abort: the checkpoint was not committed; what the sinks hold waits for the next one.
func (s *sinks) abort(ctx context.Context) {
	for _, out := range s.all() {
		out.Abort(ctx)
	}
}

func (s *sinks) close() {
	for _, out := range s.all() {
		out.Close()
	}
}

// collectOutput is a collect sink: its values go into the store, in the same transaction as
// the checkpoint (sinks.collect); the results API reads them.
type collectOutput struct {
	id  string
	s   *sinks
	enc value.JSONEncoder
}

func (c *collectOutput) Restore(context.Context, []byte, [][]byte) error { return nil }
func (c *collectOutput) Write(v value.Value) {
	c.s.addResult(store.NewSinkResult{Sink: c.id, Value: c.enc.Append(nil, v)})
}
func (c *collectOutput) Pending() int                            { return 0 } // counted in sinks.collect
func (c *collectOutput) PendingBytes() int                       { return 0 }
func (c *collectOutput) Prepare(context.Context) ([]byte, error) { return nil, nil }
func (c *collectOutput) Commit(context.Context)                  {}
func (c *collectOutput) Abort(context.Context)                   {}
func (c *collectOutput) Close()                                  {}

// stdoutOutput is a stdout sink: it writes values as JSON lines to the server's standard
// output at each checkpoint, before the store commits it: at least once (a crash after this
// and before the checkpoint commits writes them again). Each line names its scenario and
// sink, {"scenario":"s","sink":"out","value":...}, as `run`'s name the sink: the lines of
// every scenario on the server share its standard output (they were bare values, which
// told nobody whose they were).
type stdoutOutput struct {
	w      io.Writer
	prefix []byte // {"scenario":"s","sink":"out","value":
	lines  []byte
	n      int
	enc    value.JSONEncoder
}

// newStdoutOutput returns the stdout sink id of scenario, writing to w.
func newStdoutOutput(w io.Writer, scenario, id string) *stdoutOutput {
	prefix := value.AppendJSON([]byte(`{"scenario":`), value.String(scenario))
	prefix = value.AppendJSON(append(prefix, `,"sink":`...), value.String(id))
	return &stdoutOutput{w: w, prefix: append(prefix, `,"value":`...)}
}

func (o *stdoutOutput) Restore(context.Context, []byte, [][]byte) error { return nil }
func (o *stdoutOutput) Write(v value.Value) {
	o.lines = append(o.enc.Append(append(o.lines, o.prefix...), v), '}', '\n')
	o.n++
}
func (o *stdoutOutput) Pending() int      { return o.n }
func (o *stdoutOutput) PendingBytes() int { return len(o.lines) }
func (o *stdoutOutput) Prepare(context.Context) ([]byte, error) {
	if len(o.lines) > 0 {
		_, _ = o.w.Write(o.lines)
		o.lines, o.n = connector.EmptyBuffer(o.lines), 0
	}
	return nil, nil
}
func (o *stdoutOutput) Commit(context.Context) {}
func (o *stdoutOutput) Abort(context.Context)  {}
func (o *stdoutOutput) Close()                 {}

// checkSinkOwners returns a *SinkPathInUseError when a sink of d writes what no other sink
// may (a file sink's file: connector.Sink.Exclusive) and another scenario's latest
// deployment in the store owns it: one deploying or running (in this
// server or another sharing the store, or listed active though it failed to resume), or one
// CANCELED or FAILED of a scenario that is not archived. Deploying that scenario again
// resumes its checkpoint and cuts the file back to the size it recorded, which would delete
// the lines d wrote meanwhile; so d is refused instead, naming the other deployment. Archiving
// the other scenario releases its files. d's own scenario is not counted: its new deployment
// takes over the files. Errors: *SinkPathInUseError; store failures.
func (r *Runtime) checkSinkOwners(ctx context.Context, d *deployment) error {
	mine := d.sinks.exclusives()
	if len(mine) == 0 {
		return nil
	}
	latest, err := r.cfg.Store.ListLatestDeployments(ctx)
	if err != nil {
		return fmt.Errorf("listing the deployments that own file sink paths: %w", err)
	}
	var archived map[string]bool
	for _, other := range latest {
		if other.Scenario == d.info.Scenario {
			continue
		}
		status := other.Status
		switch status {
		case store.StatusDeploying, store.StatusRunning:
			status = "" // running: the message says so
		case store.StatusCanceled, store.StatusFailed:
			if archived == nil {
				list, err := r.cfg.Store.ListScenarios(ctx, store.ScenarioFilter{Archived: store.OnlyArchived})
				if err != nil {
					return fmt.Errorf("listing the archived scenarios: %w", err)
				}
				archived = map[string]bool{}
				for _, sc := range list {
					archived[sc.Name] = true
				}
			}
			if archived[other.Scenario] {
				continue
			}
		default:
			continue
		}
		v, err := r.cfg.Store.GetVersion(ctx, other.Scenario, other.Version)
		if err != nil {
			return fmt.Errorf("reading the version of deployment %d of %q: %w", other.ID, other.Scenario, err)
		}
		owned := r.exclusiveSinks(v.Graph)
		for _, f := range mine {
			if sink, ok := owned[f.exclusive]; ok {
				return &SinkPathInUseError{Scenario: d.info.Scenario, Sink: f.id, Path: f.shown,
					OtherScenario: other.Scenario, OtherDeployment: other.ID, OtherSink: sink, OtherStatus: status}
			}
		}
	}
	return nil
}

// exclusiveSinks maps what each sink of a scenario graph writes that no other sink may
// (connector.Sink.Exclusive: its kind and normalised value, "./a" and "a" being one file) to
// the sink's id. A graph that does not decode has none.
func (r *Runtime) exclusiveSinks(graph []byte) map[string]string {
	sc, err := scenario.Decode(graph)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for i := range sc.Nodes {
		n := &sc.Nodes[i]
		if n.Type != scenario.TypeSink || n.Ref == nil {
			continue
		}
		kind := string(n.Type) + "/" + n.Subtype()
		conn, ok := r.connectors.Sink(kind)
		if !ok || conn.Exclusive == "" {
			continue
		}
		if v, ok := r.refParam(kind, n, conn.Exclusive); ok && v != "" {
			out[exclusiveKey(kind, conn, v)] = n.ID
		}
	}
	return out
}

// sameSinks maps each of d's sinks that writes what no other sink may (a file) to the sink
// of graph (another version of the scenario) that wrote the same, by id; nil when none does.
func (d *deployment) sameSinks(graph []byte) map[string]string {
	var same map[string]string
	before := d.rt.exclusiveSinks(graph)
	for _, k := range d.sinks.exclusives() {
		if id, ok := before[k.exclusive]; ok {
			if same == nil {
				same = map[string]string{}
			}
			same[k.id] = id
		}
	}
	return same
}

// exclusiveKey is what a sink of kind writing v writes, for comparisons.
func exclusiveKey(kind string, conn *connector.Sink, v string) string {
	if conn.ExclusiveValue != nil {
		v = conn.ExclusiveValue(v)
	}
	return kind + "\x00" + v
}

// refParam returns the string value of parameter name (or one of its aliases, in the
// runtime's registry) of a source or sink node's ref.
func (r *Runtime) refParam(kind string, n *scenario.Node, name string) (string, bool) {
	k, _ := r.nodes.Kind(kind)
	for _, p := range n.Ref.Parameters {
		canonical := p.Name
		if k != nil {
			if spec, ok := k.Param(p.Name); ok {
				canonical = spec.Name
			}
		}
		var s string
		if canonical == name && json.Unmarshal(p.Value, &s) == nil {
			return s, true
		}
	}
	return "", false
}
