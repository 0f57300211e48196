package deploy

import (
	"context"
	"fmt"

	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/store"
)

// resolve reads the version a deploy of req would deploy (the latest when req.Version is 0)
// and checks that its scenario is not archived.
// Errors: errors wrapping store.ErrNotFound (no such scenario or version) or
// store.ErrArchived; store failures.
func (r *Runtime) resolve(ctx context.Context, req DeployRequest) (store.Version, error) {
	var v store.Version
	var err error
	if l := req.Loaded; l != nil && req.Version != 0 && l.Scenario == req.Scenario && l.Number == req.Version {
		v = *l
	} else if req.Version == 0 {
		v, err = r.cfg.Store.GetLatestVersion(ctx, req.Scenario)
	} else {
		v, err = r.cfg.Store.GetVersion(ctx, req.Scenario, req.Version)
	}
	if err != nil {
		return store.Version{}, err
	}
	sc, err := r.cfg.Store.GetScenario(ctx, req.Scenario)
	if err != nil {
		return store.Version{}, err
	}
	if sc.Archived {
		return store.Version{}, fmt.Errorf("deploying %q: %w", req.Scenario, store.ErrArchived)
	}
	return v, nil
}

// Check answers whether Deploy could deploy req now, without deploying or touching the
// running deployment: it resolves the version as Deploy does and checks that this runtime can
// run it (it validates; Kafka brokers, file paths). A four-eyes deploy request is checked
// when it is made, so that nobody is asked to approve a version that cannot run (Deploy checks
// again when it is approved). It returns the version Deploy would deploy.
// Errors: *InvalidVersionError; errors wrapping store.ErrNotFound or store.ErrArchived;
// ErrClosed during Shutdown; store failures.
func (r *Runtime) Check(ctx context.Context, req DeployRequest) (store.Version, error) {
	if r.Closing() {
		return store.Version{}, ErrClosed
	}
	v, err := r.resolve(ctx, req)
	if err != nil {
		return store.Version{}, err
	}
	if _, err := r.prepare(v, false); err != nil {
		return store.Version{}, err
	}
	return v, nil
}

// ServerProblems are the problems this runtime's connectors find in the validated scenario s
// without the outside world (connector.Source.Check, connector.Sink.Check: a file path
// leading out of the server's directory), which a deploy would refuse, in the order of s's
// nodes: validation adds them to its errors, so that the designer shows them on the node
// before a deploy. v is s's validation; nodes without a plan are skipped.
func (r *Runtime) ServerProblems(s *scenario.Scenario, v *nodes.Validation) []scenario.Problem {
	var out []scenario.Problem
	for i := range s.Nodes {
		n := &s.Nodes[i]
		p := v.Plans[n.ID]
		if p == nil || p.Kind == nil {
			continue
		}
		var check func(string, *nodes.Plan) *scenario.Problem
		switch n.Type {
		case scenario.TypeSource:
			if c, ok := r.connectors.Source(p.Kind.ID); ok {
				check = c.Check
			}
		case scenario.TypeSink:
			if c, ok := r.connectors.Sink(p.Kind.ID); ok {
				check = c.Check
			}
		}
		if check == nil {
			continue
		}
		if prob := check(n.ID, p); prob != nil {
			out = append(out, *prob)
		}
	}
	return out
}
