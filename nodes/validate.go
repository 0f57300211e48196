package nodes

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/scenario"
)

// Codes of the problems found by Validate beyond those of scenario.Validate
// and expression.Compile.
const (
	CodeUnknownKind          = "unknown-node-kind"
	CodeUnknownParameter     = "unknown-parameter"
	CodeDuplicateParameter   = "duplicate-parameter"
	CodeMissingParameter     = "missing-parameter"
	CodeParameterForm        = "parameter-form"
	CodeInvalidParameter     = "invalid-parameter"
	CodeInvalidDuration      = "invalid-duration"
	CodeInvalidEnum          = "invalid-enum-value"
	CodeInvalidTimeZone      = "invalid-time-zone"
	CodeInvalidSchema        = "invalid-schema"
	CodeUnsupportedLanguage  = "unsupported-language"
	CodeInvalidName          = "invalid-name"
	CodeReservedName         = "reserved-variable-name"
	CodeVariableRedefined    = "variable-redefined"
	CodeDuplicateName        = "duplicate-name"
	CodeUnknownAggregator    = "unknown-aggregator"
	CodeIgnoredAggregateBy   = "ignored-aggregate-by"
	CodeUnknownBranch        = "unknown-branch"
	CodeShorterThanPrecision = "window-shorter-than-precision"
	CodeNotMultipleOfPrec    = "window-not-multiple-of-precision"
	CodeNotMultipleOfSlide   = "window-not-multiple-of-slide"
	CodeSlideNotMultiple     = "slide-not-multiple-of-precision"
	CodeOffsetOutOfRange     = "offset-out-of-range"
	CodeSlideOutOfRange      = "slide-out-of-range"
	CodeZoneNeedsWholeDays   = "time-zone-needs-whole-days"
	CodeScopeReportTruncated = "scope-report-truncated"
	CodeReadsClock           = "reads-wall-clock"        // a warning: the expression calls now()
	CodeTooManySlices        = "window-too-many-slices"  // windowLength / precision > engine.MaxSlicesPerWindow
	CodeTooManyWindows       = "window-too-many-windows" // hopping windowLength / slide > engine.MaxWindowsPerEvent
	// CodeTypeTooLarge: a variable's type has more than MaxTypeParts parts.
	CodeTypeTooLarge = "type-too-large"
	// CodeExpressionsTooLarge: the scenario's expressions together pass
	// MaxScenarioExpressionBytes, at the expression that passes it.
	CodeExpressionsTooLarge = "scenario-expressions-too-large"
)

// MaxTypeParts is the most parts (record fields and list elements, nested) the type of a
// variable a node defines may have. Types are shared, not copied, so a record of two fields
// that are both the record before it doubles in size with each node: 21 such nodes (a 4.9 KB
// graph) were 2 million parts, and checking an expression that read them ran the server out
// of memory. Past it the variable is reported (a limit: saving refused) and typed unknown.
const MaxTypeParts = 10_000

// MaxScenarioExpressionBytes bounds what compiling one scenario's expressions costs, all of
// them together, counted in bytes of expression text; those past it are not compiled.
// Compiling and keeping an expression costs about 2 µs and 200 bytes of memory a byte of its
// text: 498 expressions of 19 KB (each within the limits of one expression) took 13 to 20 s
// to validate, and 1.7 GB while deployed. It also costs about 3.6 KB kept whatever its text
// (exprFixedBytes), and about 130 bytes kept (840 made) for each part of the type of each
// variable it names (typePartsPerByte): round 20 validated 490 expressions `#r0`, r0 a record
// of 9,000 fields (29 KB of text), at 1.45 GB, and three at once ended the server. The four
// examples cost 151 to 261 bytes of text.
const MaxScenarioExpressionBytes = 256 << 10

// exprFixedBytes is what each expression counts toward MaxScenarioExpressionBytes besides its
// text; typePartsPerByte the parts (record fields and list elements, nested, and the variable
// itself) of the types of the variables it names that count as one byte.
const (
	exprFixedBytes   = 16
	typePartsPerByte = 2
)

