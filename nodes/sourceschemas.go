package nodes

import (
	"context"
	"encoding/json"
	"time"
)

// CodeSourceSchemaUnknown warns that a source's #input could not be typed from its
// registry schema (SourceSchemas): it stays dynamic.
const CodeSourceSchemaUnknown = "source-schema-unknown"

// SourceSchemas gives the JSON Schema of a source's events from outside the scenario (a
// schema registry: the latest schema of a Kafka topic's value subject), for the sources
// without a "schema" parameter.
type SourceSchemas interface {
	// SourceSchema returns the JSON Schema of the events of a source of kind kindID that
	// reads topic, or nil when it knows none. An error says why it could not be looked up
	// (the registry unreachable): the source's #input is then dynamic, with a warning. It
	// returns by ctx's deadline.
	SourceSchema(ctx context.Context, kindID, topic string) ([]byte, error)
}

// SourceSchemaBudget bounds the lookups of one validation together, from the first: the
// sources looked up after it stay dynamic, with a warning. (A graph of 250 Kafka sources
// whose topics a registry never answered took 250 lookups of 5 s one after another, 21
// minutes, holding the request's body in the server's budget of request bodies.)
const SourceSchemaBudget = 5 * time.Second

// WithSourceSchemas returns a copy of r whose sources with a topic and without a "schema"
// parameter take the type of #input from s. r is not changed.
func (r *Registry) WithSourceSchemas(s SourceSchemas) *Registry {
	c := *r
	c.sourceSchemas = s
	return &c
}

// sourceSchema is the JSON Schema of c's source from the registry's SourceSchemas, or nil.
func (c *nodeCheck) sourceSchema() []byte {
	ss := c.v.reg.sourceSchemas
	if _, hasTopic := c.k.Param("topic"); ss == nil || !hasTopic || !c.given("topic") {
		return nil
	}
	var topic string // checkSource reports a topic that is not a string
	if json.Unmarshal(c.literal("topic"), &topic) != nil || topic == "" {
		return nil
	}
	now := time.Now()
	if c.v.schemaDeadline.IsZero() {
		c.v.schemaDeadline = now.Add(SourceSchemaBudget)
	}
	if !now.Before(c.v.schemaDeadline) {
		c.warnf("topic", CodeSourceSchemaUnknown, "#input is not typed from the schema registry: not looked up, this validation's lookups took their %v", SourceSchemaBudget)
		return nil
	}
	ctx, cancel := context.WithDeadline(context.Background(), c.v.schemaDeadline)
	defer cancel()
	raw, err := ss.SourceSchema(ctx, c.k.ID, topic)
	if err != nil {
		c.warnf("topic", CodeSourceSchemaUnknown, "#input is not typed from the schema registry: %v", err)
		return nil
	}
	return raw
}
