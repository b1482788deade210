// Package prometheus holds the process's Prometheus metrics of the layers
// below the transport: the registry, and the observers that the storage,
// the services and the webhook dispatcher are given as plain hooks or
// interfaces of their own, so that only this package (and the transport's
// own request metrics, in http) imports the Prometheus client.
package prometheus

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// NewRegistry returns the process's registry: the Go and process
// collectors, for the server's metrics (http.Server.Registry, served at
// /metrics) and those of the storage, services and dispatcher.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}
