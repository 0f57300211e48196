package deploy

import (
	"github.com/scenario-server/scenario-server/connector"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/store"
)

// A source of a deployment is read either from the store's event log (an HTTP source: its
// events come through Ingest) or through a connector.Input (Kafka, file, or a connector from
// outside), whose positions go into the deployment's checkpoints (see package connector).

// sourceIdentities maps each source node of a scenario graph to what its positions are
// positions in: its kind and, for sources whose connector names an identity (Kafka: the
// topic, file: the path), its value. A graph that does not decode has none.
func (r *Runtime) sourceIdentities(graph []byte) map[string]string {
	sc, err := scenario.Decode(graph)
	if err != nil {
		return nil
	}
	ids := map[string]string{}
	for i := range sc.Nodes {
		n := &sc.Nodes[i]
		if n.Type != scenario.TypeSource {
			continue
		}
		id := n.Subtype()
		kind := string(n.Type) + "/" + id
		if conn, ok := r.connectors.Source(kind); ok && conn.Identity != "" && n.Ref != nil {
			if v, ok := r.refParam(kind, n, conn.Identity); ok {
				if conn.IdentityValue != nil {
					v = conn.IdentityValue(v)
				}
				id += "\x00" + v
			}
		}
		ids[n.ID] = id
	}
	return ids
}

// keepSameInputs keeps the positions, inherited from a deployment of another version, of the
// sources that read the same input in both versions: a source whose kind, topic or path
// changed starts afresh rather than at offsets that belong to another input.
func keepSameInputs(positions []store.SourcePosition, before, now map[string]string) []store.SourcePosition {
	var out []store.SourcePosition
	for _, p := range positions {
		if b, ok := before[p.Source]; ok && b == now[p.Source] {
			out = append(out, p)
		}
	}
	return out
}

// inputPositions are an Input's positions as the store keeps them, for source id.
func inputPositions(id string, in connector.Input) []store.SourcePosition {
	ps := in.Positions()
	out := make([]store.SourcePosition, len(ps))
	for i, p := range ps {
		out[i] = store.SourcePosition{Source: id, Partition: p.Partition, Offset: p.Offset}
	}
	return out
}
