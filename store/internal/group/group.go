// Package group commits concurrent writes together: the calls that arrive while a
// transaction commits wait, and the next transaction takes them all (group commit), so that
// many writers share one fsync.
package group

import (
	"fmt"
	"sync"
)

// Call is one caller's request in a group, and its answer.
type Call[Req, Res any] struct {
	Req Req
	Res Res
	Err error
}

// Committer runs calls of Do in groups: one caller at a time (the leader) runs Commit on
// every call waiting, up to Max, and again until none waits; the others wait for their
// answer. Commit sets each call's Res or Err (an Err of its own, say a refusal, leaves the
// other calls of the group alone); when it returns an error (or panics), every call of the
// group that has no Err gets that one.
type Committer[Req, Res any] struct {
	Commit func(calls []*Call[Req, Res]) error
	// Max is the most calls of one group; 0 means 64.
	Max int

	mu      sync.Mutex
	pending []*waiting[Req, Res]
	busy    bool
}

type waiting[Req, Res any] struct {
	call Call[Req, Res]
	done chan struct{}
}

// Do runs req in the next group and returns its answer. It waits for the group's commit
// whatever happens to the caller meanwhile: the answer says whether req was written.
func (c *Committer[Req, Res]) Do(req Req) (Res, error) {
	w := &waiting[Req, Res]{call: Call[Req, Res]{Req: req}, done: make(chan struct{})}
	c.mu.Lock()
	c.pending = append(c.pending, w)
	if c.busy {
		c.mu.Unlock()
		<-w.done
		return w.call.Res, w.call.Err
	}
	c.busy = true
	max := c.Max
	if max <= 0 {
		max = 64
	}
	for len(c.pending) > 0 {
		n := min(len(c.pending), max)
		batch := c.pending[:n:n]
		c.pending = c.pending[n:]
		if len(c.pending) == 0 {
			c.pending = nil
		}
		c.mu.Unlock()
		c.run(batch)
		c.mu.Lock()
	}
	c.busy = false
	c.mu.Unlock()
	<-w.done
	return w.call.Res, w.call.Err
}

func (c *Committer[Req, Res]) run(batch []*waiting[Req, Res]) {
	calls := make([]*Call[Req, Res], len(batch))
	for i, w := range batch {
		calls[i] = &w.call
	}
	var err error
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("group commit panicked: %v", p)
		}
		if err != nil {
			var zero Res
			for _, call := range calls {
				if call.Err == nil {
					call.Res, call.Err = zero, err
				}
			}
		}
		for _, w := range batch {
			close(w.done)
		}
	}()
	err = c.Commit(calls)
}
