package webhook

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckURL: the URLs whose host the dialer would refuse, as far as the
// URL tells (literal addresses, localhost), are refused before anything is
// stored or dialled; names are left to the dialer's check after
// resolution. CheckURL makes no connection and no lookup.
func TestCheckURL(t *testing.T) {
	for _, tt := range []struct {
		url  string
		want string // a part of the error; "" accepted
	}{
		{"http://127.0.0.1:9901/hook", "127.0.0.1 is not globally reachable: Loopback"},
		{"http://[::1]:8080/", "::1 is not globally reachable: Loopback Address"},
		{"http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1 is not globally reachable: Loopback"},
		{"http://10.1.2.3/", "Private-Use"},
		{"https://192.168.0.10/", "Private-Use"},
		{"http://169.254.169.254/latest/meta-data/", "Link Local"},
		{"http://[fe80::1%25eth0]/", "Link-Local Unicast"},
		{"http://[fd00::1]/", "Unique-Local"},
		{"http://0.0.0.0/", `"This host on this network"`},
		{"http://0/", "0 is 0.0.0.0, which is"},
		{"http://2130706433/", "2130706433 is 127.0.0.1, which is not globally reachable"},
		{"http://127.1/", "127.1 is 127.0.0.1"},
		{"http://0x7f.0.0.1/", "0x7f.0.0.1 is 127.0.0.1"},
		{"http://0177.0.0.1/", "0177.0.0.1 is 127.0.0.1"},
		{"http://192.0.2.1/", "Documentation (TEST-NET-1)"},
		{"http://localhost:9901/hook", "localhost is a loopback name (RFC 6761)"},
		{"http://LocalHost./", "LocalHost. is a loopback name"},
		{"https://app.localhost/", "app.localhost is a loopback name"},
		// Names: judged after resolution, at connect time.
		{"https://receiver.example/hook", ""},
		{"https://localhost.example/", ""},
		{"https://mylocalhost/", ""},
		{"https://123.example/", ""},
		{"https://0x7f.example/", ""},
		{"http://1.2.3.4.5/", ""}, // five parts: not an address
		{"http://08.1/", ""},      // 8 is not octal: not an address
	} {
		err := CheckURL(tt.url)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckURL(%q) = %v, want nil", tt.url, err)
		case tt.want == "":
		case err == nil:
			t.Errorf("CheckURL(%q) = nil, want an error with %q", tt.url, tt.want)
		case !errors.Is(err, ErrForbiddenAddress):
			t.Errorf("CheckURL(%q) = %v, not ErrForbiddenAddress", tt.url, err)
		case !strings.Contains(err.Error(), tt.want) || !strings.HasSuffix(err.Error(), ": "+AllowPrivateHint):
			t.Errorf("CheckURL(%q) = %q, want %q and the --webhook-allow-private hint", tt.url, err, tt.want)
		}
	}
}

func TestParseIPv4Shorthand(t *testing.T) {
	for host, want := range map[string]string{
		"2130706433":   "127.0.0.1",
		"127.1":        "127.0.0.1",
		"127.0.1":      "127.0.0.1",
		"0x7f000001":   "127.0.0.1",
		"0x7F.1":       "127.0.0.1",
		"017700000001": "127.0.0.1",
		"10.0x10.1":    "10.16.0.1",
		"4294967295":   "255.255.255.255",
		"1.2.3.4.":     "1.2.3.4",
		"4294967296":   "", // past 32 bits
		"256.1":        "", // a part before the last over 255
		"1.2.65536":    "", // the last part past its 16 bits
		"1.2.3.4.5":    "",
		"example":      "",
		"0x":           "",
		"1..2":         "",
		"-1":           "",
		"1e3":          "",
		"":             "",
	} {
		a, ok := parseIPv4Shorthand(host)
		got := ""
		if ok {
			got = a.String()
		}
		if got != want {
			t.Errorf("parseIPv4Shorthand(%q) = %q, want %q", host, got, want)
		}
	}
}