// limitCodes are the problems of the limit class: a graph with one of them is refused when
// stored (not only when deployed), because merely opening, validating or running it would
// cost the server more than it allows, or because its nodes' URLs cannot be reached. Every
// other error (a type error, a missing edge) leaves a draft that can be saved and fixed.
var limitCodes = map[string]bool{
	scenario.CodeTooManyNodes:         true,
	scenario.CodeTooManyScenarioEdges: true,
	scenario.CodeInvalidNodeID:        true,
	CodeTooManySlices:                 true,
	CodeTooManyWindows:                true,
	CodeExpressionsTooLarge:           true,
	CodeTypeTooLarge:                  true,
	expression.CodeTooLong:            true,
	expression.CodeTooDeep:            true,
	expression.CodeTooLarge:           true,
}

// IsLimit reports whether a problem code is of the limit class: too many nodes or edges,
// a node id that is not usable in a URL path segment (or otherwise invalid), a window shape
// past engine.MaxSlicesPerWindow or engine.MaxWindowsPerEvent, an expression past the expression package's
// compile limits (too long, too deep, too large), expressions past MaxScenarioExpressionBytes
// together. The API refuses to store a graph that has such an error (422, the problems
// with node and field); other errors are saved as drafts.
func IsLimit(code string) bool { return limitCodes[code] }

// LimitErrors returns the errors of v that are of the limit class (IsLimit), in v's order.
func (v *Validation) LimitErrors() []scenario.Problem {
	var out []scenario.Problem
	for _, p := range v.Errors {
		if IsLimit(p.Code) {
			out = append(out, p)
		}
	}
	return out
}

// urlSegmentProblem says why a node id cannot travel as one URL path segment (the node's
// URLs, such as /api/scenarios/{name}/sources/{sourceId}/events, hold it escaped with
// url.PathEscape), or "" when it can. The router (chi, through huma) matches escaped segments
// and unescapes them, so spaces, '%', '?', '#', a backslash and any Unicode letter reach the node;
// but clients and proxies remove "." and ".." segments before sending (also written %2E), many
// proxies decode or refuse an escaped '/', and invalid UTF-8 comes back as U+FFFD in every
// JSON answer. Control characters are scenario.Validate's.
func urlSegmentProblem(id string) string {
	switch {
	case id == "." || id == "..":
		return fmt.Sprintf("node id %q cannot be a URL path segment: clients and proxies remove \".\" and \"..\" segments, so the node's URLs cannot be reached; rename the node", id)
	case strings.Contains(id, "/"):
		return fmt.Sprintf("node id %q contains '/', which splits a URL path segment, so the node's URLs cannot be reached; rename the node", id)
	case !utf8.ValidString(id):
		return fmt.Sprintf("node id %q is not valid UTF-8, so it cannot be written back in JSON nor in a URL; rename the node", id)
	}
	return ""
}

// MaxScopeReport bounds the size of Validation.Variables: the sum, over
// the nodes reported, of the size of their scopes, where a variable counts
// 1 plus the number of parts of its type (each record field and list
// element, recursively). Once the next node would pass it, the scopes of
// that node and of the nodes after it (in Validation.Order) are left out,
// with a CodeScopeReportTruncated warning. The checks themselves still see
// every scope.
const MaxScopeReport = 50_000

// MaxScopeReportBytes bounds the bytes of Validation.Variables as the API gives them, as
// MaxScopeReport bounds its entries: for each variable its name, and for each part of its
// type (itself, each record field and list element, recursively) the field name, its text
// (expression.Type.Display, at most MaxDisplayBytes) and reportPartBytes. A source schema
// nested 63 deep with field names of 10 KB (a 640 KB request) was 41.6 MB of report for
// #input alone, and 40 variables after it passed 4 GB of the server's memory.
const MaxScopeReportBytes = 8 << 20

// reportPartBytes is what a part of a type adds to the report beyond its field name and text:
// its kind and the JSON around them.
const reportPartBytes = 64

// The variables the server defines. Users cannot name variables so.
const (
	VarInput  = "input"  // the event, from the source (its JSON Schema's type, or unknown)
	VarMeta   = "meta"   // {eventTime: epoch ms, scenarioName: string}
	VarKey    = "key"    // after an aggregate: the groupBy values, a list
	VarWindow = "window" // after an aggregate that creates events: {start, end}, epoch ms, end exclusive
	VarLate   = "late"   // below an aggregate's Late edge: {windowStart, windowEnd, watermark}, epoch ms
)

// ReservedNames are the names no varName or outputVar may take: the
// server's variables and expr's predicate names.
var ReservedNames = []string{VarInput, VarMeta, VarKey, VarWindow, VarLate, "index", "acc"}

