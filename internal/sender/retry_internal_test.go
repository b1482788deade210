package sender

import (
	"math"
	"net/http"
	"testing"
	"time"
)

// TestParseRetryAfter: the wait as the receiver gave it; the service
// bounds it.
func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"soon", 0, false},
		{"-5", 0, false},
		{"120", 120 * time.Second, true},
		{" 7 ", 7 * time.Second, true},
		{"0", 0, true},
		{"100000", 100000 * time.Second, true},
		{"99999999999999999", math.MaxInt64 / time.Second * time.Second, true},
		{now.Add(time.Hour).Format(http.TimeFormat), time.Hour, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), -time.Hour, true},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), 48 * time.Hour, true},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
