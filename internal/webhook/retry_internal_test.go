package webhook

import (
	"net/http"
	"testing"
	"time"
)

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
		{"0", MinRetryAfter, true},
		{"100000", MaxRetryAfter, true},
		{"99999999999999999", MaxRetryAfter, true},
		{now.Add(time.Hour).Format(http.TimeFormat), time.Hour, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), MinRetryAfter, true},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), MaxRetryAfter, true},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestDefaultJitter(t *testing.T) {
	for _, d := range []time.Duration{time.Nanosecond, 5 * time.Second, 8 * time.Hour} {
		for range 1000 {
			if got := DefaultJitter(d); got < d/2 || got >= d/2+d {
				t.Fatalf("DefaultJitter(%v) = %v, outside [d/2, 3d/2)", d, got)
			}
		}
	}
	if got := DefaultJitter(0); got != 0 {
		t.Errorf("DefaultJitter(0) = %v", got)
	}
}

// TestDefaultScheduleSpan keeps the documented schedule honest: 11 attempts
// over about a day.
func TestDefaultScheduleSpan(t *testing.T) {
	var total time.Duration
	for _, d := range DefaultSchedule {
		total += d
	}
	if want := 23*time.Hour + 42*time.Minute + 35*time.Second; total != want || len(DefaultSchedule) != 10 {
		t.Errorf("schedule: %d waits, %v in all; the doc says 10 and %v", len(DefaultSchedule), total, want)
	}
}
