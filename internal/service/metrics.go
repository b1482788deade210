package service

import "time"

// Delivery outcomes, the values of the outcome label of
// plantstore_webhook_deliveries_total and of the outcome of the attempt's
// log line.
const (
	OutcomeSucceeded = "succeeded" // 2xx
	OutcomeRetry     = "retry"     // failed attempt, another one scheduled
	OutcomeFailed    = "failed"    // last attempt failed: given up
	OutcomeDisabled  = "disabled"  // 410 Gone: subscription disabled
)

// Outcomes lists every delivery outcome.
var Outcomes = []string{OutcomeSucceeded, OutcomeRetry, OutcomeFailed, OutcomeDisabled}

// DeliveryMetrics receives the Dispatcher's measurements
// (DeliveryConfig.Metrics), so that this package imports no metrics
// library: serve gives the Prometheus ones (internal/prometheus,
// NewWebhookMetrics).
type DeliveryMetrics interface {
	// Attempt is told each delivery attempt's outcome (one of Outcomes)
	// and its duration, until the response body was read.
	Attempt(outcome string, took time.Duration)
	// Queue is told, at start and every stats interval, how many
	// deliveries are pending and the age of the oldest (0 when none).
	Queue(pending int, oldest time.Duration)
}
