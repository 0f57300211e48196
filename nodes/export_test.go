package nodes

// What the external tests (package nodes_test, which may import the engine and so the
// built-in kinds) read of this package's internals.

var (
	GroupOrder = groupOrder
	TypeSize   = typeSize
)

// RegistryAggregatorNames is the names of r's aggregators, in registration order.
func RegistryAggregatorNames(r *Registry) []string { return aggregatorNames(r) }
