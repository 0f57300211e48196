package api_test

import (
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scenario-server/scenario-server/api"
)

// blockingCollector holds every Collect until released, telling entered each time.
type blockingCollector struct {
	entered chan struct{}
	release chan struct{}
	desc    *prometheus.Desc
}

func (b *blockingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- b.desc }
func (b *blockingCollector) Collect(ch chan<- prometheus.Metric) {
	b.entered <- struct{}{}
	<-b.release
	ch <- prometheus.MustNewConstMetric(b.desc, prometheus.GaugeValue, 1)
}

// from is an HTTP client whose connections come from address ip (127.0.0.x: the server on
// 127.0.0.1 sees another client address each).
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

// TestMetricsScrapesBounded (round 14): with many deployments one scrape was 264 MB and 12 at
// once passed 4 GB. While MetricsScrapesInFlight scrapes are being gathered another is
// answered 503 at once; once they end, a scrape is served again. And one client has one
// scrape at once (round 26: a client scraping twice at once in a loop kept the monitoring's
// out, 14 of 15 refused): its second is answered 429 at once.
func TestMetricsScrapesBounded(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	slow := &blockingCollector{entered: make(chan struct{}, 8), release: make(chan struct{}),
		desc: prometheus.NewDesc("test_slow", "held until released", nil, nil)}
	reg.MustRegister(slow)
	c := newClient(t, sqliteStore(t), func(cfg *api.Config) { cfg.Metrics = reg })
	get := func(cl *http.Client) (int, error) {
		resp, err := cl.Get(c.base + "/metrics")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	var wg sync.WaitGroup
	statuses := make([]int, api.MetricsScrapesInFlight)
	for i := range api.MetricsScrapesInFlight {
		cl := from("127.0.0." + string(rune('1'+i)))
		wg.Go(func() {
			s, err := get(cl)
			if err != nil {
				t.Error(err)
			}
			statuses[i] = s
		})
		<-slow.entered // this scrape is being gathered
		if i == 0 {
			// The same client's second scrape, while its first is held.
			if s, err := get(from("127.0.0.1")); err != nil || s != http.StatusTooManyRequests {
				t.Errorf("a client's second scrape at once: %d %v, want 429", s, err)
			}
		}
	}
	// Without the bound this scrape would wait with the others: the client gives up first.
	if s, err := get(from("127.0.0.9")); err != nil || s != http.StatusServiceUnavailable {
		t.Errorf("a scrape while %d are gathered: %d %v, want 503 at once", api.MetricsScrapesInFlight, s, err)
	}
	close(slow.release)
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusOK {
			t.Errorf("held scrape %d: %d, want 200", i, s)
		}
	}
	if r := c.send(request{Method: "GET", Path: "/metrics"}); r.Status != http.StatusOK {
		t.Errorf("a scrape after them: %d", r.Status)
	}
}
