package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore"
	plantstoreprometheus "github.com/plantstore/plantstore/internal/prometheus"
	"github.com/plantstore/plantstore/internal/sqlite"
)

// walAutocheckpoint is sqlite.DB.WALAutocheckpoint for serve's
// --sqlite-wal-autocheckpoint, whose 0 means off (the DB field's 0 is
// SQLite's default).
func walAutocheckpoint(pages int) int {
	if pages == 0 {
		return -1
	}
	return pages
}

// registerWALMetrics registers the WAL's metrics (docs/observability.md)
// when db is a SQLite file; a memory database and PostgreSQL have none.
func registerWALMetrics(reg prometheus.Registerer, db plantstore.Backend) {
	s, ok := db.(*sqlite.DB)
	if !ok || s.Memory {
		return
	}
	plantstoreprometheus.WALObserver(reg, func() (int64, time.Time, error) {
		info, err := s.WALInfo()
		return info.Bytes, info.LastCheckpoint, err
	})
}
