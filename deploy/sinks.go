package deploy

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/value"
)

// The sink kinds the runtime writes (nodes' Sink/<kind>).
const (
	sinkCollect = "collect"
	sinkFile    = "file"
	sinkStdout  = "stdout"
	sinkDeadEnd = "dead-end"
)

// sinks buffers what a deployment's sinks write between two checkpoints, and writes it at the
// checkpoint: collect results go into the same store transaction as the checkpoint, file lines
// are appended and synced just before it, stdout lines written just before it.
//
// Only the deployment's goroutine uses it.
type sinks struct {
	kinds   map[string]string    // sink node id → kind
	files   map[string]*fileSink // by sink node id
	collect []store.NewSinkResult
	stdout  []byte
	out     io.Writer // where stdout sinks write
	// outputs counts every value written, to tell whether an idle tick emitted anything.
	outputs int64
	enc     value.JSONEncoder
}

// fileSink is one file sink: the file it appends to and the lines not written yet.
type fileSink struct {
	id, path string
	rel      string // the path parameter, relative to Config.FileSinkDir
	pending  []byte
	// size is the file's size after the last write: what a checkpoint records.
	size int64
}

func newSinks(out io.Writer) *sinks {
	return &sinks{kinds: map[string]string{}, files: map[string]*fileSink{}, out: out}
}

func (s *sinks) addFile(id, rel, path string) {
	s.kinds[id] = sinkFile
	s.files[id] = &fileSink{id: id, rel: rel, path: path}
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
	switch s.kinds[sinkID] {
	case sinkCollect:
		s.collect = append(s.collect, store.NewSinkResult{Sink: sinkID, Value: s.enc.Append(nil, v)})
	case sinkFile:
		f := s.files[sinkID]
		f.pending = append(s.enc.Append(f.pending, v), '\n')
	case sinkStdout:
		s.stdout = append(s.enc.Append(s.stdout, v), '\n')
	}
}

// pending reports how many collect results wait for the next checkpoint.
func (s *sinks) pending() int { return len(s.collect) }

// restoreFiles cuts each file sink's file back to its size at the checkpoint (sizes), so the
// lines written after it, which the deployment writes again as it reprocesses the events
// after the checkpoint, are not there twice. A file sink without a size in the checkpoint
// (a new sink) starts from its file's current size.
func (s *sinks) restoreFiles(sizes map[string]int64) error {
	for id, f := range s.files {
		size, ok := sizes[id]
		info, err := os.Stat(f.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			f.size = 0
			continue
		case err != nil:
			return fmt.Errorf("file sink %q: %w", id, err)
		}
		f.size = info.Size()
		if ok && info.Size() > size {
			if err := os.Truncate(f.path, size); err != nil {
				return fmt.Errorf("file sink %q: cutting %s back to its checkpointed size: %w", id, f.path, err)
			}
			f.size = size
		}
	}
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
	if err := os.MkdirAll(filepath.Dir(f.path), 0o750); err != nil {
		return err
	}
	file, err := os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
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

// committed forgets the collect results a checkpoint stored.
func (s *sinks) committed() {
	clear(s.collect)
	s.collect = s.collect[:0]
}