// MetaType is the type of #meta: the event's time (epoch milliseconds) and
// the scenario's name.
var MetaType = expression.RecordOf(
	expression.Field{Name: "eventTime", Type: expression.Integer},
	expression.Field{Name: "scenarioName", Type: expression.String},
)

// WindowType is the type of #window.
var WindowType = expression.RecordOf(
	expression.Field{Name: "start", Type: expression.Integer},
	expression.Field{Name: "end", Type: expression.Integer},
)

// LateType is the type of #late: the first window a late event missed (start inclusive, end
// exclusive) and the watermark that had closed it, all epoch ms.
var LateType = expression.RecordOf(
	expression.Field{Name: "windowStart", Type: expression.Integer},
	expression.Field{Name: "windowEnd", Type: expression.Integer},
	expression.Field{Name: "watermark", Type: expression.Integer},
)

// Validation is the outcome of validating a scenario: its problems and,
// per node id, the variables in scope where the node's expressions are
// evaluated (the scope of its input; for a Join, the variables all its
// branches have; for a Source, #input for its timestamp expression). Nodes
// whose scope cannot be known (no source reaches them, or they lie on a
// cycle) are absent from Variables, and so are those past MaxScopeReport.
type Validation struct {
	scenario.Result
	Variables map[string]expression.TypeEnv `json:"variables"`
	// Plans holds, per node id, what the checks compiled and parsed, for a
	// runtime to build operators from. Only meaningful when there are no
	// errors.
	Plans map[string]*Plan `json:"-"`
	// Order lists the node ids in an order where every node comes after
	// the nodes that feed it (ties in the order of the scenario's nodes).
	Order []string `json:"-"`
	// CompileCost is what compiling its expressions counted toward
	// MaxScenarioExpressionBytes (their text, exprFixedBytes each, the types they name):
	// about CompileCostBytes of memory each while the Programs are kept.
	CompileCost int `json:"-"`
}

// CompileCostBytes is about the memory a unit of Validation.CompileCost keeps (a byte of
// expression text compiled keeps about 200 bytes; a part of a type named, counted half a
// unit, about 130).
const CompileCostBytes = 200

// Plan is one checked node: its compiled expressions by field (the field
// names of its problems: "expression", "groupBy[0]",
// "aggregations[1].aggregateBy", "edges[3].edgeType.condition", ...) and
// its literal parameters as parsed (durations as time.Duration, enums and
// strings as string, booleans, integers as int64), defaults included.
type Plan struct {
	Node         *scenario.Node
	Kind         *Kind
	Programs     map[string]*expression.Program
	Params       map[string]any
	Aggregations []Aggregation
	// Typed is the kind's typed plan (Kind.Typed: the engine's *FilterPlan,
	// *AggregatePlan, ...), what its operator reads; nil for a kind without Typed, whose
	// operator reads Programs and Params.
	Typed any
}

// Aggregation is one parsed entry of an aggregate's "aggregations"; its
// aggregateBy program is Programs["aggregations[i].aggregateBy"].
type Aggregation = aggregation

// ValidateJSON decodes a scenario and validates it. When the JSON cannot be decoded, the
// decoding problems are the errors (see scenario.Decode) and nothing else is checked.
func (r *Registry) ValidateJSON(data []byte) *Validation {
	s, err := scenario.Decode(data)
	if err != nil {
		res := scenario.NewResult()
		var de *scenario.DecodeError
		if errors.As(err, &de) {
			res.Errors = append(res.Errors, de.Problems...)
		} else {
			res.Errors = append(res.Errors, scenario.Problem{Code: scenario.CodeInvalidJSON, Message: err.Error()})
		}
		res.Sort(s)
		res.CutMessages()
		return &Validation{Result: res, Variables: map[string]expression.TypeEnv{}}
	}
	return r.Validate(s)
}

