package jsonvalue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestCheckValues runs Check over texts that are well-formed JSON:
// U+0000, duplicate keys and lone surrogates are refused with where and
// what; everything else JSON allows passes.
func TestCheckValues(t *testing.T) {
	wide := func(n int, dupAt int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			k := i
			if i == dupAt {
				k = 0
			}
			b.WriteString(`"k` + strings.Repeat("x", k%7) + string(rune('a'+k%26)) + string(rune('a'+k/26%26)) + string(rune('a'+k/676)) + `":1`)
		}
		b.WriteString("}")
		return b.String()
	}
	for _, tc := range []struct {
		name, body, want string // want "" means accepted
	}{
		{"OK", `{"id":1,"name":"fern","tag":"x"}`, ""},
		{"OKEscapes", `{"id":1,"name":"a\"b\\c\/\n\u00e9\ud83c\udf31\uFFFD","tag":"\\u0000"}`, ""},
		{"OKSameKeyOtherObjects", `{"a":{"a":1},"b":[{"a":1},{"a":2}],"c":{"a":{"a":1}}}`, ""},
		{"OKScalar", `"x"`, ""},
		{"OKWide", wide(500, -1), ""},
		{"OKWideSiblings", "[" + strings.Repeat(wide(40, -1)+",", 50) + wide(40, -1) + "]", ""},
		{"OKWideInWide", wide(20, -1)[:len(wide(20, -1))-1] + `,"z":` + wide(30, -1) + "}", ""},
		{"DupWideAfterWideChild", wide(20, -1)[:len(wide(20, -1))-1] + `,"z":` + wide(30, -1) + `,"kaaa":2}`, `duplicate key "kaaa"`},
		{"DupWideChild", `{"z":` + wide(30, 25) + "}", `z: duplicate key "kaaa"`},
		{"OKDeep", strings.Repeat(`{"a":[`, MaxDepth/2) + strings.Repeat("]}", MaxDepth/2), ""},
		{"DeepArrays", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), "objects and arrays must not nest more than 64 deep"},
		{"DeepObjects", strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000), "objects and arrays must not nest more than 64 deep"},
		{"OKEmpty", `{"a":[],"b":{},"c":[[],{}],"d":[{"a":1},{"a":1}]}`, ""},
		{"DupAfterEmpty", `{"a":[],"b":{},"a":1}`, `duplicate key "a"`},
		{"DupInArrayElem", `[1,[],{"x":{},"x":[]}]`, `[2]: duplicate key "x"`},
		{"NULName", `{"id":1,"name":"a\u0000b"}`, `name: must not contain U+0000 (\u0000)`},
		{"NULTag", `{"id":1,"name":"a","tag":"\u0000"}`, `tag: must not contain U+0000 (\u0000)`},
		{"NULNested", `{"x":[1,{"y z":"\u0000"}]}`, `x[1]."y z": must not contain U+0000 (\u0000)`},
		{"NULTop", `"\u0000"`, `must not contain U+0000 (\u0000)`},
		{"NULKey", `{"a\u0000":1}`, `an object key must not contain U+0000 (\u0000)`},
		{"DupTop", `{"id":7,"name":"a","name":"b"}`, `duplicate key "name"`},
		{"DupEscaped", `{"id":7,"name":"a","n\u0061me":"b"}`, `duplicate key "name"`},
		{"DupNested", `{"a":{"b":[{"c":1,"c":2}]}}`, `a.b[0]: duplicate key "c"`},
		{"DupAfterChild", `{"a":{"a":1,"b":2},"b":1,"a":2}`, `duplicate key "a"`},
		{"DupWide", wide(500, 400), `duplicate key "kaaa"`},
		{"DupLongKey", `{"` + strings.Repeat("é", 100) + `":1,"` + strings.Repeat("é", 100) + `":2}`, `duplicate key "` + strings.Repeat("é", 32) + `"…`},
		{"LoneHigh", `{"name":"\ud800"}`, `name: must not contain a lone surrogate (\ud800 not followed by a low surrogate \udc00-\udfff)`},
		{"LoneHighThenChar", `{"name":"\uD800x"}`, `name: must not contain a lone surrogate (\ud800 not followed by a low surrogate \udc00-\udfff)`},
		{"HighHigh", `{"name":"\ud800\ud800\udc00"}`, `name: must not contain a lone surrogate (\ud800 not followed by a low surrogate \udc00-\udfff)`},
		{"LoneLow", `{"name":"\udc00"}`, `name: must not contain a lone surrogate (\udc00 not after a high surrogate \ud800-\udbff)`},
		{"LowHigh", `{"name":"\udc00\ud800"}`, `name: must not contain a lone surrogate (\udc00 not after a high surrogate \ud800-\udbff)`},
		{"LoneKey", `{"\udfff":1}`, `an object key must not contain a lone surrogate (\udfff not after a high surrogate \ud800-\udbff)`},
		{"EscapedBackslashU", `{"name":"\\ud800"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.body))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *ValueError
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want a ValueError %q", err, tc.want)
			}
			if got := e.Error(); got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestCheckMalformed: what is not one JSON value is ErrEmpty, ErrNotUTF8
// or ErrNotJSON (the API's 40001), before the value checks.
func TestCheckMalformed(t *testing.T) {
	for _, tc := range []struct {
		body string
		want error
	}{
		{``, ErrEmpty},
		{` `, ErrEmpty},
		{`{"a":1,"a":2`, ErrNotJSON},
		{"{\"a\":\"\x00\"}", ErrNotJSON},
		{`{"a":"\u00"}`, ErrNotJSON},
		{`{"a":1} {}`, ErrNotJSON},
		{"\xff", ErrNotUTF8},
		{"{\"name\":\"a\xffb\"}", ErrNotUTF8},
		{strings.Repeat("[", 10001) + strings.Repeat("]", 10001), ErrNotJSON},
	} {
		if err := Check([]byte(tc.body)); !errors.Is(err, tc.want) {
			t.Errorf("%.40q: got %v, want %v", tc.body, err, tc.want)
		}
	}
}

// TestCheckSyntaxPosition: a text that is not well-formed JSON is a
// *SyntaxError saying on which line and column (characters, from 1) the
// fault is: the character refused, or just after the last one when the text
// ends too soon.
func TestCheckSyntaxPosition(t *testing.T) {
	for _, tc := range []struct {
		body         string
		line, column int
		msg          string
	}{
		{`{"id":1,"name":}`, 1, 16, "invalid character '}' looking for beginning of value"},
		{`{"id":1,"name":"Fern"`, 1, 22, "unexpected end of JSON input"},
		{"{\n  \"id\": 1,\n  \"name\": Fern\n}", 3, 11, "invalid character 'F' looking for beginning of value"},
		{`{"name":"Été","id":x}`, 1, 20, "invalid character 'x' looking for beginning of value"},
		{`{"id":1} {}`, 1, 10, "invalid character '{' after top-level value"},
		{"{\"a\":\"\x00\"}", 1, 7, `invalid character '\x00' in string literal`},
	} {
		err := Check([]byte(tc.body))
		var se *SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, ErrNotJSON) {
			t.Errorf("%q: got %v, want a *SyntaxError that is ErrNotJSON", tc.body, err)
			continue
		}
		if se.Line != tc.line || se.Column != tc.column || se.Msg != tc.msg {
			t.Errorf("%q: got line %d, column %d, %q; want line %d, column %d, %q", tc.body, se.Line, se.Column, se.Msg, tc.line, tc.column, tc.msg)
		}
		if want := fmt.Sprintf("line %d, column %d: %s", tc.line, tc.column, tc.msg); se.Error() != want {
			t.Errorf("%q: Error() = %q, want %q", tc.body, se.Error(), want)
		}
	}
}

// FuzzCheck: Check never panics, and a body it accepts is, read
// by encoding/json's tokenizer as the oracle, well-formed JSON without a key
// twice in an object and without U+0000 in a string or key.
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		`{"id":1,"name":"fern","tag":"x"}`,
		`{"a":{"a":1},"b":[{"a":1},{"a":2}]}`,
		`{"a":1,"\u0061":2}`,
		`{"x":"\u0000"}`,
		`{"x":"\\u0000"}`,
		`["\ud800\udc00","\ud800","\udc00"]`,
		`{"k":[{"k":{"k":[]}}],"k2":null}`,
		`"\ud83c\udf31"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if Check(body) != nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		type frame struct {
			obj     bool
			keys    map[string]bool
			wantKey bool
		}
		var stack []*frame
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("accepted %q, which encoding/json refuses: %v", body, err)
			}
			var top *frame
			if len(stack) > 0 {
				top = stack[len(stack)-1]
			}
			isKey := top != nil && top.obj && top.wantKey
			switch v := tok.(type) {
			case json.Delim:
				switch v {
				case '{', '[':
					if top != nil && top.obj {
						top.wantKey = true
					}
					stack = append(stack, &frame{obj: v == '{', keys: map[string]bool{}, wantKey: true})
				default:
					stack = stack[:len(stack)-1]
				}
				continue
			case string:
				if strings.IndexByte(v, 0) >= 0 {
					t.Fatalf("accepted %q with U+0000", body)
				}
				if isKey {
					if top.keys[v] {
						t.Fatalf("accepted %q with key %q twice", body, v)
					}
					top.keys[v] = true
					top.wantKey = false
					continue
				}
			}
			if top != nil && top.obj {
				top.wantKey = true
			}
		}
	})
}
