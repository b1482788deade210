package prometheus_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore"
	plantstoreprometheus "github.com/plantstore/plantstore/internal/prometheus"
	"github.com/plantstore/plantstore/internal/service"
)

// values returns the gathered values of the metric name by its one label's
// value ("" for a metric without labels); a histogram's is its count.
func values(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			label := ""
			if ls := m.GetLabel(); len(ls) > 0 {
				label = ls[0].GetValue()
			}
			switch {
			case m.Counter != nil:
				got[label] = m.Counter.GetValue()
			case m.Gauge != nil:
				got[label] = m.Gauge.GetValue()
			case m.Histogram != nil:
				got[label] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return got
}

func TestNewRegistry(t *testing.T) {
	reg := plantstoreprometheus.NewRegistry()
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if len(values(t, reg, name)) == 0 {
			t.Errorf("the registry lacks %s", name)
		}
	}
}

// TestWebhookMetrics: every outcome of the dispatcher shows at 0 from the
// start; Attempt and Queue move the metrics the dispatcher's tests read.
func TestWebhookMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := plantstoreprometheus.NewWebhookMetrics(reg, service.Outcomes)
	var _ service.DeliveryMetrics = m
	deliveries := values(t, reg, "plantstore_webhook_deliveries_total")
	for _, o := range service.Outcomes {
		if v, ok := deliveries[o]; !ok || v != 0 {
			t.Errorf("deliveries{outcome=%q} = %v (%v), want 0 from the start", o, v, ok)
		}
	}
	m.Attempt(service.OutcomeRetry, 20*time.Millisecond)
	m.Attempt(service.OutcomeRetry, 30*time.Millisecond)
	m.Queue(7, 90*time.Second)
	if got := values(t, reg, "plantstore_webhook_deliveries_total")[service.OutcomeRetry]; got != 2 {
		t.Errorf("retry deliveries = %v, want 2", got)
	}
	if got := values(t, reg, "plantstore_webhook_attempt_duration_seconds")[""]; got != 2 {
		t.Errorf("attempt durations observed = %v, want 2", got)
	}
	if got := values(t, reg, "plantstore_webhook_queue_depth")[""]; got != 7 {
		t.Errorf("queue depth = %v, want 7", got)
	}
	if got := values(t, reg, "plantstore_webhook_oldest_pending_seconds")[""]; got != 90 {
		t.Errorf("oldest pending = %v, want 90", got)
	}
}

// TestEventObserver: every event type shows at 0 from the start; a type
// the domain does not know is not counted.
func TestEventObserver(t *testing.T) {
	reg := prometheus.NewRegistry()
	observe := plantstoreprometheus.EventObserver(reg)
	observe(plantstore.EventTypes[0])
	observe("plant.unknown")
	got := values(t, reg, "plantstore_events_written_total")
	if len(got) != len(plantstore.EventTypes) {
		t.Fatalf("events written by type = %v, want the %d types", got, len(plantstore.EventTypes))
	}
	for i, typ := range plantstore.EventTypes {
		want := 0.0
		if i == 0 {
			want = 1
		}
		if got[typ] != want {
			t.Errorf("events written{type=%q} = %v, want %v", typ, got[typ], want)
		}
	}
}
