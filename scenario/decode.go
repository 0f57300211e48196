package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// DecodeError reports why a scenario's JSON could not be decoded: every
// problem found, in the order of the text. Each problem has the JSON text's
// Line and Column; problems inside a node with a usable id carry its NodeID
// and a Field relative to the node, the others the full JSON path in Field.
//
// At most MaxDecodeProblems are listed; More counts those found past them.
type DecodeError struct {
	Problems []Problem
	More     int
}

// MaxDecodeProblems is the most problems a DecodeError lists: each is a line of the answer
// that shows them, and a graph of thousands of empty nodes has a few problems each.
const MaxDecodeProblems = 1000

func (e *DecodeError) Error() string {
	if len(e.Problems) == 0 {
		return "decoding scenario: no problems"
	}
	msg := "decoding scenario: " + e.Problems[0].Error()
	if n := len(e.Problems) - 1 + e.More; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	return msg
}

// Decode parses a scenario from its JSON form (see the package
// documentation). It is strict: unknown fields, fields that belong to
// another node type, duplicate fields and values of the wrong JSON type are
// errors. It returns a *DecodeError listing every problem; the Scenario it
// returns alongside holds whatever could be decoded (nil when the text is not
// JSON at all), for callers that want to show it anyway.
//
// Decode checks only the form. Validate checks the graph, and the nodes
// package checks parameters and expressions.
func Decode(data []byte) (*Scenario, error) {
	root, err := parseJSON(data)
	if err != nil {
		var syn *jsonSyntaxError
		if !errors.As(err, &syn) {
			return nil, err
		}
		line, col := Position(data, syn.offset)
		return nil, &DecodeError{Problems: []Problem{{
			Code: CodeInvalidJSON, Message: "invalid JSON: " + syn.msg, Line: line, Column: col,
		}}}
	}
	d := &decoder{src: data}
	s := d.scenario(root)
	if len(d.problems) > 0 {
		return s, &DecodeError{Problems: d.problems, More: d.more}
	}
	return s, nil
}

// UnmarshalJSON implements json.Unmarshaler with Decode.
func (s *Scenario) UnmarshalJSON(data []byte) error {
	dec, err := Decode(data)
	if dec != nil {
		*s = *dec
	}
	return err
}

// where locates a field: inside the node nodeID (then path is relative to
// the node) or, when nodeID is "", at the absolute JSON path.
type where struct {
	nodeID string
	path   string
}

func (w where) field(name string) where {
	if w.path == "" {
		return where{w.nodeID, name}
	}
	return where{w.nodeID, w.path + "." + name}
}

func (w where) index(i int) where {
	return where{w.nodeID, w.path + "[" + strconv.Itoa(i) + "]"}
}

type decoder struct {
	src      []byte
	problems []Problem
	more     int // problems past MaxDecodeProblems, counted only
	// at is the line and column of the byte at.offset of src, where the last problem was, and
	// marks the same every 4 KiB of the text read so far: each problem's position is read on
	// from the nearest place before it, never from the text's start again.
	at    mark
	marks []mark
}

// position is Position(d.src, offset), read from the last problem's position or the nearest
// mark before offset.
func (d *decoder) position(offset int) (line, column int) {
	offset = max(0, min(offset, len(d.src)))
	if d.at.line == 0 {
		d.at = mark{0, 1, 1}
		d.marks = append(d.marks, d.at)
	}
	if offset < d.at.offset {
		i := sort.Search(len(d.marks), func(i int) bool { return d.marks[i].offset > offset }) - 1
		d.at = d.marks[i] // marks[0] is the text's start
	}
	for d.at.offset < offset {
		d.at.step(d.src)
		if last := d.marks[len(d.marks)-1]; d.at.offset-last.offset >= 4096 {
			d.marks = append(d.marks, d.at)
		}
	}
	return d.at.line, d.at.column
}

func (d *decoder) report(offset int, w where, code, format string, args ...any) {
	if len(d.problems) >= MaxDecodeProblems {
		d.more++
		return
	}
	line, col := d.position(offset)
	d.problems = append(d.problems, Problem{
		NodeID: w.nodeID, Field: w.path, Code: code,
		Message: fmt.Sprintf(format, args...), Line: line, Column: col,
	})
}

