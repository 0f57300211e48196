package group

import (
	"errors"
	"sync"
	"testing"
)

// The calls that arrive while a group commits form the next group, and each gets its own
// answer: its Res, its own refusal, or the group's error.
func TestGroupsFormWhileCommitting(t *testing.T) {
	release := make(chan struct{})
	var sizes []int
	var c Committer[int, int]
	c.Commit = func(calls []*Call[int, int]) error {
		sizes = append(sizes, len(calls))
		if len(sizes) == 1 {
			<-release // the first group commits slowly
		}
		for _, call := range calls {
			switch {
			case call.Req == 13:
				call.Err = errors.New("refused 13")
			default:
				call.Res = call.Req * 2
			}
		}
		return nil
	}
	first := make(chan int)
	go func() {
		r, _ := c.Do(1)
		first <- r
	}()
	waitPending := func(n int) {
		for {
			c.mu.Lock()
			busy, pending := c.busy, len(c.pending)
			c.mu.Unlock()
			if busy && pending == n {
				return
			}
		}
	}
	waitPending(0)
	const more = 5
	var wg sync.WaitGroup
	res := make([]int, more)
	errs := make([]error, more)
	reqs := []int{10, 11, 12, 13, 14}
	for i := range more {
		wg.Go(func() { res[i], errs[i] = c.Do(reqs[i]) })
	}
	waitPending(more)
	close(release)
	wg.Wait()
	if r := <-first; r != 2 {
		t.Errorf("first call: %d, want 2", r)
	}
	if len(sizes) != 2 || sizes[0] != 1 || sizes[1] != more {
		t.Errorf("group sizes %v, want [1 %d]", sizes, more)
	}
	for i, req := range reqs {
		if req == 13 {
			if errs[i] == nil || errs[i].Error() != "refused 13" || res[i] != 0 {
				t.Errorf("call 13: %d, %v; want its own refusal", res[i], errs[i])
			}
			continue
		}
		if errs[i] != nil || res[i] != 2*req {
			t.Errorf("call %d: %d, %v; want %d", req, res[i], errs[i], 2*req)
		}
	}
}

// A failed commit (an error or a panic) fails every call of its group that has no error of
// its own, and the committer goes on with the next group.
func TestFailedGroup(t *testing.T) {
	boom := errors.New("disk full")
	var c Committer[string, string]
	c.Commit = func(calls []*Call[string, string]) error {
		for _, call := range calls {
			switch call.Req {
			case "fail":
				call.Res = "half-done"
				return boom
			case "panic":
				panic("bug")
			}
			call.Res = "ok " + call.Req
		}
		return nil
	}
	if r, err := c.Do("fail"); !errors.Is(err, boom) || r != "" {
		t.Errorf("failed group: %q, %v; want no answer and the group's error", r, err)
	}
	if _, err := c.Do("panic"); err == nil {
		t.Error("a panicking commit answered without an error")
	}
	if r, err := c.Do("x"); err != nil || r != "ok x" {
		t.Errorf("after failures: %q, %v", r, err)
	}
}
