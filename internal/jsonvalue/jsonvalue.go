// Package jsonvalue holds the checks of a JSON text that both the API's
// request bodies (http) and the plant lines of the import commands
// (plantlines) go through, so that both take exactly the same texts: valid
// UTF-8, one well-formed JSON value, and none of what JSON allows but the
// service does not (U+0000 in a string, a key twice in one object, a lone
// surrogate escape, nesting deeper than MaxDepth).
package jsonvalue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-faster/jx"
)

// The faults of a text that is not one JSON value (Check returns them,
// wrapped or not: test with errors.Is). The http layer answers them 400
// 40001; ValueError is 40002.
var (
	ErrEmpty   = errors.New("is empty")
	ErrNotUTF8 = errors.New("is not valid UTF-8")
	ErrNotJSON = errors.New("is not valid JSON (or has data after the JSON value)")
)

// SyntaxError is where and how a text is not one well-formed JSON value
// (errors.Is(err, ErrNotJSON) holds for it).
type SyntaxError struct {
	Offset int64  // bytes of the text before the fault
	Line   int    // the fault's line, from 1
	Column int    // the fault's column on its line, in characters, from 1
	Msg    string // what is wrong there, as encoding/json words it
}

// Error implements the error interface: "line 1, column 16: invalid
// character '}' looking for beginning of value".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// Unwrap returns ErrNotJSON.
func (e *SyntaxError) Unwrap() error { return ErrNotJSON }

// syntaxError says where data, valid UTF-8 but not well-formed JSON, goes
// wrong: at the character encoding/json refuses, or just after the last one
// when the text ends too soon. Only a refused text pays for it.
func syntaxError(data []byte) error {
	var se *json.SyntaxError
	// Unmarshal checks the whole text before it decodes anything.
	if err := json.Unmarshal(data, new(struct{})); !errors.As(err, &se) {
		return ErrNotJSON
	}
	// Offset counts the refused character, but not the end of the text.
	pos := min(max(se.Offset-1, 0), int64(len(data)))
	if se.Offset >= int64(len(data)) && strings.HasPrefix(se.Error(), "unexpected end") {
		pos = int64(len(data))
	}
	before := data[:pos]
	line := bytes.Count(before, []byte{'\n'}) + 1
	column := utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return &SyntaxError{Offset: pos, Line: line, Column: column, Msg: se.Error()}
}

// ValueError is a text that is well-formed JSON but holds what no caller
// takes: a string with U+0000, a key twice in one object, a lone surrogate
// escape, or nesting deeper than MaxDepth. Callers word it with their
// schema: "invalid NewPlant: name: must not contain U+0000".
type ValueError struct {
	Path string // where: "name", "extra[1].a"; "" for the whole text
	Msg  string // what is wrong there
}

