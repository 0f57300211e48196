package deploy

import (
	"context"
	"fmt"

	"github.com/scenario-server/scenario-server/connector"
	"github.com/scenario-server/scenario-server/connector/file"
	"github.com/scenario-server/scenario-server/connector/kafka"
	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/schemaregistry"
	"github.com/scenario-server/scenario-server/value"
)

// Connectors are what a deployment reads from and writes to for the source and sink kinds
// (nodes' RoleSource and RoleSink kinds), by nodes.Kind ID (package connector holds the
// contract): the engine runs every node the same way, and only here does a deployment say
// where a source's events come from and where a sink's values go. prepare opens a connector
// for every source and sink node of a version before the deployment starts; a kind without
// one cannot be deployed (unsupported-source, unsupported-sink).
//
// The runtime's own connectors are the HTTP source, whose events are the store's event log
// (Ingest appends them, the deployment reads them back: ingest.go), and the collect sink,
// whose results go into the store with the checkpoints (sinks.go); both are the store's,
// not a connector's. The stdout sink writes to Config.Stdout. Kafka and file sources and
// sinks are connector/kafka's and connector/file's. Config.Connectors adds more.

// newConnectors returns the runtime's connectors: its own, connector/file's in the
// configured directories, connector/kafka's on the runtime's Kafka connection, and extra.
// Errors: a kind of extra that has a connector already.
func (r *Runtime) newConnectors(extra *connector.Registry) (*connector.Registry, error) {
	reg := connector.NewRegistry()
	must := func(err error) {
		if err != nil {
			panic(err) // distinct kinds, below
		}
	}
	must(reg.AddSource(engine.SourceHTTPKind, &connector.Source{EventLog: true, ArrivalTime: true}))
	must(reg.AddSource(engine.SourceFileKind, file.Source(r.cfg.FileSourceDir)))
	must(reg.AddSource(kafka.SourceKind, kafka.Source(r.kafka, r.schemas)))
	must(reg.AddSink(engine.SinkCollectKind, &connector.Sink{Open: func(_ connector.Env, id string, _ *nodes.Plan) (connector.Output, *scenario.Problem) {
		return &collectOutput{id: id}, nil // bound to the deployment's sinks by openConnectors
	}}))
	must(reg.AddSink(engine.SinkStdoutKind, &connector.Sink{Open: func(env connector.Env, id string, _ *nodes.Plan) (connector.Output, *scenario.Problem) {
		return newStdoutOutput(r.cfg.Stdout, env.Scenario, id), nil
	}}))
	must(reg.AddSink(fileSinkKind, file.Sink(r.cfg.FileSinkDir)))
	must(reg.AddSink(kafka.SinkKind, kafka.Sink(r.kafka, r.schemas)))
	if err := reg.Merge(extra); err != nil {
		return nil, err
	}
	return reg, nil
}

// openConnectors opens the connector of every source and sink node of d's engine, and
// returns the problems of those that cannot be opened. Outputs opened before a problem are
// closed by the caller's d.sinks.close (prepare).
func (r *Runtime) openConnectors(d *deployment, scenarioName string) []scenario.Problem {
	var problems []scenario.Problem
	env := connector.Env{Scenario: scenarioName, Logger: r.log.With("scenario", scenarioName)}
	exclusive := map[string]string{} // what a sink writes alone → its id
	val := d.eng.Validation()
	for _, id := range val.Order {
		p := val.Plans[id]
		var prob *scenario.Problem
		if p.Kind.Role == nodes.RoleSource {
			prob = r.openInput(d, env, id, p)
		}
		if p.Kind.Role == nodes.RoleSink {
			prob = r.openOutput(d, env, id, p, exclusive)
		}
		if prob != nil {
			problems = append(problems, *prob)
		}
	}
	return problems
}

// openInput adds source node id to d, read through its kind's source connector.
func (r *Runtime) openInput(d *deployment, env connector.Env, id string, p *nodes.Plan) *scenario.Problem {
	conn, ok := r.connectors.Source(p.Kind.ID)
	if !ok {
		return unsupported(id, p, "unsupported-source", "read %s sources")
	}
	var in connector.Input
	if !conn.EventLog {
		var prob *scenario.Problem
		if in, prob = conn.Open(env, id, p); prob != nil {
			return prob
		}
	}
	idle := engine.DefaultIdleTimeout
	arrival := conn.ArrivalTime
	if sp, ok := p.Typed.(*engine.SourcePlan); ok {
		idle = sp.IdleTimeout
		if !sp.Live {
			// A source kind without an idle timeout of its own: the deployment paces its
			// idle steps with the default's.
			idle = engine.DefaultIdleTimeout
		}
		arrival = arrival && sp.Timestamp.Program == nil
	} else {
		// A source kind registered from outside: its events take their own time unless it
		// has a timestamp expression.
		arrival = arrival && p.Programs["timestamp"] == nil
	}
	d.addSource(id, p.Node.Subtype(), conn, in, arrival, idle)
	return nil
}

// openOutput adds sink node id to d, written through its kind's sink connector. exclusive
// holds what the version's sinks before it write alone (connector.Sink.Exclusive).
func (r *Runtime) openOutput(d *deployment, env connector.Env, id string, p *nodes.Plan, exclusive map[string]string) *scenario.Problem {
	conn, ok := r.connectors.Sink(p.Kind.ID)
	if !ok {
		return unsupported(id, p, "unsupported-sink", "write %s sinks")
	}
	out, prob := conn.Open(env, id, p)
	if prob != nil {
		return prob
	}
	k := &sink{id: id, kind: p.Kind.ID, out: out}
	if p.Kind.ID == kafka.SinkKind {
		k.subject, _ = p.Params["valueSubject"].(string)
	}
	if conn.Exclusive != "" {
		if v, ok := r.refParam(p.Kind.ID, p.Node, conn.Exclusive); ok {
			key := exclusiveKey(p.Kind.ID, conn, v)
			if other, dup := exclusive[key]; dup {
				out.Close()
				return &scenario.Problem{NodeID: id, Field: conn.Exclusive, Code: "invalid-path",
					Message: fmt.Sprintf("%s sink %q writes to the same %s", p.Node.Subtype(), other, conn.ExclusiveNoun)}
			}
			exclusive[key] = id
			k.exclusive, k.shown = key, v
		}
	}
	if c, ok := out.(*collectOutput); ok {
		c.s = d.sinks
	}
	d.sinks.add(k)
	return nil
}

// unsupported is the problem of a source or sink kind that deployments cannot read or
// write (what: "read %s sources").
func unsupported(id string, p *nodes.Plan, code, what string) *scenario.Problem {
	return &scenario.Problem{NodeID: id, Field: "ref.typ", Code: code,
		Message: "deployments do not " + fmt.Sprintf(what, p.Node.Subtype())}
}

// encodeKafkaValue encodes a Kafka sink's value against the latest schema of subject in the
// schema registry (engine.Options.EncodeKafkaValue).
func (r *Runtime) encodeKafkaValue(subject string, v value.Value) ([]byte, error) {
	// Not the runtime's context: a shutdown must not make the values of its last events
	// errors.
	ctx, cancel := context.WithTimeout(context.Background(), schemaregistry.Timeout)
	defer cancel()
	return r.schemas.Encode(ctx, subject, value.AppendJSON(nil, v))
}