func (d *decoder) wrongType(v *jsonValue, w where, want string) {
	d.report(v.start, w, CodeWrongType, "%s must be %s, not %s", describeField(w), want, v.kind)
}

func describeField(w where) string {
	if w.path == "" {
		return "the scenario"
	}
	return strconv.Quote(w.path)
}

// object checks that v is an object whose fields are all in allowed, and
// returns the fields by name. Unknown and duplicate fields are reported.
func (d *decoder) object(v *jsonValue, w where, allowed ...string) (map[string]*jsonValue, bool) {
	if v.kind != jsonObject {
		d.wrongType(v, w, "an object")
		return nil, false
	}
	fields := make(map[string]*jsonValue, len(v.members))
	for _, m := range v.members {
		known := false
		for _, a := range allowed {
			if m.key == a {
				known = true
				break
			}
		}
		fw := w.field(m.key)
		switch {
		case !known:
			d.report(m.offset, fw, CodeUnknownField, "unknown field %q%s", m.key, allowedHint(allowed))
		case fields[m.key] != nil:
			d.report(m.offset, fw, CodeDuplicateField, "field %q appears more than once", m.key)
		default:
			fields[m.key] = m.value
		}
	}
	return fields, true
}

func allowedHint(allowed []string) string {
	if len(allowed) == 0 {
		return " (no fields are allowed here)"
	}
	return " (allowed: " + strings.Join(allowed, ", ") + ")"
}

// requiredString decodes a string field that must be present.
func (d *decoder) requiredString(obj *jsonValue, fields map[string]*jsonValue, w where, name string) string {
	v := fields[name]
	if v == nil {
		d.report(obj.start, w.field(name), CodeMissingField, "field %q is required", name)
		return ""
	}
	if v.kind != jsonString {
		d.wrongType(v, w.field(name), "a string")
		return ""
	}
	return v.text
}

// optionalString decodes a string field that may be absent or null.
func (d *decoder) optionalString(fields map[string]*jsonValue, w where, name string) string {
	v := fields[name]
	if v == nil || v.kind == jsonNull {
		return ""
	}
	if v.kind != jsonString {
		d.wrongType(v, w.field(name), "a string")
		return ""
	}
	return v.text
}

// array returns the items of an array field; absent or null is empty.
func (d *decoder) array(fields map[string]*jsonValue, w where, name string) []*jsonValue {
	v := fields[name]
	if v == nil || v.kind == jsonNull {
		return nil
	}
	if v.kind != jsonArray {
		d.wrongType(v, w.field(name), "an array")
		return nil
	}
	return v.items
}

func (d *decoder) scenario(root *jsonValue) *Scenario {
	s := &Scenario{Nodes: []Node{}, Edges: []Edge{}}
	fields, ok := d.object(root, where{}, "properties", "nodes", "edges")
	if !ok {
		return s
	}
	if v := fields["properties"]; v != nil && v.kind != jsonNull {
		s.Properties = d.properties(v, where{path: "properties"})
	}
	for i, item := range d.array(fields, where{}, "nodes") {
		s.Nodes = append(s.Nodes, d.node(item, where{path: "nodes"}.index(i)))
	}
	for i, item := range d.array(fields, where{}, "edges") {
		s.Edges = append(s.Edges, d.edge(item, where{path: "edges"}.index(i)))
	}
	return s
}

func (d *decoder) properties(v *jsonValue, w where) Properties {
	var p Properties
	fields, ok := d.object(v, w, "additionalFields")
	if !ok {
		return p
	}
	af := fields["additionalFields"]
	if af == nil || af.kind == jsonNull {
		return p
	}
	aw := w.field("additionalFields")
	afFields, ok := d.object(af, aw, "description", "properties")
	if !ok {
		return p
	}
	p.AdditionalFields.Description = d.optionalString(afFields, aw, "description")
	if props := afFields["properties"]; props != nil && props.kind != jsonNull {
		pw := aw.field("properties")
		if props.kind != jsonObject {
			d.wrongType(props, pw, "an object")
			return p
		}
		for _, m := range props.members {
			if p.AdditionalFields.Properties == nil {
				p.AdditionalFields.Properties = map[string]string{}
			}
			mw := pw.field(m.key)
			if _, dup := p.AdditionalFields.Properties[m.key]; dup {
				d.report(m.offset, mw, CodeDuplicateField, "field %q appears more than once", m.key)
				continue
			}
			if m.value.kind != jsonString {
				d.wrongType(m.value, mw, "a string")
				continue
			}
			p.AdditionalFields.Properties[m.key] = m.value.text
		}
	}
	return p
}