// Error implements the error interface.
func (e *ValueError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Check checks a whole JSON text: it must be valid UTF-8 (else ErrNotUTF8)
// and one well-formed JSON value with nothing but white space after it
// (else ErrEmpty, or a *SyntaxError, which is ErrNotJSON), and that value
// must not hold what the service does not take although JSON allows it
// (else a *ValueError, see CheckValues).
func Check(data []byte) error {
	switch {
	case len(bytes.TrimSpace(data)) == 0:
		return ErrEmpty
	case !utf8.Valid(data):
		return ErrNotUTF8
	case !json.Valid(data):
		return syntaxError(data)
	}
	return CheckValues(data)
}

// CheckValues refuses, in a well-formed JSON text (Check makes sure of
// that first), what JSON allows and the service does not:
//   - U+0000 in a string (only as the escape \u0000: a raw NUL is not
//     JSON): PostgreSQL cannot store it in text, and C tools cut a string
//     there;
//   - a key twice in one object, at any depth: decoders disagree on which
//     value counts (ours took the last one);
//   - a lone surrogate escape (\ud800 not followed by a low surrogate, or a
//     low one alone): decoders turn it into U+FFFD, so different bodies
//     would be stored as the same plant, and an idempotent create would
//     answer a different body as a replay;
//   - objects and arrays nested deeper than MaxDepth: no request body
//     of the contract nests at all, and the bound keeps this walk's state
//     fixed (encoding/json alone allows 10,000 levels).
//
// jx walks the structure (the keys it compares are decoded, so "a" and
// "\u0061" are the same key). The escapes are read from the raw bytes by
// escapeProblem, because jx and encoding/json both decode a lone surrogate
// to U+FFFD without a word: the raw text is the only place the difference
// shows. A text without a backslash has no escape to read, which
// bytes.IndexByte tells at once; the common body costs one walk of jx and no
// allocation.
func CheckValues(data []byte) error {
	escapes := bytes.IndexByte(data, '\\') >= 0
	c := valueCheckers.Get().(*valueChecker)
	e := c.walk(data, escapes)
	c.reset()
	if cap(c.keys) <= maxPooledKeys && cap(c.arena) <= maxPooledArena {
		valueCheckers.Put(c)
	}
	if e != nil {
		return e
	}
	if escapes {
		// Every string value has been read; a bad escape left is in a key.
		if msg := escapeProblem(data); msg != "" {
			return &ValueError{Msg: "an object key " + msg}
		}
	}
	return nil
}

// MaxDepth is how deep objects and arrays may nest in a checked text.
const MaxDepth = 64

// valueChecker is checkValues' state, kept between bodies (valueCheckers)
// so that a walk allocates nothing.
type valueChecker struct {
	dec    jx.Decoder
	frames [MaxDepth]checkFrame // the containers the walk is in, outermost first
	depth  int                  // how many of frames are in use
	used   int                  // the most frames used since the last reset
	// keys are the keys read so far of the objects in frames, copied into
	// arena (no pointers: no work for the garbage collector, nothing of the
	// body kept).
	keys  []keySpan
	arena []byte
	// tables hold the hash tables of the open objects that have more than
	// linearKeys keys (wide ones), innermost last: wide of them are in use;
	// the others are kept to be reused.
	tables [MaxDepth][]int32
	wide   int // how many wide objects are open
	widest int // the most open at once since the last reset
	seed   maphash.Seed
}

// checkFrame is an object or array the walk is in.
type checkFrame struct {
	isObj bool
	obj   jx.ObjIter // obj: its members; Key is the current one's
	first int        // obj: the index in keys of its first key
	table []int32    // obj: when wide, its keys by hash (see find)
	index int        // arr: the index of the element being read
}

const (
	// linearKeys is how many keys of one object are compared one by one;
	// past it they are found in a hash table, so that an object of
	// thousands of keys costs linear time, not quadratic.
	linearKeys = 16
	// A checker whose keys grew past these (a wide body) is not kept for
	// the next body.
	maxPooledKeys  = 1024
	maxPooledArena = 16 << 10
	maxPooledTable = 4096
)

var valueCheckers = sync.Pool{New: func() any { return &valueChecker{seed: maphash.MakeSeed()} }}

// reset drops every reference to the last body.
func (c *valueChecker) reset() {
	c.dec.ResetBytes(nil)
	clear(c.frames[:c.used])
	c.depth, c.used, c.keys, c.arena = 0, 0, c.keys[:0], c.arena[:0]
	// The outermost wide object's table is kept when small; nested wide
	// objects are rare.
	if cap(c.tables[0]) > maxPooledTable {
		c.tables[0] = nil
	}
	if c.widest > 1 {
		clear(c.tables[1:c.widest])
	}
	c.wide, c.widest = 0, 0
}

// push enters an object or array: false when that is one level too deep.
func (c *valueChecker) push(f checkFrame) bool {
	if c.depth == MaxDepth {
		return false
	}
	c.frames[c.depth] = f
	c.depth++
	c.used = max(c.used, c.depth)
	return true
}

// walk reads the JSON value in data depth first; with escapes, it checks
// each string value's escapes.
func (c *valueChecker) walk(data []byte, escapes bool) error {
	d := &c.dec
	d.ResetBytes(data)
	for {
		// d is at a value: check a string, skip another scalar, or enter
		// an object or array.
		var err error
		switch d.Next() {
		case jx.Object:
			var it jx.ObjIter
			if it, err = d.ObjIter(); err == nil && !c.push(checkFrame{isObj: true, obj: it, first: len(c.keys)}) {
				return &ValueError{Msg: fmt.Sprintf("objects and arrays must not nest more than %d deep", MaxDepth)}
			}
		case jx.Array:
			// Arrays are read with Elem, which needs no state.
			if !c.push(checkFrame{index: -1}) {
				return &ValueError{Msg: fmt.Sprintf("objects and arrays must not nest more than %d deep", MaxDepth)}
			}
		case jx.String:
			if !escapes {
				err = d.Skip()
				break
			}
			var raw jx.Raw
			if raw, err = d.Raw(); err == nil {
				if msg := escapeProblem(raw); msg != "" {
					return &ValueError{Path: c.path(c.depth), Msg: msg}
				}
			}
		default:
			err = d.Skip()
		}
		if err != nil {
			return walkError(err)
		}

		// Move to the next value: the next member of the innermost
		// container that has one left.
		for {
			if c.depth == 0 {
				return nil
			}
			f := &c.frames[c.depth-1]
			if f.isObj {
				if f.obj.Next() {
					if e := c.addKey(f, f.obj.Key()); e != nil {
						return e
					}
					break
				}
				err = f.obj.Err()
				if f.table != nil {
					c.wide--
				}
				if f.first < len(c.keys) {
					c.arena = c.arena[:c.keys[f.first].start]
				}
				c.keys = c.keys[:f.first]
			} else {
				var more bool
				if more, err = d.Elem(); more {
					f.index++
					break
				}
			}
			if err != nil {
				return walkError(err)
			}
			*f = checkFrame{}
			c.depth--
		}
	}
}

// walkError is the answer to a jx error while walking a text that
// encoding/json found well-formed: it should not happen, and would the
// generated decoder (also jx) read such a body, these checks would have
// been skipped; so it is refused as malformed (ErrNotJSON).
func walkError(err error) error {
	return fmt.Errorf("%w: %w", ErrNotJSON, err)
}

// addKey records the next key of the object f and refuses it if f has it
// already.
func (c *valueChecker) addKey(f *checkFrame, key []byte) error {
	dup := false
	if len(c.keys)-f.first < linearKeys {
		for i := f.first; i < len(c.keys); i++ {
			if bytes.Equal(c.key(i), key) {
				dup = true
				break
			}
		}
	} else {
		if f.table == nil {
			c.wide++
			c.widest = max(c.widest, c.wide)
			f.table = c.table(c.wide-1, 4*linearKeys)
			c.rehash(f)
		} else if 2*(len(c.keys)-f.first+1) > len(f.table) {
			f.table = c.table(c.wide-1, 2*len(f.table))
			c.rehash(f)
		}
		dup = c.find(f, len(c.keys), key)
	}
	if dup {
		return &ValueError{Path: c.path(c.depth - 1), Msg: "duplicate key " + pathKey(key, true)}
	}
	start := len(c.arena)
	c.arena = append(c.arena, key...)
	c.keys = append(c.keys, keySpan{int32(start), int32(len(c.arena))})
	return nil
}

// keySpan is where a key is in valueChecker.arena.
type keySpan struct{ start, end int32 }

// key returns keys[i].
func (c *valueChecker) key(i int) []byte {
	s := c.keys[i]
	return c.arena[s.start:s.end]
}

// table returns an empty table of n slots (a power of two) for the i-th
// open wide object, from c.tables[i], which the next wide object at that
// depth reuses.
func (c *valueChecker) table(i, n int) []int32 {
	t := c.tables[i]
	if cap(t) < n {
		t = make([]int32, n)
		c.tables[i] = t
	}
	t = t[:n]
	clear(t)
	return t
}

// rehash puts every key of the wide object f into its (empty) table.
func (c *valueChecker) rehash(f *checkFrame) {
	for i := f.first; i < len(c.keys); i++ {
		c.find(f, i, c.key(i))
	}
}

// find reports whether f's table holds key; if not, it adds it as keys[i].
// The table is open addressing with linear probing, each slot an index in
// keys plus one (0: empty), at most half full.
func (c *valueChecker) find(f *checkFrame, i int, key []byte) bool {
	mask := uint64(len(f.table) - 1)
	for h := maphash.Bytes(c.seed, key) & mask; ; h = (h + 1) & mask {
		v := int(f.table[h]) - 1
		if v < 0 {
			f.table[h] = int32(i + 1)
			return false
		}
		if bytes.Equal(c.key(v), key) {
			return true
		}
	}
}

// path names where the walk is within the first n containers it is in, as
// "extra[1].a"; "" at the top.
func (c *valueChecker) path(n int) string {
	var b strings.Builder
	for i, f := range c.frames[:n] {
		switch {
		case !f.isObj:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(f.index))
			b.WriteByte(']')
		case i > 0:
			b.WriteByte('.')
			fallthrough
		default:
			b.WriteString(pathKey(f.obj.Key(), false))
		}
	}
	return b.String()
}

