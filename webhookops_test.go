package plantstore_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/plantstore/plantstore"
)

func TestResponseExcerpt(t *testing.T) {
	long := strings.Repeat("a", plantstore.MaxResponseBodyStored-1) + "é" // é cut in two at 1024
	for _, tt := range []struct{ name, in, want string }{
		{"Text", `{"ok":true}`, `{"ok":true}`},
		{"Empty", "", ""},
		{"InvalidAndNUL", "a\xffb\x00c", `a\xffb\x00c`},
		{"CutCharacterDropped", long, strings.Repeat("a", plantstore.MaxResponseBodyStored-1)},
		{"Truncated", strings.Repeat("b", 5000), strings.Repeat("b", plantstore.MaxResponseBodyStored)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := plantstore.ResponseExcerpt([]byte(tt.in))
			if got != tt.want {
				t.Fatalf("ResponseExcerpt = %q, want %q", got, tt.want)
			}
			if !utf8.ValidString(got) {
				t.Fatalf("%q is not UTF-8", got)
			}
		})
	}
}

func TestAttemptCursor(t *testing.T) {
	c := plantstore.AttemptCursor{AttemptedAt: time.Unix(0, 1767366245123456789).UTC(), MessageID: "msg_0123456789abcdef01234567", Attempt: 3}
	got, err := plantstore.ParseAttemptCursor(c.String())
	if err != nil || got != c {
		t.Fatalf("ParseAttemptCursor(%q) = %+v, %v; want %+v", c.String(), got, err, c)
	}
	for _, bad := range []string{"", "1.msg_x.1", "x.msg_0123456789abcdef01234567.1", "1.msg_0123456789abcdef01234567.0", "1.msg_0123456789abcdef01234567"} {
		if _, err := plantstore.ParseAttemptCursor(bad); err == nil {
			t.Errorf("ParseAttemptCursor(%q) accepted", bad)
		}
	}
}
