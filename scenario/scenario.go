package scenario

import "encoding/json"

// Scenario is a scenario graph: its properties, its nodes and the edges
// between them. It is the API form of Nussknacker's scenario graph.
type Scenario struct {
	Properties Properties `json:"properties"`
	Nodes      []Node     `json:"nodes"`
	Edges      []Edge     `json:"edges"`
}

// Properties are the scenario-wide settings.
type Properties struct {
	AdditionalFields PropertiesFields `json:"additionalFields"`
}

// PropertiesFields holds a free-text description and string key/value
// properties (as Nussknacker's additionalFields.properties).
type PropertiesFields struct {
	Description string            `json:"description,omitempty"`
	Properties  map[string]string `json:"properties,omitempty"`
}

// NodeType is the "type" of a node, named as in Nussknacker.
type NodeType string

// The node types. Source and Sink say which kind they are in Ref.Typ;
// CustomNode and Join in NodeType.
const (
	TypeSource          NodeType = "Source"
	TypeSink            NodeType = "Sink"
	TypeFilter          NodeType = "Filter"
	TypeVariable        NodeType = "Variable"
	TypeVariableBuilder NodeType = "VariableBuilder"
	TypeSwitch          NodeType = "Switch"
	TypeSplit           NodeType = "Split"
	TypeCustomNode      NodeType = "CustomNode"
	TypeJoin            NodeType = "Join"
)

// NodeTypes lists every node type, in palette order.
var NodeTypes = []NodeType{
	TypeSource, TypeFilter, TypeVariable, TypeVariableBuilder, TypeSwitch,
	TypeSplit, TypeJoin, TypeCustomNode, TypeSink,
}

// Known reports whether t is one of NodeTypes.
func (t NodeType) Known() bool {
	for _, k := range NodeTypes {
		if t == k {
			return true
		}
	}
	return false
}

// Node is one node of the graph. Which fields it may have depends on Type:
//
//	Source, Sink      Ref
//	Filter            Expression (boolean)
//	Variable          VarName, Value
//	VariableBuilder   VarName, Fields
//	Switch, Split     nothing more (a Switch's conditions are on its edges)
//	CustomNode        NodeType, OutputVar, Parameters
//	Join              NodeType, OutputVar, Parameters, BranchParameters
//
// Every node may have AdditionalFields (description and layout).
type Node struct {
	ID               string                `json:"id"`
	Type             NodeType              `json:"type"`
	Ref              *Ref                  `json:"ref,omitempty"`
	Expression       *Expression           `json:"expression,omitempty"`
	VarName          string                `json:"varName,omitempty"`
	Value            *Expression           `json:"value,omitempty"`
	Fields           []RecordField         `json:"fields,omitempty"`
	NodeType         string                `json:"nodeType,omitempty"`
	OutputVar        string                `json:"outputVar,omitempty"`
	Parameters       []Parameter           `json:"parameters,omitempty"`
	BranchParameters []BranchParameters    `json:"branchParameters,omitempty"`
	AdditionalFields *NodeAdditionalFields `json:"additionalFields,omitempty"`
}

// Subtype returns the kind of node within its type: Ref.Typ for a Source or
// a Sink, NodeType for a CustomNode or a Join, "" otherwise.
func (n *Node) Subtype() string {
	switch n.Type {
	case TypeSource, TypeSink:
		if n.Ref != nil {
			return n.Ref.Typ
		}
	case TypeCustomNode, TypeJoin:
		return n.NodeType
	}
	return ""
}

// Ref names the kind of a Source or Sink ("file", "kafka", ...) and holds its
// parameters.
type Ref struct {
	Typ        string      `json:"typ"`
	Parameters []Parameter `json:"parameters,omitempty"`
}

// Expression is an expression in the given language. The only language is
// "expr" (expr-lang syntax, with Nussknacker's #name references).
type Expression struct {
	Language   string `json:"language"`
	Expression string `json:"expression"`
}

// LanguageExpr is the expression language of this server.
const LanguageExpr = "expr"

// Expr returns an expr-language expression.
func Expr(text string) *Expression {
	return &Expression{Language: LanguageExpr, Expression: text}
}

// Parameter is a named parameter of a node. Parameters that are expressions
// (evaluated per event) set Expression; the others (durations, choices,
// flags, lists, schemas) set Value to a JSON value whose shape the node kind
// describes. Value is kept in compact form.
type Parameter struct {
	Name       string          `json:"name"`
	Expression *Expression     `json:"expression,omitempty"`
	Value      json.RawMessage `json:"value,omitempty"`
}

// RecordField is one field of a VariableBuilder's record.
type RecordField struct {
	Name       string      `json:"name"`
	Expression *Expression `json:"expression"`
}

// BranchParameters are a Join's parameters for the branch that comes from
// node BranchID.
type BranchParameters struct {
	BranchID   string      `json:"branchId"`
	Parameters []Parameter `json:"parameters,omitempty"`
}

// NodeAdditionalFields holds what the designer keeps about a node.
type NodeAdditionalFields struct {
	Description string      `json:"description,omitempty"`
	LayoutData  *LayoutData `json:"layoutData,omitempty"`
}

// LayoutData is a node's position on the canvas, in canvas pixels.
type LayoutData struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// Edge connects two nodes. EdgeType is nil for a plain edge.
type Edge struct {
	From     string    `json:"from"`
	To       string    `json:"to"`
	EdgeType *EdgeType `json:"edgeType"`
}

// EdgeType says which output of a Filter, a Switch or an aggregate (its
// Late output) an edge leaves from. Condition is set for NextSwitch only.
type EdgeType struct {
	Type      string      `json:"type"`
	Condition *Expression `json:"condition,omitempty"`
}

// ReservedIDPrefix starts the ids the server uses beside a scenario's node ids (the sink id of
// a deployment's dead letters); no node id may start with it.
const ReservedIDPrefix = "$"

// MaxNodeIDLength is the most characters a node id has. Ids name the node in every count,
// result, dead letter, metric and URL of it: ids of megabytes (accepted before) made each
// scrape of /metrics 201 MB with eight such deployments. Nussknacker's longest in its examples
// are about 40.
const MaxNodeIDLength = 128

// The edge types.
const (
	EdgeFilterTrue    = "FilterTrue"
	EdgeFilterFalse   = "FilterFalse"
	EdgeNextSwitch    = "NextSwitch"
	EdgeSwitchDefault = "SwitchDefault"
	// EdgeLate leaves a time-window aggregate: it carries the events that
	// came too late for their windows, with #late (docs/semantics.md §2).
	EdgeLate = "Late"
)

// edgeTypeName returns the edge type of e, "" for a plain edge.
func edgeTypeName(e *Edge) string {
	if e.EdgeType == nil {
		return ""
	}
	return e.EdgeType.Type
}

// Node returns the first node with the given id, or nil.
func (s *Scenario) Node(id string) *Node {
	for i := range s.Nodes {
		if s.Nodes[i].ID == id {
			return &s.Nodes[i]
		}
	}
	return nil
}
