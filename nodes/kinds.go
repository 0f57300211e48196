package nodes

import (
	stdslices "slices"

	"github.com/scenario-server/scenario-server/scenario"
)

// The built-in node kinds, one file each (kind_*.go; the aggregates in aggregate.go), in
// palette order within their groups.

func builtinKinds() []*Kind {
	kinds := []*Kind{
		fileSourceKind(), httpSourceKind(), kafkaSourceKind(), filterKind(), variableKind(),
		recordVariableKind(), switchKind(), splitKind(), unionKind(), forEachKind(),
		slidingKind(), tumblingKind(), hoppingKind(), sessionKind(), countKind(),
		collectSinkKind(), fileSinkKind(), kafkaSinkKind(), stdoutSinkKind(), deadEndKind(),
	}
	for _, k := range kinds {
		k.Edges = edgeRulesOf(k)
	}
	return kinds
}

// edgeRulesOf is the edges a kind takes and gives: its node type's, without a Late output
// for the custom nodes that have no late events.
func edgeRulesOf(k *Kind) scenario.EdgeRules {
	r := scenario.RulesFor(k.NodeType)
	if k.NodeType == scenario.TypeCustomNode && !hasLateOutput(k.Subtype) {
		r.Outputs = stdslices.DeleteFunc(stdslices.Clone(r.Outputs), func(r scenario.OutputRule) bool {
			return r.EdgeType == scenario.EdgeLate
		})
	}
	return r
}

func outputVarSpec(def, desc string) ParamSpec {
	return ParamSpec{Name: "outputVar", In: InNode, Editor: EditorVariableName, Type: "string", Required: true, Default: def, Label: "Output variable", Description: desc}
}
