package engine

import (
	"github.com/scenario-server/scenario-server/nodes"
)

// The built-in node kinds, one file each (kind_*.go: its spec, its checks through
// nodes.Check, its typed plan and its operator; the aggregates share kind_aggregate.go).

// builtinKinds are the built-in node kinds, in palette order within their groups.
func builtinKinds() []*nodes.Kind {
	return []*nodes.Kind{
		fileSourceKind(), httpSourceKind(), kafkaSourceKind(), filterKind(), variableKind(),
		recordVariableKind(), switchKind(), splitKind(), unionKind(), forEachKind(),
		slidingKind(), tumblingKind(), hoppingKind(), sessionKind(), countKind(),
		collectSinkKind(), fileSinkKind(), kafkaSinkKind(), stdoutSinkKind(), deadEndKind(),
	}
}

// Builtin returns a new registry of the built-in node kinds and aggregators, to which more
// kinds may be registered (Default's kinds, in a registry of its own).
func Builtin() *nodes.Registry {
	r := nodes.NewRegistry()
	for _, k := range builtinKinds() {
		if err := r.Register(k); err != nil {
			panic(err) // a programming error in this package, caught by its tests
		}
	}
	for _, a := range nodes.Aggregators() {
		if err := r.RegisterAggregator(a); err != nil {
			panic(err)
		}
	}
	return r
}

var defaultRegistry = Builtin()

// Default returns the registry of the built-in node kinds and aggregators, shared: it must
// not be modified (Builtin makes one that may be).
func Default() *nodes.Registry { return defaultRegistry }

// ParamName is the name the plan uses for parameter name of the built-in kind kindID
// ("topic" for "Topic" of "Source/kafka"); name itself when it is no alias.
func ParamName(kindID, name string) string { return defaultRegistry.ParamName(kindID, name) }

func outputVarSpec(def, desc string) nodes.ParamSpec {
	return nodes.ParamSpec{Name: "outputVar", In: nodes.InNode, Editor: nodes.EditorVariableName, Type: "string", Required: true, Default: def, Label: "Output variable", Description: desc}
}
