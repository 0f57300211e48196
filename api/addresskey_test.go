package api

import (
	"context"
	"testing"
)

// The per-client limits count an IPv6 client by its /64 (a host that has one can use its 2^64
// addresses, each a client of its own before: a quarter of the results streams' budget, 32
// streams, its own token bucket of event batches), and an IPv4 one by its address.
func TestRateKeyGroupsIPv6By64(t *testing.T) {
	key := func(addr string) string {
		return rateKeyOf(context.WithValue(context.Background(), clientAddrKey{}, addr))
	}
	for _, c := range []struct{ a, b string }{
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff"},
		{"2001:db8:1:2::1", "2001:db8:1:2:abcd::9"},
		{"fe80::1%eth0", "fe80::2"},
	} {
		if ka, kb := key(c.a), key(c.b); ka != kb {
			t.Errorf("%s and %s count as %q and %q, want one client", c.a, c.b, ka, kb)
		}
	}
	for _, c := range []struct{ a, b string }{
		{"2001:db8:1:2::1", "2001:db8:1:3::1"},
		{"192.0.2.1", "192.0.2.2"},
		{"::ffff:192.0.2.1", "::ffff:192.0.2.2"},
		{"192.0.2.1", "2001:db8::1"},
	} {
		if ka, kb := key(c.a), key(c.b); ka == kb {
			t.Errorf("%s and %s both count as %q, want two clients", c.a, c.b, ka)
		}
	}
	if k := key("192.0.2.7"); k != "addr:192.0.2.7" {
		t.Errorf("an IPv4 client counts as %q", k)
	}
	if k := key("2001:db8:1:2:3:4:5:6"); k != "addr:2001:db8:1:2::/64" {
		t.Errorf("an IPv6 client counts as %q", k)
	}
}
