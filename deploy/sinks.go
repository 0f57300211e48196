package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/value"
)

// sinkFile is the ref.typ of file sinks (fileSinkPaths).
const sinkFile = "file"

// sinks buffers what a deployment's sinks write between two checkpoints, and writes it at the
// checkpoint: collect results go into the same store transaction as the checkpoint, file lines
// are appended and synced just before it, stdout lines written just before it.
//
// Only the deployment's goroutine uses it.
type sinks struct {
	writers map[string]sinkWriter // by sink node id (see outputConnectors)
	files   map[string]*fileSink  // by sink node id
	kafka   map[string]*kafkaSink // by sink node id (kafkasink.go)
	collect []store.NewSinkResult
	stdout  []byte
	out     io.Writer // where stdout sinks write
	// outputs counts every value written, to tell whether an idle tick emitted anything.
	outputs int64
	enc     value.JSONEncoder
}

// fileSink is one file sink: the file it appends to and the lines not written yet.
//
// The file is opened inside the sink directory through an os.Root, as file sources read
// theirs: neither the path nor a symbolic link on the way may lead outside the directory, so
// a link planted in it cannot make a sink append to (or, restoring a checkpoint, cut back)
// a file elsewhere. Only regular files are written.
type fileSink struct {
	id, path string
	dir      string // Config.FileSinkDir; "" is the working directory
	rel      string // the path parameter, relative to dir
	pending  []byte
	// size is the file's size after the last write: what a checkpoint records.
	size int64
}

func newSinks(out io.Writer) *sinks {
	return &sinks{writers: map[string]sinkWriter{}, files: map[string]*fileSink{}, kafka: map[string]*kafkaSink{}, out: out}
}

// addFile adds the file sink id writing to rel inside dir (path is dir and rel joined, for
// comparisons and messages).
func (s *sinks) addFile(id, dir, rel, path string) {
	if dir == "" {
		dir = "."
	}
	f := &fileSink{id: id, dir: dir, rel: rel, path: path}
	s.writers[id] = f
	s.files[id] = f
}

// openRoot opens the sink directory, creating it when missing.
func (f *fileSink) openRoot() (*os.Root, error) {
	if err := os.MkdirAll(f.dir, 0o750); err != nil {
		return nil, err
	}
	return os.OpenRoot(f.dir)
}

// stat returns the file's information inside the sink directory (following symbolic links
// that stay in it); an error wrapping fs.ErrNotExist when there is no file yet, and an error
// when the name is not a regular file or leads outside the directory.
func (f *fileSink) stat(root *os.Root) (fs.FileInfo, error) {
	info, err := root.Stat(f.rel)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%q in the sink directory is not a regular file (%s): a file sink writes a file", f.rel, info.Mode().Type())
	}
	return info, nil
}

// sortedFiles returns s's file sinks by id (for deterministic messages).
func sortedFiles(s *sinks) []*fileSink {
	list := make([]*fileSink, 0, len(s.files))
	for _, f := range s.files {
		list = append(list, f)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].id < list[j].id })
	return list
}

// output is the engine's Output.
func (s *sinks) output(sinkID string, v value.Value, _ int64) {
	s.outputs++
	if w := s.writers[sinkID]; w != nil {
		w.writeValue(s, sinkID, v)
	}
}

// collectSink keeps values in the store, with the next checkpoint.
type collectSink struct{}

func (collectSink) writeValue(s *sinks, id string, v value.Value) {
	s.collect = append(s.collect, store.NewSinkResult{Sink: id, Value: s.enc.Append(nil, v)})
}

// stdoutSink writes values as JSON lines to the server's standard output.
type stdoutSink struct{}

func (stdoutSink) writeValue(s *sinks, _ string, v value.Value) {
	s.stdout = append(s.enc.Append(s.stdout, v), '\n')
}

// writeValue appends v as a JSON line to the file's pending lines.
func (f *fileSink) writeValue(s *sinks, _ string, v value.Value) {
	f.pending = append(s.enc.Append(f.pending, v), '\n')
}

// writeValue adds v as a record of the sink's next Kafka transaction (kafkasink.go).
func (k *kafkaSink) writeValue(s *sinks, _ string, v value.Value) { k.add(&s.enc, v) }

// pending reports how many collect results and Kafka records wait for the next checkpoint.
func (s *sinks) pending() int { return len(s.collect) + s.kafkaPending() }

// restoreFiles cuts each file sink's file back to its size at the checkpoint (sizes), so the
// lines written after it, which the deployment writes again as it reprocesses the events
// after the checkpoint, are not there twice. A file sink without a size in the checkpoint
// (a new sink) starts from its file's current size.
func (s *sinks) restoreFiles(sizes map[string]int64) error {
	for id, f := range s.files {
		if err := f.restore(sizes); err != nil {
			return fmt.Errorf("file sink %q: %w", id, err)
		}
	}
	return nil
}

func (f *fileSink) restore(sizes map[string]int64) error {
	root, err := f.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	size, ok := sizes[f.id]
	info, err := f.stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f.size = 0
		return nil
	case err != nil:
		return err
	}
	f.size = info.Size()
	if !ok || info.Size() <= size {
		return nil
	}
	file, err := root.OpenFile(f.rel, os.O_WRONLY, 0)
	if err == nil {
		err = errors.Join(file.Truncate(size), file.Close())
	}
	if err != nil {
		return fmt.Errorf("cutting %s back to its checkpointed size: %w", f.path, err)
	}
	f.size = size
	return nil
}