// maxKeyInMessage bounds how much of a key a message repeats.
const maxKeyInMessage = 64

// pathKey is a key as a message shows it: as it is when it is a plain name
// (letters, digits, _ and -) and quoted is false, else quoted; a long one
// cut short.
func pathKey(key []byte, quoted bool) string {
	cut := false
	if len(key) > maxKeyInMessage {
		n := maxKeyInMessage
		for n > 0 && !utf8.RuneStart(key[n]) {
			n--
		}
		key, cut = key[:n], true
	}
	plain := len(key) > 0 && !quoted
	for _, c := range key {
		if !(c == '_' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			plain = false
			break
		}
	}
	s := string(key)
	if !plain {
		s = strconv.Quote(s)
	}
	if cut {
		s += "…"
	}
	return s
}

// escapeProblem says what is wrong with the escapes in s, a part of a
// well-formed JSON text that starts outside an escape (a string's raw
// text with its quotes, or a whole text), or "" when nothing is: an
// escaped U+0000 or a lone surrogate. In well-formed JSON a backslash
// occurs only in a string and always starts an escape: \uXXXX, or a
// backslash and one character.
func escapeProblem(s []byte) string {
	for i := 0; i < len(s); {
		j := bytes.IndexByte(s[i:], '\\')
		if j < 0 {
			return ""
		}
		i += j
		if i+1 >= len(s) || s[i+1] != 'u' {
			i += 2
			continue
		}
		r, ok := hex4(s, i+2)
		switch {
		case !ok:
			return "" // not well-formed: not for this check to say
		case r == 0:
			return `must not contain U+0000 (\u0000)`
		case 0xd800 <= r && r < 0xdc00: // high surrogate: a low one must follow
			if i+7 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
				if lo, ok := hex4(s, i+8); ok && 0xdc00 <= lo && lo < 0xe000 {
					i += 12
					continue
				}
			}
			return fmt.Sprintf(`must not contain a lone surrogate (\u%04x not followed by a low surrogate \udc00-\udfff)`, r)
		case 0xdc00 <= r && r < 0xe000:
			return fmt.Sprintf(`must not contain a lone surrogate (\u%04x not after a high surrogate \ud800-\udbff)`, r)
		}
		i += 6
	}
	return ""
}

// hex4 reads the four hex digits at s[i:].
func hex4(s []byte, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
