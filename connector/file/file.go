// Package file is the file connector of deployments: file sources follow a file of JSON
// lines inside the server's source directory (Input), file sinks append JSON lines to a file
// inside its sink directory (Output). Source and Sink are the connectors package deploy
// registers for the kinds "Source/file" and "Sink/file".
package file

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/scenario-server/scenario-server/connector"
	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
)

// Source is the connector of file sources reading inside dir ("": the working directory):
// the plan's path must be a relative path staying inside it. A file source replays a bounded
// file in `run`; deployed, it follows the file.
func Source(dir string) *connector.Source {
	return &connector.Source{
		Local:    true,
		Identity: "path", IdentityValue: filepath.Clean, // "./a" and "a" are one file
		LineNumbers: true,
		PollEvery:   PollInterval,
		Check:       checkSource,
		Open: func(env connector.Env, id string, p *nodes.Plan) (connector.Input, *scenario.Problem) {
			if prob := checkSource(id, p); prob != nil {
				return nil, prob
			}
			return NewInput(id, dir, p.Typed.(*engine.SourcePlan).Path, env.Logger), nil
		},
	}
}

// checkSource is the file source's connector.Source.Check: its path (nonLocalPath); nothing
// for a plan without one (a node its validation refused).
func checkSource(id string, p *nodes.Plan) *scenario.Problem {
	sp, ok := p.Typed.(*engine.SourcePlan)
	if !ok || sp == nil {
		return nil
	}
	return nonLocalPath(id, sp.Path, "source reads inside the server's source directory")
}

// checkSink is the file sink's connector.Sink.Check, as checkSource.
func checkSink(id string, p *nodes.Plan) *scenario.Problem {
	sp, ok := p.Typed.(*engine.SinkPlan)
	if !ok || sp == nil {
		return nil
	}
	return nonLocalPath(id, sp.Path, "sink writes inside the server's sink directory")
}

// Sink is the connector of file sinks writing inside dir ("": the working directory): the
// plan's path must be a relative path staying inside it, and not a directory. Two sinks
// writing one file are refused (connector.Sink.Exclusive).
func Sink(dir string) *connector.Sink {
	return &connector.Sink{
		Local:     true,
		Exclusive: "path", ExclusiveValue: filepath.Clean, ExclusiveNoun: "file",
		Check: checkSink,
		Open: func(env connector.Env, id string, p *nodes.Plan) (connector.Output, *scenario.Problem) {
			if prob := checkSink(id, p); prob != nil {
				return nil, prob
			}
			rel := p.Typed.(*engine.SinkPlan).Path
			out := NewOutput(id, dir, rel)
			out.log = env.Logger
			if info, err := os.Stat(out.path); err == nil && info.IsDir() {
				return nil, &scenario.Problem{NodeID: id, Field: "path", Code: "invalid-path",
					Message: fmt.Sprintf("%q is a directory of the server's sink directory: a file sink needs a file", rel)}
			}
			return out, nil
		},
	}
}

// nonLocalPath is the problem of a file source's or sink's path that is not a relative path
// to a file staying inside the server's directory for it (what says which): absolute, leading
// out, the directory itself, or ending in a separator (a directory's); nil when it is.
// A path's length, in bytes: at most maxPathBytes whole and maxNameBytes a name in it (most
// file systems' limits, which the operating system would refuse only when the deployment
// opens the file).
func nonLocalPath(id, rel, what string) *scenario.Problem {
	if !filepath.IsLocal(rel) || filepath.Clean(rel) == "." || strings.HasSuffix(filepath.ToSlash(rel), "/") {
		return &scenario.Problem{NodeID: id, Field: "path", Code: "invalid-path",
			Message: fmt.Sprintf("a deployed file %s: %q must be a relative path to a file that stays inside it", what, rel)}
	}
	long := len(rel) > maxPathBytes
	for _, name := range strings.Split(filepath.ToSlash(rel), "/") {
		long = long || len(name) > maxNameBytes
	}
	if long {
		return &scenario.Problem{NodeID: id, Field: "path", Code: "invalid-path",
			Message: fmt.Sprintf("a deployed file %s: the path must be at most %d bytes, and each name in it at most %d (%d bytes)", what, maxPathBytes, maxNameBytes, len(rel))}
	}
	return nil
}

const (
	maxPathBytes = 1024
	maxNameBytes = 255
)

// openRegular opens rel inside root with flag and perm, and the open file only when it is a
// regular file: else it is closed and the error is a *notRegularError. The open does not wait
// for a FIFO's other end (nonBlocking; a FIFO put under the name between a look at it and
// the open held a deployment, its cancel and the server's shutdown for good), and the check
// is of the file opened, not of the name.
func openRegular(root *os.Root, rel string, flag int, perm os.FileMode) (*os.File, error) {
	file, err := root.OpenFile(rel, flag|nonBlocking, perm)
	if err != nil {
		return nil, err
	}
	info, err := file.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = &notRegularError{mode: info.Mode().Type()}
	}
	if err != nil {
		file.Close()
		return nil, err
	}
	return file, nil
}

// notRegularError is openRegular's error for a file that is not a regular one.
type notRegularError struct{ mode os.FileMode }

func (e *notRegularError) Error() string { return fmt.Sprintf("not a regular file (%s)", e.mode) }
