package webhook

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Delivery outcomes, the values of the outcome label of
// plantstore_webhook_deliveries_total.
const (
	OutcomeSucceeded = "succeeded" // 2xx
	OutcomeRetry     = "retry"     // failed attempt, another one scheduled
	OutcomeFailed    = "failed"    // last attempt failed: given up
	OutcomeDisabled  = "disabled"  // 410 Gone: subscription disabled
)

// Metrics are the dispatcher's Prometheus metrics.
type Metrics struct {
	deliveries *prometheus.CounterVec
	queueDepth prometheus.Gauge
	oldest     prometheus.Gauge
	duration   prometheus.Histogram
}

// NewMetrics registers the dispatcher's metrics on reg:
// plantstore_webhook_deliveries_total{outcome}, plantstore_webhook_queue_depth,
// plantstore_webhook_oldest_pending_seconds and
// plantstore_webhook_attempt_duration_seconds.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plantstore_webhook_deliveries_total",
			Help: "Webhook delivery attempts by outcome (succeeded, retry, failed, disabled).",
		}, []string{"outcome"}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plantstore_webhook_queue_depth",
			Help: "Pending webhook deliveries in the outbox.",
		}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plantstore_webhook_oldest_pending_seconds",
			Help: "Age of the oldest pending webhook delivery (0 when none).",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "plantstore_webhook_attempt_duration_seconds",
			Help:    "Duration of webhook delivery attempts, until the response body is read.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15, 30},
		}),
	}
	for _, o := range []string{OutcomeSucceeded, OutcomeRetry, OutcomeFailed, OutcomeDisabled} {
		m.deliveries.WithLabelValues(o)
	}
	reg.MustRegister(m.deliveries, m.queueDepth, m.oldest, m.duration)
	return m
}
