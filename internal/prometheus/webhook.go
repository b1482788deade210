package prometheus

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// WebhookMetrics are the webhook dispatcher's Prometheus metrics: the
// service's DeliveryMetrics (service.DeliveryConfig.Metrics), which it is
// told through Attempt and Queue.
type WebhookMetrics struct {
	deliveries *prometheus.CounterVec
	queueDepth prometheus.Gauge
	oldest     prometheus.Gauge
	duration   prometheus.Histogram
}

// NewWebhookMetrics registers the dispatcher's metrics on reg:
// plantstore_webhook_deliveries_total{outcome}, plantstore_webhook_queue_depth,
// plantstore_webhook_oldest_pending_seconds and
// plantstore_webhook_attempt_duration_seconds. Each of outcomes (the
// dispatcher's, service.Outcomes) shows at 0 from the start.
func NewWebhookMetrics(reg prometheus.Registerer, outcomes []string) *WebhookMetrics {
	m := &WebhookMetrics{
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
	for _, o := range outcomes {
		m.deliveries.WithLabelValues(o)
	}
	reg.MustRegister(m.deliveries, m.queueDepth, m.oldest, m.duration)
	return m
}

// Attempt counts a delivery attempt by outcome and records its duration.
func (m *WebhookMetrics) Attempt(outcome string, took time.Duration) {
	m.deliveries.WithLabelValues(outcome).Inc()
	m.duration.Observe(took.Seconds())
}

// Queue sets the pending deliveries and the age of the oldest.
func (m *WebhookMetrics) Queue(pending int, oldest time.Duration) {
	m.queueDepth.Set(float64(pending))
	m.oldest.Set(oldest.Seconds())
}