// Validate checks s as a whole: its structure (scenario.Validate), then
// each node in an order where a node comes after those that feed it: its
// kind, its parameters and the variables in scope, every expression
// compiled in its scope with the type the node needs, and variable names
// defined at most once on a path. Problems come in a deterministic order,
// grouped by node in the order of s.Nodes.
//
// Scopes: a Source defines #input and #meta. Filter, Switch and Split pass
// their scope on; Variable adds varName, VariableBuilder adds varName as a
// record, ForEach adds outputVar (one element of the list). A Join passes on
// the variables that every branch has (with the join of their types), plus
// outputVar when it has branch output expressions. Aggregates (docs/semantics.md §4)
// in modes that enrich the event (sliding; tumbling and session with
// emitWhen OnEvent) add outputVar and #key to the scope; in modes that
// create events (tumbling and session OnEnd, hopping, count) the scope
// becomes #meta, outputVar, #key and #window. A sliding aggregate with
// emitWhenEventLeft emits both kinds, so only #meta, outputVar and #key are
// certain after it.
//
// A scenario with more than scenario.MaxNodes nodes or scenario.MaxEdges
// edges gets only that error: no node is checked, no scope worked out.
func (r *Registry) Validate(s *scenario.Scenario) *Validation {
	res := scenario.Validate(s)
	if scenario.TooLarge(s) {
		res.CutMessages()
		return &Validation{Result: res, Variables: map[string]expression.TypeEnv{}, Plans: map[string]*Plan{}}
	}
	for i := range s.Nodes {
		if msg := urlSegmentProblem(s.Nodes[i].ID); msg != "" {
			res.Errors = append(res.Errors, scenario.Problem{NodeID: s.Nodes[i].ID, Field: "id", Code: scenario.CodeInvalidNodeID, Message: msg})
		}
	}
	v := &validation{
		reg:   r,
		s:     s,
		g:     scenario.NewGraph(s),
		res:   &res,
		out:   make([]scope, len(s.Nodes)),
		late:  make([]scope, len(s.Nodes)),
		vars:  map[string]expression.TypeEnv{},
		plans: map[string]*Plan{},
	}
	v.walk()
	if v.skipped > 0 {
		res.Warnings = append(res.Warnings, scenario.Problem{Code: CodeScopeReportTruncated,
			Message: fmt.Sprintf("the variables in scope are not reported for %d of the %d nodes: the report would pass %d entries or %d bytes", v.skipped, len(v.vars)+v.skipped, MaxScopeReport, MaxScopeReportBytes)})
	}
	res.Sort(s)
	res.CutMessages()
	return &Validation{Result: res, Variables: v.vars, Plans: v.plans, Order: v.order, CompileCost: v.exprBytes}
}

// scopeVar is a variable in scope: its type and the node that defined it.
type scopeVar struct {
	t  expression.Type
	by string
}

// scope maps variable names to their types. A nil scope is unknown: its
// expressions are compiled without knowing the variables.
type scope map[string]scopeVar

func (s scope) with(name string, t expression.Type, by string) scope {
	if s == nil {
		return nil
	}
	out := make(scope, len(s)+1)
	for k, v := range s {
		out[k] = v
	}
	out[name] = scopeVar{t: t, by: by}
	return out
}

func (s scope) env() expression.TypeEnv {
	if s == nil {
		return nil
	}
	env := make(expression.TypeEnv, len(s))
	for k, v := range s {
		env[k] = v.t
	}
	return env
}

// intersect returns the variables all scopes have, with joined types.
func intersect(scopes []scope) scope {
	if len(scopes) == 0 {
		return nil
	}
	for _, s := range scopes {
		if s == nil {
			return nil
		}
	}
	out := scope{}
	for name, first := range scopes[0] {
		t, by, everywhere := first.t, first.by, true
		for _, s := range scopes[1:] {
			other, ok := s[name]
			if !ok {
				everywhere = false
				break
			}
			t = expression.Join(t, other.t)
			if other.by != by {
				by = ""
			}
		}
		if everywhere {
			out[name] = scopeVar{t: t, by: by}
		}
	}
	return out
}

type validation struct {
	reg *Registry
	s   *scenario.Scenario
	g   *scenario.Graph
	res *scenario.Result
	out []scope // output scope per node index
	// late is the scope of a time-window aggregate's Late edge, per node index: its input's
	// scope and #late.
	late []scope
	vars map[string]expression.TypeEnv

	plans map[string]*Plan
	order []string

	// reported and reportedBytes are the size of vars so far (see MaxScopeReport and
	// MaxScopeReportBytes); once full, skipped counts the nodes whose scope is left out.
	reported      int
	reportedBytes int
	full          bool
	skipped       int
	// exprBytes is the text of the expressions compiled so far (MaxScenarioExpressionBytes).
	exprBytes int
	// schemaDeadline ends the registry lookups of this validation (SourceSchemaBudget from
	// the first); zero before it.
	schemaDeadline time.Time
}

