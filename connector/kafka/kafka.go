// Package kafka is the Kafka connector of deployments (franz-go): Kafka sources read a
// topic's partitions from the offsets in the deployment's checkpoints (Input), Kafka sinks
// write a checkpoint's records in a Kafka transaction committed with it (Output). Source and
// Sink are the connectors package deploy registers for the kinds "Source/kafka" and
// "Sink/kafka"; Conn is the connection settings they share (Cluster: client id, TLS, SASL).
package kafka

import (
	"github.com/scenario-server/scenario-server/connector"
	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/schemaregistry"
)

// The kinds of the Kafka connectors.
const (
	SourceKind = engine.SourceKafkaKind
	SinkKind   = engine.SinkKafkaKind
)

// Source is the connector of Kafka sources reading through conn; schemas, when set, decodes
// values in the schema registry's wire format. A source does not deploy while conn has no
// brokers (kafka-not-configured); validation says so too (Check).
func Source(conn *Conn, schemas *schemaregistry.Registry) *connector.Source {
	check := func(id string, _ *nodes.Plan) *scenario.Problem {
		if !conn.Configured() {
			return &scenario.Problem{NodeID: id, Field: "ref.typ", Code: "kafka-not-configured",
				Message: "the server has no Kafka brokers to read from: start it with --kafka-brokers host:port (env SCENARIO_SERVER_KAFKA_BROKERS)"}
		}
		return nil
	}
	return &connector.Source{
		ArrivalTime: true, Partitioned: true,
		Identity: "topic",
		Check:    check,
		Open: func(env connector.Env, id string, p *nodes.Plan) (connector.Input, *scenario.Problem) {
			if prob := check(id, p); prob != nil {
				return nil, prob
			}
			return NewInput(id, p.Typed.(*engine.SourcePlan).Topic, conn, schemas, env.Logger), nil
		},
	}
}

// Sink is the connector of Kafka sinks writing through conn; a sink with a valueSubject
// needs schemas (the engine encodes its values with it). A sink does not deploy while conn
// has no brokers (kafka-not-configured), nor one with a valueSubject without schemas
// (schema-registry-not-configured); validation says so too (Check).
func Sink(conn *Conn, schemas *schemaregistry.Registry) *connector.Sink {
	check := func(id string, p *nodes.Plan) *scenario.Problem {
		if !conn.Configured() {
			return &scenario.Problem{NodeID: id, Field: "ref.typ", Code: "kafka-not-configured",
				Message: "the server has no Kafka brokers to write to: start it with --kafka-brokers host:port (env SCENARIO_SERVER_KAFKA_BROKERS)"}
		}
		if plan, ok := p.Typed.(*engine.SinkPlan); ok && plan.ValueSubject != "" && schemas == nil {
			return &scenario.Problem{NodeID: id, Field: "valueSubject", Code: "schema-registry-not-configured",
				Message: "the server has no schema registry to encode values with: start it with --kafka-schema-registry URL (env SCENARIO_SERVER_KAFKA_SCHEMA_REGISTRY)"}
		}
		return nil
	}
	return &connector.Sink{
		Check: check,
		Open: func(env connector.Env, id string, p *nodes.Plan) (connector.Output, *scenario.Problem) {
			if prob := check(id, p); prob != nil {
				return nil, prob
			}
			plan := p.Typed.(*engine.SinkPlan)
			return NewOutput(id, plan.Topic, env.Scenario, plan.ValueSubject != "", conn, env.Logger), nil
		},
		// The transactions of Kafka sinks a new version has none of are committed by an
		// Output that writes nothing (nil without brokers: nothing can commit them).
		Settle: func(env connector.Env) connector.Output {
			if !conn.Configured() {
				return nil
			}
			k := NewOutput("", "", env.Scenario, false, conn, env.Logger)
			k.settleOnly = true
			return k
		},
	}
}
