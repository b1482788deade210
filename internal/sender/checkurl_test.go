package sender

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckURL: the URLs whose host the dialer would refuse, as far as the
// URL tells (literal addresses, localhost), are refused before anything is
// stored or dialled, in every form the client reads as one of them: the
// host is normalised as net/http normalises it (IDNA: full-width letters
// and digits, ideographic full stops, soft hyphens, circled letters), then
// read as an IPv4 shorthand as resolvers do. A host that does not
// normalise is refused as invalid; names are left to the dialer's check
// after resolution. CheckURL takes no resolver and no dialer: it makes no
// connection and no lookup.
func TestCheckURL(t *testing.T) {
	const forbidden, invalid = "forbidden", "invalid"
	for _, tt := range []struct {
		url  string
		kind string // forbidden, invalid, or "" for accepted
		want string // a part of the error
	}{
		{"http://127.0.0.1:9901/hook", forbidden, "127.0.0.1 is not globally reachable: Loopback"},
		{"http://[::1]:8080/", forbidden, "::1 is not globally reachable: Loopback Address"},
		{"http://[::ffff:127.0.0.1]/", forbidden, "::ffff:127.0.0.1 is not globally reachable: Loopback"},
		{"http://[::ffff:7f00:1]/", forbidden, "::ffff:7f00:1 is ::ffff:127.0.0.1, which is not globally reachable: Loopback"},
		{"http://10.1.2.3/", forbidden, "Private-Use"},
		{"https://192.168.0.10/", forbidden, "Private-Use"},
		{"http://169.254.169.254/latest/meta-data/", forbidden, "Link Local"},
		{"http://[fe80::1%25eth0]/", forbidden, "Link-Local Unicast"},
		{"http://[fd00::1]/", forbidden, "Unique-Local"},
		{"http://0.0.0.0/", forbidden, `"This host on this network"`},
		{"http://0/", forbidden, "0 is 0.0.0.0, which is"},
		{"http://2130706433/", forbidden, "2130706433 is 127.0.0.1, which is not globally reachable"},
		{"http://127.1/", forbidden, "127.1 is 127.0.0.1"},
		{"http://0x7f.1/", forbidden, "0x7f.1 is 127.0.0.1"},
		{"http://0X7F.0.0.1/", forbidden, "0X7F.0.0.1 is 127.0.0.1"},
		{"http://0x7f.0.0.1/", forbidden, "0x7f.0.0.1 is 127.0.0.1"},
		{"http://0177.0.0.1/", forbidden, "0177.0.0.1 is 127.0.0.1"},
		{"http://%EF%BD%8C%EF%BD%8F%EF%BD%83%EF%BD%81%EF%BD%8C%EF%BD%88%EF%BD%8F%EF%BD%93%EF%BD%94/", forbidden, "is localhost, a loopback name"}, // ｌｏｃａｌｈｏｓｔ
		{"http://192.0.2.1/", forbidden, "Documentation (TEST-NET-1)"},
		{"http://localhost:9901/hook", forbidden, "localhost is a loopback name (RFC 6761)"},
		{"http://LocalHost./", forbidden, "LocalHost. is a loopback name"},
		{"https://app.localhost/", forbidden, "app.localhost is a loopback name"},
		// Forms net/http maps (IDNA) to one of the above before it dials.
		{"http://ｌｏｃａｌｈｏｓｔ:9901/", forbidden, "ｌｏｃａｌｈｏｓｔ is localhost, a loopback name"},
		{"http://ＬＯＣＡＬＨＯＳＴ/", forbidden, "is localhost, a loopback name"},
		{"http://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/", forbidden, "is localhost, a loopback name"},
		{"http://local\u00adhost/", forbidden, "is localhost, a loopback name"},
		{"http://app.ｌｏｃａｌｈｏｓｔ。/", forbidden, "is app.localhost., a loopback name"},
		{"http://127。0。0。1:9901/", forbidden, "127。0。0。1 is 127.0.0.1, which is not globally reachable: Loopback"},
		{"http://１２７．０．０．１/", forbidden, "is 127.0.0.1, which is not globally reachable: Loopback"},
		{"http://①②⑦.0.0.1/", forbidden, "is 127.0.0.1, which is not globally reachable: Loopback"},
		{"http://127.0.0.1\u200b/", forbidden, "is 127.0.0.1, which is not globally reachable: Loopback"},
		{"http://０ｘ７ｆ.1/", forbidden, "is 127.0.0.1, which is not globally reachable: Loopback"},
		{"http://１０。０。０。１/", forbidden, "is 10.0.0.1, which is not globally reachable: Private-Use"},
		{"http://２１３０７０６４３３/", forbidden, "is 127.0.0.1, which is not globally reachable: Loopback"},
		// Hosts that are neither an address nor a name.
		{"http://4294967296/", invalid, `invalid host "4294967296": it ends in a number but is not an IPv4 address`},
		{"http://0x100000000/", invalid, "ends in a number but is not an IPv4 address"},
		{"http://４２９４９６７２９６/", invalid, "ends in a number but is not an IPv4 address"},
		{"http://256.0.0.1/", invalid, "ends in a number but is not an IPv4 address"},
		{"http://1.2.3.4.5/", invalid, "ends in a number but is not an IPv4 address"},
		{"http://08.1/", invalid, "ends in a number but is not an IPv4 address"}, // 8 is not octal
		{"http://receiver.0x/", invalid, "ends in a number but is not an IPv4 address"},
		{"http://a!b/", invalid, "not an IP address or a host name"},
		{"http://a..b/", invalid, "not an IP address or a host name"},
		{"http://my\u2028host/", invalid, "not an internationalised domain name (IDNA)"},
		// Names: judged after resolution, at connect time.
		{"https://receiver.example/hook", "", ""},
		{"https://localhost.example/", "", ""},
		{"https://mylocalhost/", "", ""},
		{"https://123.example/", "", ""},
		{"https://0x7f.example/", "", ""},
		{"https://1.2.3.4.example./", "", ""},
		{"https://my_host.internal/", "", ""},
		{"https://xn--mnchen-3ya.example/", "", ""},
		{"https://münchen.example/", "", ""},
		{"https://ＲＥＣＥＩＶＥＲ.example/", "", ""},
		{"http://8.8.8.8/", "", ""}, // global: judged, never dialled
	} {
		err := CheckURL(tt.url)
		switch {
		case tt.kind == "" && err != nil:
			t.Errorf("CheckURL(%q) = %v, want nil", tt.url, err)
		case tt.kind == "":
		case err == nil:
			t.Errorf("CheckURL(%q) = nil, want an error with %q", tt.url, tt.want)
		case tt.kind == forbidden && !errors.Is(err, ErrForbiddenAddress):
			t.Errorf("CheckURL(%q) = %v, not ErrForbiddenAddress", tt.url, err)
		case tt.kind == forbidden && (!strings.Contains(err.Error(), tt.want) || !strings.HasSuffix(err.Error(), ": "+AllowPrivateHint)):
			t.Errorf("CheckURL(%q) = %q, want %q and the --webhook-allow-private hint", tt.url, err, tt.want)
		case tt.kind == invalid && (!errors.Is(err, ErrInvalidHost) || errors.Is(err, ErrForbiddenAddress)):
			t.Errorf("CheckURL(%q) = %v, want ErrInvalidHost only", tt.url, err)
		case tt.kind == invalid && !strings.Contains(err.Error(), tt.want):
			t.Errorf("CheckURL(%q) = %q, want %q", tt.url, err, tt.want)
		}
		// CheckHost refuses the invalid hosts only: with private addresses
		// allowed, every valid host is.
		switch herr := CheckHost(tt.url); {
		case tt.kind == invalid && (herr == nil || herr.Error() != err.Error()):
			t.Errorf("CheckHost(%q) = %v, want %v", tt.url, herr, err)
		case tt.kind != invalid && herr != nil:
			t.Errorf("CheckHost(%q) = %v, want nil", tt.url, herr)
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
