// Package nodes is the framework of the kinds of node a scenario is made of: Kind (a
// component: its spec, its checks, its typed plan, its operator), Registry, ParamSpec, the
// validation of a whole scenario, Plan, and Check, through which a kind checks its nodes. It
// holds no kind itself: the built-in ones (sources file, http and kafka, Filter, Variable,
// VariableBuilder (record variable), Switch (choice), Split, Join "union", CustomNode
// "for-each", the aggregates of docs/semantics.md §4 (aggregate-sliding, -tumbling, -hopping,
// -session, -count) and the sinks collect, file, kafka, stdout and dead-end) live in the
// engine, one file each (engine/kind_*.go), and engine.Builtin and engine.Default are
// registries of them. A kind registered from elsewhere is written against the same API
// (Kind.Validate, Kind.Typed, Kind.NewOperator; see component.go and docs/architecture.md).
//
// Each Kind describes itself (its palette group, label, and the name, form,
// editor, type, default and description of each parameter) so that the
// designer renders its palette and forms from Registry.Kinds and
// Registry.Aggregators, never from hand-written lists. Each kind also checks
// its nodes, says how they change the variables in scope, and leaves a typed
// plan (Plan.Typed) for the runtime. The aggregators (Aggregators) are the aggregate
// package's catalogue.
//
// Registry.Validate checks a whole scenario: the structure (scenario.Validate), then
// every node in graph order with the variables in scope, every expression
// compiled in its scope with the type its node needs, every parameter
// against its kind (durations, choices, time zones, window lengths against
// precision and slide), and no variable defined twice on a path. The result
// lists the problems and, per node, the variables in scope with their types.
//
// # Scope rules
//
// A source defines #input (typed by its JSON Schema, or unknown) and #meta
// ({eventTime, scenarioName}). Variable and VariableBuilder add their
// varName, ForEach its outputVar. A union passes on the variables that all
// its branches have, with their types joined (a variable of different types
// in different branches becomes unknown), plus its outputVar. Aggregates
// that enrich the incoming event (sliding; tumbling and session with
// emitWhen OnEvent) add outputVar and #key; those that create events
// (tumbling and session OnEnd, hopping, count) leave #meta, outputVar, #key
// and #window. #key is the list of groupBy values; #window is {start, end}
// in epoch milliseconds, end exclusive.
//
// # Parameters
//
// Durations are strings: "60s", "1h30m", "1d" or ISO 8601 "PT1H"
// (ParseDuration), and a whole number of milliseconds ("1500us" and "1ns"
// are refused: the runtime counts time in ms). Precision (the slice width,
// docs/semantics.md §3) defaults to the slide for a hopping window (a 60s window
// sliding by 10s is kept in 10s slices), the window length for a tumbling
// one, and otherwise to 60s, or 1s when the sliding window (or session
// timeout) is not a whole number of minutes. The plan of a sliding, hopping
// or session node records the precision in effect, given or default, as
// Params["precision"]. A window must be a whole multiple of its precision
// and not shorter than it, and so must a hopping slide; a hopping window a
// whole multiple of its slide; a tumbling window's offset shorter than the
// window. Time zones are IANA names, read from the zone
// database built into the binary; a tumbling window with a timeZone must
// be a whole number of days long.
//
// # Limits
//
// A scenario with more than scenario.MaxNodes nodes or scenario.MaxEdges
// edges gets that error alone: no node is checked. The variables in scope
// are reported for nodes in graph order until MaxScopeReport is reached;
// the nodes after that have none, and a scope-report-truncated warning
// says so. A sliding or hopping window has at most engine.MaxSlicesPerWindow
// slices (windowLength / precision; window-too-many-slices) and a hopping
// window counts an event in at most engine.MaxWindowsPerEvent windows
// (windowLength / slide; window-too-many-windows). A node id must survive
// a URL path segment: not "." nor "..", no '/', valid UTF-8
// (invalid-node-id). These and the expression package's compile limits
// form the limit class (IsLimit): the API refuses to store a graph with
// such an error, while other errors are saved as drafts.
package nodes