// nodeFields lists the fields each node type may have besides id, type and
// additionalFields.
var nodeFields = map[NodeType][]string{
	TypeSource:          {"ref"},
	TypeSink:            {"ref"},
	TypeFilter:          {"expression"},
	TypeVariable:        {"varName", "value"},
	TypeVariableBuilder: {"varName", "fields"},
	TypeSwitch:          {},
	TypeSplit:           {},
	TypeCustomNode:      {"nodeType", "outputVar", "parameters"},
	TypeJoin:            {"nodeType", "outputVar", "parameters", "branchParameters"},
}

func (d *decoder) node(v *jsonValue, w where) Node {
	var n Node
	if v.kind != jsonObject {
		d.wrongType(v, w, "an object")
		return n
	}
	// The id and type come first: the id locates every later problem, the
	// type says which fields are allowed.
	var typeValue *jsonValue
	for _, m := range v.members {
		switch m.key {
		case "id":
			if m.value.kind == jsonString && n.ID == "" {
				n.ID = m.value.text
			}
		case "type":
			if typeValue == nil {
				typeValue = m.value
			}
		}
	}
	if n.ID != "" {
		w = where{nodeID: n.ID}
	}
	allowed := []string{"id", "type", "additionalFields"}
	typeKnown := false
	switch {
	case typeValue == nil:
		d.report(v.start, w.field("type"), CodeMissingField, "field \"type\" is required (one of %s)", nodeTypeList())
	case typeValue.kind != jsonString:
		d.wrongType(typeValue, w.field("type"), "a string")
	default:
		n.Type = NodeType(typeValue.text)
		if extra, ok := nodeFields[n.Type]; ok {
			allowed = append(allowed, extra...)
			typeKnown = true
		} else {
			d.report(typeValue.start, w.field("type"), CodeUnknownNodeType,
				"unknown node type %q (one of %s)", typeValue.text, nodeTypeList())
		}
	}
	if !typeKnown {
		// Without a type the other fields cannot be checked; report only
		// what is wrong with the id.
		if idv := findMember(v, "id"); idv != nil && idv.kind != jsonString {
			d.wrongType(idv, w.field("id"), "a string")
		}
		return n
	}
	fields, _ := d.object(v, w, allowed...)
	if idv := fields["id"]; idv != nil && idv.kind != jsonString {
		d.wrongType(idv, w.field("id"), "a string")
	}
	if af := fields["additionalFields"]; af != nil && af.kind != jsonNull {
		n.AdditionalFields = d.nodeAdditionalFields(af, w.field("additionalFields"))
	}
	if ref := fields["ref"]; ref != nil && ref.kind != jsonNull {
		n.Ref = d.ref(ref, w.field("ref"))
	}
	n.Expression = d.optionalExpression(fields, w, "expression")
	n.VarName = d.optionalString(fields, w, "varName")
	n.Value = d.optionalExpression(fields, w, "value")
	for i, item := range d.array(fields, w, "fields") {
		n.Fields = append(n.Fields, d.recordField(item, w.field("fields").index(i)))
	}
	n.NodeType = d.optionalString(fields, w, "nodeType")
	n.OutputVar = d.optionalString(fields, w, "outputVar")
	n.Parameters = d.parameters(fields, w, "parameters")
	for i, item := range d.array(fields, w, "branchParameters") {
		n.BranchParameters = append(n.BranchParameters, d.branchParameters(item, w.field("branchParameters").index(i)))
	}
	return n
}

