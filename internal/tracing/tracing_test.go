package tracing

import "testing"

func TestTracesURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"},
		{"http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/traces"},
		{"https://otel.example/otlp", "https://otel.example/otlp/v1/traces"},
		{"https://otel.example/v1/traces", "https://otel.example/v1/traces"},
	} {
		got, err := TracesURL(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("TracesURL(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
		}
	}
}
