package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// Connectors are what a deployment reads from and writes to for the source and sink kinds
// (nodes' RoleSource and RoleSink kinds), by nodes.Kind ID: the engine runs every node the
// same way, and only here does a deployment say where a source's events come from and where
// a sink's values go. prepare opens a connector for every source and sink node of a version
// before the deployment starts; a kind without one cannot be deployed (unsupported-source,
// unsupported-sink).

// inputConnector is how a deployment reads a source kind.
type inputConnector struct {
	// open makes the input of source node id (see the input interface for its contract), or
	// nil for a source whose events come through the API into the store's event log (HTTP).
	// A problem says why the deployment cannot read it; the deployment does not start.
	open func(r *Runtime, id string, p *nodes.Plan, scenarioName string) (input, *scenario.Problem)
	// arrivalTime: an event of a source without a timestamp expression takes the time it
	// came (accepted in the log, the Kafka record's timestamp); false: the source has no
	// such time (a file's lines).
	arrivalTime bool
	// identity is the parameter naming what the source reads ("topic", "path") and how it is
	// compared: positions of one input do not carry over to another (sourceIdentities).
	identity      string
	identityValue func(string) string
	// mark records where an event being pushed sits, for its dead letter (pushing).
	mark func(p *pushing, line int64)
	// pollEvery, when set, caps how long the deployment waits before polling the input
	// again (a file, which does not wake the deployment).
	pollEvery time.Duration
	// partitioned: events come with input partitions (Kafka).
	partitioned bool
}

var inputConnectors = map[string]*inputConnector{
	"Source/http": {
		arrivalTime: true,
		open:        func(*Runtime, string, *nodes.Plan, string) (input, *scenario.Problem) { return nil, nil },
	},
	"Source/kafka": {
		arrivalTime: true, partitioned: true,
		identity: "topic", identityValue: func(s string) string { return s },
		mark: func(p *pushing, line int64) { p.offset = line - 1 },
		open: func(r *Runtime, id string, p *nodes.Plan, scenarioName string) (input, *scenario.Problem) {
			if len(r.cfg.KafkaBrokers) == 0 {
				return nil, &scenario.Problem{NodeID: id, Field: "ref.typ", Code: "kafka-not-configured",
					Message: "the server has no Kafka brokers to read from: start it with --kafka-brokers host:port (env SCENARIO_SERVER_KAFKA_BROKERS)"}
			}
			in := newKafkaInput(id, p.Typed.(*engine.SourcePlan).Topic, r.kafka, r.log.With("scenario", scenarioName))
			in.schemas = r.schemas
			return in, nil
		},
	},
	"Source/file": {
		// A file source replays a bounded file in `run`; deployed, it follows the file.
		identity: "path", identityValue: filepath.Clean, // "./a" and "a" are one file
		mark:      func(p *pushing, line int64) { p.offset, p.line = -1, line },
		pollEvery: filePollInterval,
		open: func(r *Runtime, id string, p *nodes.Plan, scenarioName string) (input, *scenario.Problem) {
			rel := p.Typed.(*engine.SourcePlan).Path
			if prob := nonLocalPath(id, rel, "source reads inside the server's source directory"); prob != nil {
				return nil, prob
			}
			return newFileInput(id, r.cfg.FileSourceDir, rel, r.log.With("scenario", scenarioName)), nil
		},
	},
}

// sinkWriter takes the values one sink node writes, buffered until the next checkpoint
// (see sinks).
type sinkWriter interface {
	writeValue(s *sinks, id string, v value.Value)
}

// outputConnector is how a deployment writes a sink kind: open adds sink node id's writer to
// s, or says why it cannot (files: the paths other file sinks of the version write, by path).
// scenarioName is the deployment's scenario.
type outputConnector func(r *Runtime, s *sinks, id string, p *nodes.Plan, files map[string]string, scenarioName string) *scenario.Problem

var outputConnectors = map[string]outputConnector{
	"Sink/collect": func(_ *Runtime, s *sinks, id string, _ *nodes.Plan, _ map[string]string, _ string) *scenario.Problem {
		s.writers[id] = collectSink{}
		return nil
	},
	"Sink/stdout": func(_ *Runtime, s *sinks, id string, _ *nodes.Plan, _ map[string]string, _ string) *scenario.Problem {
		s.writers[id] = stdoutSink{}
		return nil
	},
	"Sink/file":  openFileSink,
	"Sink/kafka": openKafkaSink,
}

// openFileSink is the file sink's connector: a relative path inside the server's sink
// directory, a file (not a directory), written by no other file sink of the version.
func openFileSink(r *Runtime, s *sinks, id string, p *nodes.Plan, files map[string]string, _ string) *scenario.Problem {
	rel := p.Typed.(*engine.SinkPlan).Path
	if prob := nonLocalPath(id, rel, "sink writes inside the server's sink directory"); prob != nil {
		return prob
	}
	path := filepath.Join(r.cfg.FileSinkDir, rel)
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return &scenario.Problem{NodeID: id, Field: "path", Code: "invalid-path",
			Message: fmt.Sprintf("%q is a directory of the server's sink directory: a file sink needs a file", rel)}
	}
	if other, ok := files[path]; ok {
		return &scenario.Problem{NodeID: id, Field: "path", Code: "invalid-path",
			Message: fmt.Sprintf("file sink %q writes to the same file", other)}
	}
	files[path] = id
	s.addFile(id, r.cfg.FileSinkDir, rel, path)
	return nil
}

// openConnectors opens the connector of every source and sink node of d's engine, and
// returns the problems of those that cannot be opened.
func (r *Runtime) openConnectors(d *deployment, scenarioName string) []scenario.Problem {
	var problems []scenario.Problem
	files := map[string]string{} // path → sink id
	val := d.eng.Validation()
	for _, id := range val.Order {
		p := val.Plans[id]
		var prob *scenario.Problem
		if p.Kind.Role == nodes.RoleSource {
			prob = r.openInput(d, id, p, scenarioName)
		}
		if p.Kind.Role == nodes.RoleSink {
			prob = unsupported(id, p, "unsupported-sink", "write %s sinks")
			if open := outputConnectors[p.Kind.ID]; open != nil {
				prob = open(r, d.sinks, id, p, files, scenarioName)
			}
		}
		if prob != nil {
			problems = append(problems, *prob)
		}
	}
	return problems
}

// openInput adds source node id to d, read through its kind's input connector.
func (r *Runtime) openInput(d *deployment, id string, p *nodes.Plan, scenarioName string) *scenario.Problem {
	conn := inputConnectors[p.Kind.ID]
	if conn == nil {
		return unsupported(id, p, "unsupported-source", "read %s sources")
	}
	in, prob := conn.open(r, id, p, scenarioName)
	if prob != nil {
		return prob
	}
	sp := p.Typed.(*engine.SourcePlan)
	idle := sp.IdleTimeout
	if !sp.Live {
		// A file source has no idle timeout of its own; the deployment paces its idle
		// steps with the default's.
		idle = engine.DefaultIdleTimeout
	}
	arrival := conn.arrivalTime && sp.Timestamp.Program == nil
	d.addSource(id, p.Node.Subtype(), conn, in, arrival, idle)
	return nil
}

// unsupported is the problem of a source or sink kind that deployments cannot read or
// write (what: "read %s sources").
func unsupported(id string, p *nodes.Plan, code, what string) *scenario.Problem {
	return &scenario.Problem{NodeID: id, Field: "ref.typ", Code: code,
		Message: "deployments do not " + fmt.Sprintf(what, p.Node.Subtype())}
}
