package cliflags_test

import (
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/plantstore/plantstore/internal/cli/cliflags"
)

func TestParseTTL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"3600", time.Hour},
		{"1", time.Second},
		{"3600s", time.Hour},
		{"90m", 90 * time.Minute},
		{"720h", 720 * time.Hour},
		{"30d", 30 * 24 * time.Hour},
		{"007d", 7 * 24 * time.Hour},
		{"0", 0}, // no expiry, as an absent --ttl
		{"0s", 0},
		{"00d", 0},
		{"36525d", 36525 * 24 * time.Hour},  // 100 years: the bound itself
		{"876600h", 36525 * 24 * time.Hour}, // idem
		{"3155760000", 36525 * 24 * time.Hour},
	} {
		got, err := cliflags.ParseTTL(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseTTL(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, tt := range []struct{ in, why string }{
		{"", "is not a lifetime: write " + cliflags.TTLGrammar},
		{"30d30d", "is not a lifetime: write " + cliflags.TTLGrammar},
		{"1h30m", "is not a lifetime: write " + cliflags.TTLGrammar},
		{"1.5h", "is not a lifetime"},
		{"-1", "is not a lifetime"},
		{"-30d", "is not a lifetime"},
		{"+30d", "is not a lifetime"},
		{" 30d", "is not a lifetime"},
		{"30d ", "is not a lifetime"},
		{"30D", "is not a lifetime"},
		{"1w", "is not a lifetime"},
		{"1ms", "is not a lifetime"},
		{"1y", "is not a lifetime"},
		{"d", "is not a lifetime"},
		{"١٢", "is not a lifetime"}, // Arabic-Indic digits are not [0-9]
		{"36526d", "at most 100 years"},
		{"876601h", "at most 100 years"},
		{"3155760001", "at most 100 years"},
		{"99999999999999999999d", "at most 100 years"}, // overflows int64
		{"9223372036854775807d", "at most 100 years"},  // would overflow the multiplication
	} {
		got, err := cliflags.ParseTTL(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.why) {
			t.Errorf("ParseTTL(%q) = %v, %v; want an error containing %q", tt.in, got, err, tt.why)
		}
	}
}

// TestTTLFlag: a TTL field is a kong flag read with ParseTTL, absent 0.
func TestTTLFlag(t *testing.T) {
	t.Parallel()
	var c struct {
		TTL cliflags.TTL `name:"ttl"`
	}
	parser, err := kong.New(&c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse(nil); err != nil || c.TTL != 0 {
		t.Fatalf("absent: %v, %v; want 0", time.Duration(c.TTL), err)
	}
	if _, err := parser.Parse([]string{"--ttl", "30d"}); err != nil || time.Duration(c.TTL) != 720*time.Hour {
		t.Fatalf("--ttl 30d: %v, %v; want 720h", time.Duration(c.TTL), err)
	}
	_, err = parser.Parse([]string{"--ttl", "30d30d"})
	if err == nil || !strings.HasPrefix(err.Error(), "--ttl: ") || !strings.Contains(err.Error(), cliflags.TTLGrammar) {
		t.Fatalf("--ttl 30d30d: %v; want the flag named and the grammar stated", err)
	}
}
