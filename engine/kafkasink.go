package engine

import (
	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/value"
)

// kafkaSink holds the expressions of a Kafka sink beside its value: the key and the headers,
// each nil when not given.
type kafkaSink struct {
	key, headers *evaluator
	keys         []string // the fields of the record handed to Output
}

// Fields of the record a Kafka sink hands to Output, in order: "key" when the sink has a key,
// "value", and "headers" when it has headers. The deployment turns it into a Kafka record; a
// run writes it as the sink's output.
const (
	KafkaKey     = "key"
	KafkaValue   = "value"
	KafkaHeaders = "headers"
)

func newKafkaSink(e *Engine, p *nodes.Plan) *kafkaSink {
	k := &kafkaSink{key: e.lay.newEvaluator(p.Programs[KafkaKey]), headers: e.lay.newEvaluator(p.Programs[KafkaHeaders])}
	if k.key != nil {
		k.keys = append(k.keys, KafkaKey)
	}
	k.keys = append(k.keys, KafkaValue)
	if k.headers != nil {
		k.keys = append(k.keys, KafkaHeaders)
	}
	return k
}

// record is the Output value of one event: {key, value, headers}. A failing expression is a
// per-event error at its field, as is headers that are not a record.
func (k *kafkaSink) record(e *Engine, n *node, c *ctx, v value.Value) (value.Value, bool) {
	vals := make([]value.Value, 0, len(k.keys))
	if k.key != nil {
		key, err := k.key.eval(c)
		if err != nil {
			e.fail(n, KafkaKey, err)
			return value.Value{}, false
		}
		vals = append(vals, key)
	}
	vals = append(vals, v)
	if k.headers != nil {
		h, err := k.headers.eval(c)
		if err == nil && h.Kind() != value.KindRecord && !h.IsNull() {
			err = &expression.RunError{Message: "the headers are " + h.Kind().String() + ", not a record {name: value}"}
		}
		if err != nil {
			e.fail(n, KafkaHeaders, err)
			return value.Value{}, false
		}
		if h.IsNull() {
			h = value.NewRecord(nil, nil)
		}
		vals = append(vals, h)
	}
	return value.NewRecord(k.keys, vals), true
}
