// Package scenario is the scenario model and its JSON form: a graph of
// nodes (sources, filters, variables, choices, aggregates, sinks) joined by
// edges, as the designer draws it and the API stores it.
//
// The JSON form follows Nussknacker's API form of a scenario graph, so that
// its users recognise it:
//
//	{"properties": {...}, "nodes": [{"id", "type", ...}], "edges": [{"from", "to", "edgeType"}]}
//
// # Properties
//
// "properties": {"additionalFields": {"description": "...", "properties":
// {"key": "value"}}}: a description and free string properties. Both may be
// left out.
//
// # Nodes
//
// Every node has an "id" (unique, non-empty) and a "type", and may have
// "additionalFields": {"description": "...", "layoutData": {"x": 0, "y": 0}}
// (its position on the canvas, kept as it is). The other fields depend on
// the type; a field that belongs to another type is an error:
//
//	Source           "ref": {"typ": "file" | "http" | "kafka", "parameters": [...]}
//	Sink             "ref": {"typ": "file" | "stdout" | "dead-end", "parameters": [...]}
//	Filter           "expression": a boolean expression
//	Variable         "varName": "x", "value": an expression
//	VariableBuilder  "varName": "rec", "fields": [{"name": "a", "expression": ...}]
//	Switch           nothing more: its ordered conditions are on its edges
//	Split            nothing more
//	CustomNode       "nodeType": "aggregate-sliding" | "aggregate-tumbling" |
//	                 "aggregate-hopping" | "aggregate-session" | "aggregate-count" |
//	                 "for-each", "outputVar": "agg", "parameters": [...]
//	Join             "nodeType": "union", "outputVar" (optional),
//	                 "branchParameters": [{"branchId": "node id", "parameters": [...]}]
//
// A parameter is {"name": ..., "expression": {...}} when it is an expression
// evaluated per event, and {"name": ..., "value": <JSON>} otherwise:
// durations ("60s", "1h", "PT1H"), choices ("OnEnd"), flags (true), numbers,
// lists of expressions (groupBy) and of aggregations, JSON Schemas. Which
// parameters a kind of node takes, and of which form, is described by the
// nodes package, from which the designer draws its forms. An aggregation is
// {"name": "total", "aggregator": "Sum", "aggregateBy": {expression}}, plus
// "quantile" for Percentile and ApproximatePercentile and "precision" for
// ApproximateSetCardinality.
//
// # Edges
//
// {"from": "id", "to": "id", "edgeType": null} is a plain edge. A Filter's
// edges have "edgeType": {"type": "FilterTrue"} or {"type": "FilterFalse"};
// a Switch's {"type": "NextSwitch", "condition": {expression}} (tried in the
// order of the edges list) or {"type": "SwitchDefault"}. Edges into a Join
// are plain; its branchParameters name the node each branch comes from.
//
// # Expressions
//
// {"language": "expr", "expression": "#input.amount > 100"}: expr-lang
// (github.com/expr-lang/expr) syntax, in which variables may be written
// with Nussknacker's '#' (#input, #meta, #key, #window, output variables)
// or without it. See package expression.
//
// # Decoding and validation
//
// Decode reads the JSON strictly and reports every problem with its line
// and column; Encode writes it back in a stable form, and the two round-trip.
// Validate checks the graph's structure. Each Problem carries the node id,
// the field, a stable code and, where there is text to point into, a line
// and column.
//
// # Limits
//
// A scenario has at most MaxNodes (500) nodes and MaxEdges (2,000) edges.
// More is an error ("too-many-nodes", "too-many-edges-in-scenario", on the
// field "nodes" or "edges") and then the only one: nothing else is checked,
// so that refusing a large scenario costs no more than reading it.
//
// # A complete example
//
// Payments over 1000 in a card's last hour, from an HTTP source, with every
// kind of edge:
//
//	{
//	  "properties": {"additionalFields": {"description": "Large payments per card", "properties": {"owner": "fraud-team"}}},
//	  "nodes": [
//	    {
//	      "id": "payments",
//	      "type": "Source",
//	      "ref": {"typ": "http", "parameters": [
//	        {"name": "timestamp", "expression": {"language": "expr", "expression": "toEpochMillis(#input.time)"}},
//	        {"name": "maxOutOfOrderness", "value": "30s"},
//	        {"name": "schema", "value": {
//	          "type": "object",
//	          "required": ["card", "amount", "time"],
//	          "properties": {"card": {"type": "string"}, "amount": {"type": "number"}, "time": {"type": "string"}, "country": {"type": "string"}}
//	        }}
//	      ]},
//	      "additionalFields": {"description": "POSTed payments", "layoutData": {"x": 0, "y": 0}}
//	    },
//	    {
//	      "id": "large",
//	      "type": "Filter",
//	      "expression": {"language": "expr", "expression": "#input.amount > 1000"},
//	      "additionalFields": {"layoutData": {"x": 0, "y": 120}}
//	    },
//	    {
//	      "id": "last hour",
//	      "type": "CustomNode",
//	      "nodeType": "aggregate-sliding",
//	      "outputVar": "hour",
//	      "parameters": [
//	        {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.card"}]},
//	        {"name": "aggregations", "value": [
//	          {"name": "count", "aggregator": "Count"},
//	          {"name": "total", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.amount"}},
//	          {"name": "p95", "aggregator": "Percentile", "quantile": 0.95, "aggregateBy": {"language": "expr", "expression": "#input.amount"}}
//	        ]},
//	        {"name": "windowLength", "value": "1h"},
//	        {"name": "emitWhenEventLeft", "value": false}
//	      ],
//	      "additionalFields": {"layoutData": {"x": 0, "y": 240}}
//	    },
//	    {
//	      "id": "summary",
//	      "type": "VariableBuilder",
//	      "varName": "summary",
//	      "fields": [
//	        {"name": "card", "expression": {"language": "expr", "expression": "#key[0]"}},
//	        {"name": "payments", "expression": {"language": "expr", "expression": "#hour.count"}},
//	        {"name": "total", "expression": {"language": "expr", "expression": "#hour.total"}}
//	      ]
//	    },
//	    {"id": "how many", "type": "Switch"},
//	    {"id": "alert", "type": "Sink", "ref": {"typ": "stdout", "parameters": [
//	      {"name": "value", "expression": {"language": "expr", "expression": "#summary"}}
//	    ]}},
//	    {"id": "log", "type": "Sink", "ref": {"typ": "file", "parameters": [
//	      {"name": "path", "value": "large-payments.jsonl"},
//	      {"name": "value", "expression": {"language": "expr", "expression": "{card: #summary.card, amount: #input.amount}"}}
//	    ]}},
//	    {"id": "small", "type": "Sink", "ref": {"typ": "dead-end"}}
//	  ],
//	  "edges": [
//	    {"from": "payments", "to": "large", "edgeType": null},
//	    {"from": "large", "to": "last hour", "edgeType": {"type": "FilterTrue"}},
//	    {"from": "large", "to": "small", "edgeType": {"type": "FilterFalse"}},
//	    {"from": "last hour", "to": "summary", "edgeType": null},
//	    {"from": "summary", "to": "how many", "edgeType": null},
//	    {"from": "how many", "to": "alert", "edgeType": {"type": "NextSwitch", "condition": {"language": "expr", "expression": "#hour.count >= 3"}}},
//	    {"from": "how many", "to": "log", "edgeType": {"type": "SwitchDefault"}}
//	  ]
//	}
package scenario
