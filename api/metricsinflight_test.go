package api_test

import (
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

// TestMetricsScrapesBounded (round 14): with many deployments one scrape was 264 MB and 12 at
// once passed 4 GB. While MetricsScrapesInFlight scrapes are being gathered another is
// answered 503 at once; once they end, a scrape is served again.
func TestMetricsScrapesBounded(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	slow := &blockingCollector{entered: make(chan struct{}, 8), release: make(chan struct{}),
		desc: prometheus.NewDesc("test_slow", "held until released", nil, nil)}
	reg.MustRegister(slow)
	c := newClient(t, sqliteStore(t), func(cfg *api.Config) { cfg.Metrics = reg })
	var wg sync.WaitGroup
	statuses := make([]int, api.MetricsScrapesInFlight)
	for i := range api.MetricsScrapesInFlight {
		wg.Go(func() {
			resp, err := http.Get(c.base + "/metrics")
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		})
		<-slow.entered // this scrape is being gathered
	}
	// Without the bound this scrape would wait with the others: the client gives up first.
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(c.base + "/metrics")
	if err != nil {
		t.Errorf("a scrape while %d are gathered: %v, want 503 at once", api.MetricsScrapesInFlight, err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("a scrape while %d are gathered: %d, want 503", api.MetricsScrapesInFlight, resp.StatusCode)
		}
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
