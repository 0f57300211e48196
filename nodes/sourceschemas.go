package nodes

import "encoding/json"

// CodeSourceSchemaUnknown warns that a source's #input could not be typed from its
// registry schema (SourceSchemas): it stays dynamic.
const CodeSourceSchemaUnknown = "source-schema-unknown"

// SourceSchemas gives the JSON Schema of a source's events from outside the scenario (a
// schema registry: the latest schema of a Kafka topic's value subject), for the sources
// without a "schema" parameter.
type SourceSchemas interface {
	// SourceSchema returns the JSON Schema of the events of a source of kind kindID that
	// reads topic, or nil when it knows none. An error says why it could not be looked up
	// (the registry unreachable): the source's #input is then dynamic, with a warning.
	SourceSchema(kindID, topic string) ([]byte, error)
}

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
	raw, err := ss.SourceSchema(c.k.ID, topic)
	if err != nil {
		c.warnf("topic", CodeSourceSchemaUnknown, "#input is not typed from the schema registry: %v", err)
		return nil
	}
	return raw
}
