package deploy

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/store"
)

// sourceHTTP is the ref.typ of sources whose events come through the API (ingest.go).
const sourceHTTP = "http"

// input is a source a deployment pulls its events from itself, rather than from the
// store's event log: a Kafka topic (kafkaInput) or a file (fileInput). Its positions go
// into the deployment's checkpoints, as Flink keeps a Kafka source's offsets in its state:
// after a crash the deployment restores the checkpoint and reads again from the positions
// it holds, so that what the engine processed and what the checkpoint covers agree.
//
// Only the deployment's goroutine calls restore, poll, advance and positions; start
// launches whatever reads in the background, and stop ends it. status may be called from
// any goroutine.
type input interface {
	// restore sets where reading resumes: the positions of this source in the checkpoint
	// (none for a new source), and the identity of the input they are in (see identity; nil
	// when the checkpoint has none).
	restore(positions []store.SourcePosition, identity []byte) error
	// identity says which input the positions are in, for the checkpoint (a Kafka topic's
	// ID: a topic deleted and created again is another input); nil when no more is known
	// than the source's parameters.
	identity() []byte
	// start begins reading; wake is called when events become available.
	start(ctx context.Context, wake func())
	// poll returns the next events read, in order, or nil when none waits; it does not
	// block on the outside world for long (a file read, a channel receive). reset: the
	// positions moved without events (a file truncated or replaced, a topic created again),
	// which the next checkpoint must record.
	poll() (events []inputEvent, reset bool)
	// advance records that ev went through the engine: the next checkpoint covers it.
	advance(ev inputEvent)
	// positions are where to resume, as of the last advance, for a checkpoint.
	positions() []store.SourcePosition
	// status is what Live shows: events (records, lines) known to exist, processed, and the
	// current reading problem ("" when none).
	status() inputStatus
	// pendingPartitions lists the input partitions that may have records waiting to be
	// read, for the engine's per-partition watermarks; known is false when the input cannot
	// tell yet, or has no partitions.
	pendingPartitions() (pending []int32, known bool)
	// idleClock is how far the wall clock may move the source's idle watermark (docs/semantics.md
	// §1): to now, or to the last time the input knew it had read everything. false: events
	// wait, or the input does not know yet; no idle step then.
	idleClock(now time.Time) (time.Time, bool)
	// stop ends background reading and waits for it.
	stop()
}

// inputEvent is one event an input read.
type inputEvent struct {
	payload []byte
	// undecodable: the input could not decode the event (a Kafka value in the schema
	// registry's wire format that does not fit its schema); payload is what it read.
	undecodable error
	// skip: nothing to push (a blank line, a transaction marker), but the position moves
	// past it.
	skip bool
	// restart: the last line of a file another one replaced; the position then moves to the
	// start of the new file.
	restart bool
	// time is the event's own time (epoch ms): the Kafka record's timestamp, used when the
	// source has no timestamp expression. 0 when the input has none.
	time int64
	// line is what per-event errors report: the Kafka record's offset + 1 in its partition,
	// or the file's line number.
	line      int64
	partition int32
	// offset is the position right after the event: the record's offset + 1, or the byte
	// offset after the line.
	offset int64
}

type inputStatus struct {
	known, processed int64
	err              string
}

// problem holds an input's current reading problem for status. A change is logged (when log
// is set) and calls onChange, when set, so that the deployment shows it.
type problem struct {
	mu       sync.Mutex
	msg      string
	onChange func()
	log      *slog.Logger
}

func (p *problem) set(msg string) {
	p.mu.Lock()
	changed := p.msg != msg
	p.msg = msg
	f, log := p.onChange, p.log
	p.mu.Unlock()
	if !changed {
		return
	}
	if log != nil {
		if msg != "" {
			log.Warn("the source cannot read", "problem", msg)
		} else {
			log.Info("the source reads again")
		}
	}
	if f != nil {
		f()
	}
}

func (p *problem) get() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.msg
}

// sourceIdentities maps each source node of a scenario graph to what its positions are
// positions in: its kind and, for Kafka and file sources, the topic or the path. A graph that
// does not decode has none.
func sourceIdentities(graph []byte) map[string]string {
	sc, err := scenario.Decode(graph)
	if err != nil {
		return nil
	}
	ids := map[string]string{}
	for i := range sc.Nodes {
		n := &sc.Nodes[i]
		if n.Type != scenario.TypeSource {
			continue
		}
		id := n.Subtype()
		if conn := inputConnectors[string(n.Type)+"/"+id]; conn != nil && conn.identity != "" && n.Ref != nil {
			for _, p := range n.Ref.Parameters {
				var s string
				_ = json.Unmarshal(p.Value, &s)
				if engine.ParamName(string(n.Type)+"/"+id, p.Name) == conn.identity {
					id += "\x00" + conn.identityValue(s)
				}
			}
		}
		ids[n.ID] = id
	}
	return ids
}

// keepSameInputs keeps the positions, inherited from a deployment of another version, of the
// sources that read the same input in both versions: a source whose kind, topic or path
// changed starts afresh rather than at offsets that belong to another input.
func keepSameInputs(positions []store.SourcePosition, before, now map[string]string) []store.SourcePosition {
	var out []store.SourcePosition
	for _, p := range positions {
		if b, ok := before[p.Source]; ok && b == now[p.Source] {
			out = append(out, p)
		}
	}
	return out
}
