package kafka

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// Transactional ids, worked out by hand: names without '.' or '%' are as before; a '.' in a
// name is %2E and a '%' %25, so the sinks of round 17 (scenario a.b's sink c, scenario a's
// sink b.c) no longer share an id.
func TestTransactionalID(t *testing.T) {
	for _, tc := range []struct {
		client, scenario, sink string
		slot                   int
		want                   string
	}{
		{"scenario-server", "payments", "out", 1, "scenario-server.payments.out.1"},
		{"scenario-server", "a.b", "c", 0, "scenario-server.a%2Eb.c.0"},
		{"scenario-server", "a", "b.c", 0, "scenario-server.a.b%2Ec.0"},
		{"s", "a%2Eb", "c", 1, "s.a%252Eb.c.1"},
		{"edge.one", "x", "y", 0, "edge%2Eone.x.y.0"},
	} {
		if got := TransactionalID(tc.client, tc.scenario, tc.sink, tc.slot); got != tc.want {
			t.Errorf("TransactionalID(%q, %q, %q, %d) = %q, want %q", tc.client, tc.scenario, tc.sink, tc.slot, got, tc.want)
		}
	}
}

// Two different (client, scenario, sink) never share a transactional id. The second is
// drawn the way ids met before: the first's names joined with '.' and split again at other
// dots (so the old CLIENT_ID.SCENARIO.SINK text is the same).
func TestTransactionalIDsDistinct(t *testing.T) {
	name := rapid.StringOfN(rapid.SampledFrom([]rune{'a', '.', '%', '2', 'E'}), 0, 6, -1)
	rapid.Check(t, func(t *rapid.T) {
		a := [3]string{name.Draw(t, "client"), name.Draw(t, "scenario"), name.Draw(t, "sink")}
		joined := strings.Join(a[:], ".")
		var dots []int
		for i, c := range joined {
			if c == '.' {
				dots = append(dots, i)
			}
		}
		i := rapid.IntRange(0, len(dots)-2).Draw(t, "first dot")
		j := rapid.IntRange(i+1, len(dots)-1).Draw(t, "second dot")
		b := [3]string{joined[:dots[i]], joined[dots[i]+1 : dots[j]], joined[dots[j]+1:]}
		if a != b && TransactionalID(a[0], a[1], a[2], 0) == TransactionalID(b[0], b[1], b[2], 0) {
			t.Fatalf("%q and %q share %q", a, b, TransactionalID(a[0], a[1], a[2], 0))
		}
	})
}
