package clientcli

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/plantstore/plantstore/client"
)

// TestTextColumn: a printable string is shown as it is; any other (a
// control character, a format character such as a bidirectional override,
// invalid UTF-8) and one that starts with a quote are quoted, escapes and
// all.
func TestTextColumn(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"Fern", "Fern"},
		{"Boston fern <green> & co", "Boston fern <green> & co"},
		{"é 🌱 漢字", "é 🌱 漢字"},
		{"\x1b]0;pwned\x07", `"\x1b]0;pwned\a"`},
		{"\x1b[2J", `"\x1b[2J"`},
		{"a\tb", `"a\tb"`},
		{"a\nb", `"a\nb"`},
		{"a\rb", `"a\rb"`},
		{"a\x7f", `"a\x7f"`},
		{"a\u009b2J", `"a\u009b2J"`}, // C1 CSI
		{"abc\u202edef", `"abc\u202edef"`},
		{"a\u200bb", `"a\u200bb"`},
		{"a\u00a0b", `"a\u00a0b"`},
		{"a\xffb", `"a\xffb"`},
		{`"Fern"`, `"\"Fern\""`},
		{`Fern "Boston"`, `Fern "Boston"`},
	} {
		if got := TextColumn(tt.in); got != tt.want {
			t.Errorf("TextColumn(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// hostile is a stored string made to act on a terminal: retitle it (OSC
// 0, ended by BEL), clear it (CSI 2J), and reverse the text after it.
const hostile = "\x1b]0;pwned\x07\x1b[2J\u202eFern"

// checkPrintable fails unless out has printable characters, spaces and
// line breaks only, and shows hostile escaped.
func checkPrintable(t *testing.T, what, out string) {
	t.Helper()
	for i, r := range out {
		if r != '\n' && (r == utf8.RuneError || !unicode.IsPrint(r)) {
			t.Errorf("%s: %U at byte %d reaches the terminal:\n%q", what, r, i, out)
			return
		}
	}
	if !strings.Contains(out, `\x1b]0;pwned\a\x1b[2J\u202eFern`) {
		t.Errorf("%s: the stored string is not shown escaped:\n%q", what, out)
	}
}

// TestDeliveryTablesEscape: the attempt tables of webhooks deliveries and
// webhooks ping escape what the receiver side put in an attempt's error.
func TestDeliveryTablesEscape(t *testing.T) {
	var out bytes.Buffer
	plant := int64(7)
	if err := writeDeliveries(&out, []client.Delivery{{MessageID: "msg_1", PlantID: &plant, Attempt: 1, State: "failed", Error: hostile}}); err != nil {
		t.Fatal(err)
	}
	checkPrintable(t, "webhooks deliveries --format table", out.String())
	out.Reset()
	if err := writePing(&out, &client.PingResult{MessageID: "msg_2", Error: hostile}); err != nil {
		t.Fatal(err)
	}
	checkPrintable(t, "webhooks ping --format table", out.String())
}

// TestServerURL: --server without a scheme is an http:// URL.
func TestServerURL(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:8080":        "http://127.0.0.1:8080",
		"localhost:8080":        "http://localhost:8080",
		"[::1]:8080":            "http://[::1]:8080",
		"https://example.com":   "https://example.com",
		"http://127.0.0.1:8080": "http://127.0.0.1:8080",
	} {
		if got := serverURL(in); got != want {
			t.Errorf("serverURL(%q) = %q, want %q", in, got, want)
		}
	}
}
