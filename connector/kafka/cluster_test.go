package kafka

import (
	"fmt"
	"strings"
	"testing"
)

// Broker addresses are checked when the connection is made: a bad one is a configuration
// error, not a source that fails later (from the adversarial review).
func TestBrokersAreChecked(t *testing.T) {
	for _, b := range []string{"localhost:9092", "127.0.0.1:1", "[::1]:65535", "kafka-0.kafka:9093"} {
		if _, err := NewConn([]string{b}, Cluster{}, nil); err != nil {
			t.Errorf("%q: %v", b, err)
		}
	}
	for _, b := range []string{"localhost", "localhost:notaport", ":9092", "host:0", "host:65536", ""} {
		if _, err := NewConn([]string{"ok:1", b}, Cluster{}, nil); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", b)) {
			t.Errorf("%q: error %v, want one naming it", b, err)
		}
	}
	c, err := NewConn(nil, Cluster{}, nil)
	if err != nil || c.Configured() {
		t.Errorf("no brokers: %v, configured %v", err, c != nil && c.Configured())
	}
}
