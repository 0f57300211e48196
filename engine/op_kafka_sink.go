package engine

import (
	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/value"
)

// A Kafka sink (Sink/kafka) writes the record {key, value, headers} of each event to the
// engine's Output: the deployment turns it into a Kafka record of its next transaction
// (deploy/kafkasink.go); a run or a test run writes it as other sinks write their value. Key
// and headers are optional; headers must be a record.

var _ = builtIn(newKafkaSink, "Sink/kafka")

// Fields of the record a Kafka sink hands to Output, in order: "key" when the sink has a key,
// "value", and "headers" when it has headers.
const (
	KafkaKey     = "key"
	KafkaValue   = "value"
	KafkaHeaders = "headers"
)

type kafkaSink struct {
	value, key, headers *evaluator // key and headers nil when not given
	valueField          string
	valueSubject        string   // encode the value against it (Options.EncodeKafkaValue); "": no
	keys                []string // the fields of the record handed to Output
}

func newKafkaSink(_ *Engine, n *node) (operator, error) {
	p := n.plan.Typed.(*nodes.SinkPlan)
	k := &kafkaSink{value: n.evaluator(p.Value), valueField: p.Value.Field, valueSubject: p.ValueSubject}
	if p.Key.Program != nil {
		k.key = n.evaluator(p.Key)
		k.keys = append(k.keys, KafkaKey)
	}
	k.keys = append(k.keys, KafkaValue)
	if p.Headers.Program != nil {
		k.headers = n.evaluator(p.Headers)
		k.keys = append(k.keys, KafkaHeaders)
	}
	return k, nil
}

func (k *kafkaSink) process(e *Engine, n *node, ev *event, _ string) {
	vals := make([]value.Value, 0, len(k.keys))
	if k.key != nil {
		key, err := k.key.eval(ev)
		if err != nil {
			e.fail(n, KafkaKey, err)
			return
		}
		vals = append(vals, key)
	}
	v, err := k.value.eval(ev)
	if err == nil && k.valueSubject != "" && e.opts.EncodeKafkaValue != nil {
		var b []byte
		if b, err = e.opts.EncodeKafkaValue(k.valueSubject, v); err == nil {
			v = value.String(string(b))
		}
	}
	if err != nil {
		e.fail(n, k.valueField, err)
		return
	}
	vals = append(vals, v)
	if k.headers != nil {
		h, err := k.headers.eval(ev)
		if err == nil && h.Kind() != value.KindRecord && !h.IsNull() {
			err = &expression.RunError{Message: "the headers are " + h.Kind().String() + ", not a record {name: value}"}
		}
		if err != nil {
			e.fail(n, KafkaHeaders, err)
			return
		}
		if h.IsNull() {
			h = value.NewRecord(nil, nil)
		}
		vals = append(vals, h)
	}
	n.counts.Out++
	if e.opts.Output != nil {
		e.opts.Output(n.id, value.NewRecord(k.keys, vals), ev.time)
	}
}
