package sqlite

import "database/sql"

// WriteDB is the store's one write connection, for tests that change its settings.
func WriteDB(s *Store) *sql.DB { return s.write }