// report records the scope of a node in vars, within MaxScopeReport.
func (v *validation) report(id string, s scope) {
	if !v.full {
		size, bytes := 0, 0
		for name, sv := range s {
			size += 1 + typeSize(sv.t, MaxScopeReport-v.reported-size)
			if v.reported+size > MaxScopeReport {
				v.full = true
				break
			}
			// within MaxScopeReport parts: so is the walk of reportBytes
			b, _ := reportBytes(sv.t)
			bytes += len(name) + b
			if v.reportedBytes+bytes > MaxScopeReportBytes {
				v.full = true
				break
			}
		}
		if !v.full {
			v.reported += size
			v.reportedBytes += bytes
			v.vars[id] = s.env()
			return
		}
	}
	v.skipped++
}

// reportBytes returns the bytes t takes in the scope report (MaxScopeReportBytes), and the
// length of its text, up to MaxDisplayBytes+3 (of "…"), in one walk of its parts.
func reportBytes(t expression.Type) (report, display int) {
	switch t.Kind {
	case expression.KindList:
		display = len("list()")
		if t.Elem != nil {
			r, d := reportBytes(*t.Elem)
			report += r
			display += d
		} else {
			display += len("unknown")
		}
	case expression.KindRecord:
		display = len("record{}") + len(", ...")
		for _, f := range t.Fields {
			r, d := reportBytes(f.Type)
			report += r + len(f.Name)
			display += len(f.Name) + len(": , ") + d
		}
	default:
		display = len(t.Kind.String())
	}
	display = min(display+len("?"), expression.MaxDisplayBytes+len("…"))
	return report + display + reportPartBytes, display
}

// boundType returns t, or Unknown with a CodeTypeTooLarge problem when t has more than
// MaxTypeParts parts.
func (c *nodeCheck) boundType(name string, t expression.Type) expression.Type {
	if typeSize(t, MaxTypeParts) <= MaxTypeParts {
		return t
	}
	c.errorf("", CodeTypeTooLarge, "the type of #%s has more than %d parts (record fields and list elements, nested): build it from fewer or smaller records", name, MaxTypeParts)
	return expression.Unknown
}

// TypeFits says whether t has at most MaxTypeParts parts (record fields and list elements,
// nested): a variable's type past it is a CodeTypeTooLarge error.
func TypeFits(t expression.Type) bool { return typeSize(t, MaxTypeParts) <= MaxTypeParts }

// typeSize counts the parts of t (record fields and list elements,
// recursively), stopping once past limit.
func typeSize(t expression.Type, limit int) int {
	if limit < 0 {
		return 0 // the caller is already past its limit
	}
	n := 0
	if t.Elem != nil {
		n += 1 + typeSize(*t.Elem, limit-1)
	}
	for _, f := range t.Fields {
		if n > limit {
			return n
		}
		n += 1 + typeSize(f.Type, limit-n-1)
	}
	return n
}

