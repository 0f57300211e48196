package sqlite

import "database/sql"

// WriteDB is the store's one write connection, for tests that change its settings.
func WriteDB(s *Store) *sql.DB { return s.write }

// SetSegmentLimits sets the results and value bytes of a segment of sink results (see
// resultchunks.go) until the test ends, so that small appends take several segments.
func SetSegmentLimits(t interface{ Cleanup(func()) }, results, bytes int) {
	oldResults, oldBytes := segmentResults, segmentBytes
	segmentResults, segmentBytes = results, bytes
	t.Cleanup(func() { segmentResults, segmentBytes = oldResults, oldBytes })
}

// ReadDB is the store's pool of read connections.
func ReadDB(s *Store) *sql.DB { return s.read }

// The queries that read versions' metadata without their graphs: a scenario by name (as the
// list reads each), and a version history.
const (
	ScenarioQuery = scenarioSelect + ` WHERE s.name = ?`
	HistoryQuery  = historySelect + ` WHERE s.name = ? AND v.number < ? ORDER BY v.number DESC LIMIT ?`
)

// FoldAuditQuery is FoldAudit's update.
const FoldAuditQuery = foldAuditQuery
