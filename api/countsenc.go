package api

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/scenario-server/scenario-server/deploy"
)

// countsEncoder encodes a scenario's live counts once per publication for all the counts
// streams of that scenario, which share the bytes. Each stream encoded them for itself before:
// 400 streams on a 500-node scenario re-encoded its counts up to 4 times a second each (13.4
// CPU-s in 10 s). It keeps the encoding of the scenarios that have counts streams open only.
type countsEncoder struct {
	mu sync.Mutex
	by map[string]*scenarioCounts
}

// scenarioCounts is the encoding of one scenario's latest live counts, as its streams send
// them.
type scenarioCounts struct {
	streams int // open on the scenario

	mu sync.Mutex // held while encoding, so that one stream encodes and the others wait
	// from is the publication encoded (nil: the scenario was not running).
	from *deploy.Live
	data []byte // the LiveCounts, as a counts event's data; never changed once set
	same []byte // the same without updatedAt (which every publication changes)
}

// open counts a stream opened on scenario name, and returns the scenario's encoding.
func (c *countsEncoder) open(name string) *scenarioCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = map[string]*scenarioCounts{}
	}
	sc := c.by[name]
	if sc == nil {
		sc = &scenarioCounts{}
		c.by[name] = sc
	}
	sc.streams++
	return sc
}

// close counts a stream of scenario name closed; the last one drops its encoding.
func (c *countsEncoder) close(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sc := c.by[name]; sc != nil {
		if sc.streams--; sc.streams <= 0 {
			delete(c.by, name)
		}
	}
}

// encodedCounts returns scenario name's live counts encoded as a counts event's data, and
// without updatedAt; both are shared by the streams, which must not change them. They are
// encoded again only when the runtime has published new counts since.
func (h *handlers) encodedCounts(sc *scenarioCounts, name string) (data, same []byte) {
	var l *deploy.Live
	if h.runtime != nil {
		l = h.runtime.Published(name)
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.data != nil && sc.from == l {
		return sc.data, sc.same
	}
	var counts LiveCounts
	if l != nil {
		counts = liveOut(name, *l, true)
	} else {
		// Not run here: paused by a --no-resume start, or run by another server, as GET
		// .../counts says (new-user round 136: the stream left paused out). Read once for
		// the encoding kept until the deployment runs here.
		counts = liveOut(name, deploy.Live{}, false)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		counts.Paused, counts.RunningOn = h.notRunningHere(ctx, name)
		cancel()
	}
	data, _ = json.Marshal(counts)
	counts.UpdatedAt = nil
	same, _ = json.Marshal(counts)
	sc.from, sc.data, sc.same = l, data, same
	return data, same
}
