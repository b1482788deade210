package prometheus

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore"
)

// Metrics of the storage and the services, which import no metrics
// library: each observer registers its metrics on a registry and returns
// the hook to give the storage or the services (cmd/plantstore wires them).

// CommitObserver registers the storage's group-commit metrics on reg and
// returns the function to give the backend as its OnCommit hook.
func CommitObserver(reg prometheus.Registerer) func(writes int, took time.Duration) {
	writes := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "plantstore_store_batch_writes",
		Help:    "Writes per group commit (one transaction, one fsync).",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
	})
	took := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "plantstore_store_commit_seconds",
		Help:    "Time to apply and commit one group-commit batch.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
	})
	reg.MustRegister(writes, took)
	return func(n int, d time.Duration) {
		writes.Observe(float64(n))
		took.Observe(d.Seconds())
	}
}

// TokenCacheObserver registers the token cache's metric on reg and returns
// the function to give the token service (service.Config.OnTokenCache).
func TokenCacheObserver(reg prometheus.Registerer) func(hit bool) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plantstore_token_cache_total",
		Help: "Bearer token checks by token cache result (hit: no database lookup).",
	}, []string{"result"})
	reg.MustRegister(c)
	hit, miss := c.WithLabelValues("hit"), c.WithLabelValues("miss")
	return func(h bool) {
		if h {
			hit.Inc()
		} else {
			miss.Inc()
		}
	}
}

// EventObserver registers the events-written counter on reg and returns the
// function to give the plant service (service.Config.OnEvent): told the type
// of every event after its commit.
func EventObserver(reg prometheus.Registerer) func(typ string) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plantstore_events_written_total",
		Help: "Events written (committed) by this process, by type (plant.created, plant.updated, plant.deleted).",
	}, []string{"type"})
	reg.MustRegister(c)
	byType := make(map[string]prometheus.Counter, len(plantstore.EventTypes))
	for _, t := range plantstore.EventTypes {
		byType[t] = c.WithLabelValues(t) // every type shows, at 0, from the start
	}
	return func(typ string) {
		if n, ok := byType[typ]; ok {
			n.Inc()
		}
	}
}

// WALObserver registers the metrics of a SQLite database's WAL on reg:
// info is called once per scrape and returns the WAL file's size and the
// time a checkpoint was last seen to complete (sqlite.DB.WALInfo). A scrape
// at which info fails shows neither metric.
func WALObserver(reg prometheus.Registerer, info func() (bytes int64, lastCheckpoint time.Time, err error)) {
	reg.MustRegister(&walCollector{info: info})
}

var (
	walBytesDesc = prometheus.NewDesc("plantstore_sqlite_wal_bytes",
		"Size of the SQLite WAL file: the most it held since it was last truncated; it grows for good only while no checkpoint completes.", nil, nil)
	walCheckpointDesc = prometheus.NewDesc("plantstore_sqlite_last_checkpoint_timestamp_seconds",
		"Unix time at which this process last saw a WAL checkpoint complete (the WAL started over or shrank), by any connection or process (SQLite's autocheckpoint, Litestream); seen at scrapes; the database's open time until one is seen.", nil, nil)
)

// walCollector collects WALObserver's metrics at scrape time.
type walCollector struct {
	info func() (int64, time.Time, error)
}

func (c *walCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- walBytesDesc
	ch <- walCheckpointDesc
}

func (c *walCollector) Collect(ch chan<- prometheus.Metric) {
	n, last, err := c.info()
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(walBytesDesc, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(walCheckpointDesc, prometheus.GaugeValue, float64(last.UnixNano())/1e9)
}