// fileSizes returns each file sink's size after its last write.
func (s *sinks) fileSizes() map[string]int64 {
	sizes := make(map[string]int64, len(s.files))
	for id, f := range s.files {
		sizes[id] = f.size
	}
	return sizes
}

// writeFiles appends each file sink's pending lines to its file and syncs it. A file that
// fails is cut back to its previous size and keeps its lines for the next checkpoint.
func (s *sinks) writeFiles() error {
	var errs []error
	for _, f := range s.files {
		if err := f.write(); err != nil {
			errs = append(errs, fmt.Errorf("file sink %q: %w", f.id, err))
		}
	}
	return errors.Join(errs...)
}

func (f *fileSink) write() error {
	if len(f.pending) == 0 {
		return nil
	}
	root, err := f.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	if dir := filepath.Dir(f.rel); dir != "." {
		if err := root.MkdirAll(dir, 0o750); err != nil {
			return err
		}
	}
	// Stat first: opening a FIFO to write would block until a reader comes.
	if _, err := f.stat(root); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	file, err := root.OpenFile(f.rel, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	_, err = file.Write(f.pending)
	if err == nil {
		err = file.Sync()
	}
	var info os.FileInfo
	if err == nil {
		info, err = file.Stat()
	}
	if err != nil {
		err = errors.Join(err, file.Truncate(f.size))
		file.Close()
		return err
	}
	if err := file.Close(); err != nil {
		return err
	}
	f.size = info.Size()
	f.pending = f.pending[:0]
	return nil
}

// writeStdout writes the stdout sinks' pending lines: at least once (a crash after this and
// before the checkpoint commits writes them again).
func (s *sinks) writeStdout() {
	if len(s.stdout) == 0 {
		return
	}
	_, _ = s.out.Write(s.stdout)
	s.stdout = s.stdout[:0]
}

// checkSinkOwners returns a *SinkPathInUseError when a file sink of d writes to a file that
// another scenario's latest deployment in the store owns: one deploying or running (in this
// server or another sharing the store, or listed active though it failed to resume), or one
// CANCELED or FAILED of a scenario that is not archived. Deploying that scenario again
// resumes its checkpoint and cuts the file back to the size it recorded, which would delete
// the lines d wrote meanwhile; so d is refused instead, naming the other deployment. Archiving
// the other scenario releases its files. d's own scenario is not counted: its new deployment
// takes over the files. Errors: *SinkPathInUseError; store failures.
func (r *Runtime) checkSinkOwners(ctx context.Context, d *deployment) error {
	if len(d.sinks.files) == 0 {
		return nil
	}
	latest, err := r.cfg.Store.ListLatestDeployments(ctx)
	if err != nil {
		return fmt.Errorf("listing the deployments that own file sink paths: %w", err)
	}
	var archived map[string]bool
	for _, other := range latest {
		if other.Scenario == d.info.Scenario {
			continue
		}
		status := other.Status
		switch status {
		case store.StatusDeploying, store.StatusRunning:
			status = "" // running: the message says so
		case store.StatusCanceled, store.StatusFailed:
			if archived == nil {
				list, err := r.cfg.Store.ListScenarios(ctx, store.ScenarioFilter{Archived: store.OnlyArchived})
				if err != nil {
					return fmt.Errorf("listing the archived scenarios: %w", err)
				}
				archived = map[string]bool{}
				for _, sc := range list {
					archived[sc.Name] = true
				}
			}
			if archived[other.Scenario] {
				continue
			}
		default:
			continue
		}
		v, err := r.cfg.Store.GetVersion(ctx, other.Scenario, other.Version)
		if err != nil {
			return fmt.Errorf("reading the version of deployment %d of %q: %w", other.ID, other.Scenario, err)
		}
		owned := fileSinkPaths(v.Graph)
		for _, f := range sortedFiles(d.sinks) {
			if sink, ok := owned[filepath.Clean(f.rel)]; ok {
				return &SinkPathInUseError{Scenario: d.info.Scenario, Sink: f.id, Path: f.rel,
					OtherScenario: other.Scenario, OtherDeployment: other.ID, OtherSink: sink, OtherStatus: status}
			}
		}
	}
	return nil
}

// fileSinkPaths maps the path of each file sink of a scenario graph, cleaned ("./a" and "a"
// are one file), to the sink's id. A graph that does not decode has none.
func fileSinkPaths(graph []byte) map[string]string {
	sc, err := scenario.Decode(graph)
	if err != nil {
		return nil
	}
	paths := map[string]string{}
	for i := range sc.Nodes {
		n := &sc.Nodes[i]
		if n.Type != scenario.TypeSink || n.Subtype() != sinkFile || n.Ref == nil {
			continue
		}
		for _, p := range n.Ref.Parameters {
			var path string
			if p.Name == "path" && json.Unmarshal(p.Value, &path) == nil && path != "" {
				paths[filepath.Clean(path)] = n.ID
			}
		}
	}
	return paths
}

// committed forgets the collect results a checkpoint stored.
func (s *sinks) committed() {
	clear(s.collect)
	s.collect = s.collect[:0]
}