// walk checks every node: first those reachable in topological order
// (Kahn's algorithm, ties in node order), then the rest (on cycles) with
// unknown scope.
func (v *validation) walk() {
	n := len(v.s.Nodes)
	indegree := make([]int, n)
	for i := range v.s.Nodes {
		if v.s.Nodes[i].Type == scenario.TypeSource {
			continue // edges into sources are errors, and ignored here
		}
		indegree[i] = len(v.g.In[i])
	}
	done := make([]bool, n)
	var queue []int
	for i := range indegree {
		if indegree[i] == 0 {
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		v.checkNode(i, v.inputScope(i))
		v.order = append(v.order, v.s.Nodes[i].ID)
		done[i] = true
		for _, e := range v.g.Out[i] {
			to := v.g.ByID[v.s.Edges[e].To]
			if v.s.Nodes[to].Type == scenario.TypeSource {
				continue
			}
			indegree[to]--
			if indegree[to] == 0 {
				queue = append(queue, to)
			}
		}
	}
	for i := range done {
		if !done[i] {
			v.checkNode(i, nil)
		}
	}
}

// inputScope works out the scope a node's input has.
func (v *validation) inputScope(i int) scope {
	node := &v.s.Nodes[i]
	if node.Type == scenario.TypeSource {
		return scope{}
	}
	in := v.g.In[i]
	if len(in) == 0 {
		return nil
	}
	if node.Type == scenario.TypeJoin {
		scopes := make([]scope, len(in))
		for k, e := range in {
			scopes[k] = v.edgeScope(e)
		}
		return intersect(scopes)
	}
	return v.edgeScope(in[0])
}

// edgeScope is the scope edge e carries: its node's output scope, or for a Late edge the
// scope of the aggregate's input with #late.
func (v *validation) edgeScope(e int) scope {
	edge := &v.s.Edges[e]
	from := v.g.ByID[edge.From]
	if edge.EdgeType != nil && edge.EdgeType.Type == scenario.EdgeLate {
		return v.late[from]
	}
	return v.out[from]
}

// nodeCheck is the state of checking one node.
type nodeCheck struct {
	v      *validation
	i      int
	n      *scenario.Node
	k      *Kind
	in     scope
	out    scope
	params map[string]*scenario.Parameter
	// visible is the scope recorded in Validation.Variables; in by default.
	visible scope
	// firstProblem is the number of errors before this node's check.
	firstProblem int
	plan         *Plan
}

// record keeps a parsed literal parameter in the node's plan.
func (c *nodeCheck) record(name string, v any) { c.plan.Params[name] = v }

func (v *validation) checkNode(i int, in scope) {
	node := &v.s.Nodes[i]
	c := &nodeCheck{v: v, i: i, n: node, in: in, visible: in, firstProblem: len(v.res.Errors),
		plan: &Plan{Node: node, Programs: map[string]*expression.Program{}, Params: map[string]any{}}}
	if node.ID == "" || v.g.ByID[node.ID] != i {
		// A missing or duplicate id, reported by scenario.Validate: the
		// node's problems could not be told apart from another's.
		return
	}
	k, ok := v.reg.KindOf(node)
	if !ok {
		c.unknownKind()
		return
	}
	c.k = k
	c.plan.Kind = k
	v.plans[node.ID] = c.plan
	c.collectParameters()
	c.out = c.in
	k.Validate(&Check{c: c})
	if k.Typed != nil {
		c.plan.Typed = k.Typed(&Check{c: c})
	}
	v.out[i] = c.out
	c.checkLateEdges()
	if c.visible != nil && node.ID != "" {
		v.report(node.ID, c.visible)
	}
}

func (c *nodeCheck) unknownKind() {
	n := c.n
	if !n.Type.Known() {
		if n.Type == "" {
			c.errorf("type", CodeUnknownKind, "the node has no type")
		} else {
			c.errorf("type", CodeUnknownKind, "unknown node type %q", n.Type)
		}
		return
	}
	subs := strings.Join(c.v.reg.subtypes(n.Type), ", ")
	switch n.Type {
	case scenario.TypeSource, scenario.TypeSink:
		if n.Ref == nil || n.Ref.Typ == "" {
			c.errorf("ref.typ", CodeUnknownKind, "a %s needs \"ref\": {\"typ\": ...} (one of %s)", n.Type, subs)
			return
		}
		c.errorf("ref.typ", CodeUnknownKind, "unknown %s kind %q (one of %s)", strings.ToLower(string(n.Type)), n.Ref.Typ, subs)
	default:
		if n.NodeType == "" {
			c.errorf("nodeType", CodeUnknownKind, "a %s needs \"nodeType\" (one of %s)", n.Type, subs)
			return
		}
		c.errorf("nodeType", CodeUnknownKind, "unknown %s nodeType %q (one of %s)", n.Type, n.NodeType, subs)
	}
}

func (c *nodeCheck) errorf(field, code, format string, args ...any) {
	c.v.res.Errors = append(c.v.res.Errors, scenario.Problem{NodeID: c.n.ID, Field: field, Code: code, Message: fmt.Sprintf(format, args...)})
}

func (c *nodeCheck) warnf(field, code, format string, args ...any) {
	c.v.res.Warnings = append(c.v.res.Warnings, scenario.Problem{NodeID: c.n.ID, Field: field, Code: code, Message: fmt.Sprintf(format, args...)})
}

// compile compiles e in env with the wanted result type and reports its
// problems under field. It returns nil on problems.
func (c *nodeCheck) compile(field string, e *scenario.Expression, env expression.TypeEnv, want expression.Type) *expression.Program {
	if e == nil {
		return nil
	}
	if e.Language != scenario.LanguageExpr {
		c.errorf(field, CodeUnsupportedLanguage, "expression language %q is not supported; use %q", e.Language, scenario.LanguageExpr)
		return nil
	}
	// A text past one expression's length is refused by Compile before any work, with its
	// own problem; the others count toward the scenario's: their text, exprFixedBytes, and
	// the types of the variables they name (MaxScenarioExpressionBytes).
	if n := len(e.Expression); n <= expression.DefaultMaxLength {
		if c.v.exprBytes <= MaxScenarioExpressionBytes {
			parts := 0
			for _, t := range expression.NamedEnv(e.Expression, env) {
				parts += 1 + typeSize(t, MaxTypeParts)
			}
			n += exprFixedBytes + parts/typePartsPerByte
		}
		c.v.exprBytes += n
		if c.v.exprBytes > MaxScenarioExpressionBytes {
			if c.v.exprBytes-n <= MaxScenarioExpressionBytes { // the first past it
				c.errorf(field, CodeExpressionsTooLarge, "compiling the scenario's expressions costs more than %d bytes of text together here (%d with this one, counting %d for each expression and a byte for each %d parts of the types of the variables it names); the expressions after it are not checked: make them shorter or fewer (a variable computed once), name smaller records (a variable of the fields used), or split the scenario",
					MaxScenarioExpressionBytes, c.v.exprBytes, exprFixedBytes, typePartsPerByte)
			}
			return nil
		}
	}
	prog, problems := expression.Compile(e.Expression, env, want)
	for _, p := range problems {
		p.NodeID, p.Field = c.n.ID, field
		c.v.res.Errors = append(c.v.res.Errors, p)
	}
	if prog != nil {
		c.plan.Programs[field] = prog
		if prog.ReadsClock() {
			c.warnf(field, CodeReadsClock, "now() reads the wall clock: test runs and replays of the same records give other results each time (#meta.eventTime is the event's time)")
		}
	}
	return prog
}

// resultProblem reports an expression whose result type the node cannot
// use, at the start of its text.
func (c *nodeCheck) resultProblem(field string, e *scenario.Expression, format string, args ...any) {
	line, col := expression.StartOf(e.Expression)
	c.v.res.Errors = append(c.v.res.Errors, scenario.Problem{
		NodeID: c.n.ID, Field: field, Code: expression.CodeResultType,
		Message: fmt.Sprintf(format, args...), Line: line, Column: col,
	})
}

// defineName checks a name the node defines (varName, outputVar) and
// returns it when it can be used. A name already in scope is reported
// with the node that defined it, and still returned.
func (c *nodeCheck) defineName(field, name string) (string, bool) {
	if name == "" {
		c.errorf(field, CodeMissingParameter, "%s is required: the name of the variable this node defines", field)
		return "", false
	}
	for _, r := range ReservedNames {
		if name == r {
			c.errorf(field, CodeReservedName, "#%s is reserved; choose another name", name)
			return "", false
		}
	}
	if err := expression.CheckName(name); err != nil {
		c.errorf(field, CodeInvalidName, "%v", err)
		return "", false
	}
	if prev, ok := c.in[name]; ok {
		by := ""
		if prev.by != "" {
			by = fmt.Sprintf(" by node %q", prev.by)
		}
		c.errorf(field, CodeVariableRedefined, "variable #%s is already defined on this path%s", name, by)
	}
	return name, true
}

// keep returns the entries of s named in names (those present).
func keep(s scope, names ...string) scope {
	if s == nil {
		return nil
	}
	out := scope{}
	for _, n := range names {
		if v, ok := s[n]; ok {
			out[n] = v
		}
	}
	return out
}

// checkLateEdges gives a time-window aggregate's Late edge its scope (the node's input with
// #late) and reports a Late edge out of a custom node kind that has no such output.
func (c *nodeCheck) checkLateEdges() {
	if c.n.Type != scenario.TypeCustomNode {
		return
	}
	late := hasLateOutput(c.k)
	if late && c.in != nil {
		c.v.late[c.i] = c.in.with(VarLate, LateType, c.n.ID)
	}
	if late {
		return
	}
	for _, e := range c.v.g.Out[c.i] {
		if et := c.v.s.Edges[e].EdgeType; et != nil && et.Type == scenario.EdgeLate {
			c.errorf(fmt.Sprintf("edges[%d].edgeType", e), scenario.CodeUnexpectedEdgeType,
				"%s has no Late output: only the time-window aggregates (sliding, tumbling, hopping, session) have late events", c.k.Subtype)
		}
	}
}