func findMember(v *jsonValue, key string) *jsonValue {
	for _, m := range v.members {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

func nodeTypeList() string {
	names := make([]string, len(NodeTypes))
	for i, t := range NodeTypes {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

func (d *decoder) nodeAdditionalFields(v *jsonValue, w where) *NodeAdditionalFields {
	fields, ok := d.object(v, w, "description", "layoutData")
	if !ok {
		return nil
	}
	af := &NodeAdditionalFields{Description: d.optionalString(fields, w, "description")}
	if ld := fields["layoutData"]; ld != nil && ld.kind != jsonNull {
		lw := w.field("layoutData")
		if lf, ok := d.object(ld, lw, "x", "y"); ok {
			af.LayoutData = &LayoutData{X: d.number(ld, lf, lw, "x"), Y: d.number(ld, lf, lw, "y")}
		}
	}
	return af
}

func (d *decoder) number(obj *jsonValue, fields map[string]*jsonValue, w where, name string) float64 {
	v := fields[name]
	if v == nil {
		d.report(obj.start, w.field(name), CodeMissingField, "field %q is required", name)
		return 0
	}
	if v.kind != jsonNumber {
		d.wrongType(v, w.field(name), "a number")
		return 0
	}
	f, err := strconv.ParseFloat(v.text, 64)
	if err != nil {
		d.report(v.start, w.field(name), CodeWrongType, "%s: number %s is out of range", describeField(w.field(name)), v.text)
		return 0
	}
	return f
}

func (d *decoder) ref(v *jsonValue, w where) *Ref {
	fields, ok := d.object(v, w, "typ", "parameters")
	if !ok {
		return nil
	}
	return &Ref{
		Typ:        d.requiredString(v, fields, w, "typ"),
		Parameters: d.parameters(fields, w, "parameters"),
	}
}

func (d *decoder) optionalExpression(fields map[string]*jsonValue, w where, name string) *Expression {
	v := fields[name]
	if v == nil || v.kind == jsonNull {
		return nil
	}
	return d.expression(v, w.field(name))
}

func (d *decoder) expression(v *jsonValue, w where) *Expression {
	fields, ok := d.object(v, w, "language", "expression")
	if !ok {
		return nil
	}
	return &Expression{
		Language:   d.requiredString(v, fields, w, "language"),
		Expression: d.requiredString(v, fields, w, "expression"),
	}
}

func (d *decoder) parameters(fields map[string]*jsonValue, w where, name string) []Parameter {
	var params []Parameter
	for i, item := range d.array(fields, w, name) {
		params = append(params, d.parameter(item, w.field(name).index(i)))
	}
	return params
}

func (d *decoder) parameter(v *jsonValue, w where) Parameter {
	var p Parameter
	fields, ok := d.object(v, w, "name", "expression", "value")
	if !ok {
		return p
	}
	p.Name = d.requiredString(v, fields, w, "name")
	p.Expression = d.optionalExpression(fields, w, "expression")
	if val := fields["value"]; val != nil {
		var buf bytes.Buffer
		// The text was parsed already, so it is valid JSON and Compact
		// cannot fail.
		_ = json.Compact(&buf, d.src[val.start:val.end])
		p.Value = json.RawMessage(buf.Bytes())
	}
	return p
}

func (d *decoder) recordField(v *jsonValue, w where) RecordField {
	var f RecordField
	fields, ok := d.object(v, w, "name", "expression")
	if !ok {
		return f
	}
	f.Name = d.requiredString(v, fields, w, "name")
	f.Expression = d.optionalExpression(fields, w, "expression")
	return f
}

func (d *decoder) branchParameters(v *jsonValue, w where) BranchParameters {
	var b BranchParameters
	fields, ok := d.object(v, w, "branchId", "parameters")
	if !ok {
		return b
	}
	b.BranchID = d.requiredString(v, fields, w, "branchId")
	b.Parameters = d.parameters(fields, w, "parameters")
	return b
}

func (d *decoder) edge(v *jsonValue, w where) Edge {
	var e Edge
	fields, ok := d.object(v, w, "from", "to", "edgeType")
	if !ok {
		return e
	}
	e.From = d.requiredString(v, fields, w, "from")
	e.To = d.requiredString(v, fields, w, "to")
	if et := fields["edgeType"]; et != nil && et.kind != jsonNull {
		ew := w.field("edgeType")
		if ef, ok := d.object(et, ew, "type", "condition"); ok {
			e.EdgeType = &EdgeType{
				Type:      d.requiredString(et, ef, ew, "type"),
				Condition: d.optionalExpression(ef, ew, "condition"),
			}
		}
	}
	return e
}
