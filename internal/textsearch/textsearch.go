// Package textsearch turns text into the words plant search matches: it
// folds case and accents and splits on anything that is not a letter or a
// digit. Both storage backends index a plant's words with it, and the plant
// service turns a search query into words with it, so a query means the same
// on SQLite and on PostgreSQL.
package textsearch

import (
	"bytes"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// fold lower-cases text, decomposes it (NFKD: "é" is "e" and a combining
// accent, "ﬁ" is "fi"), drops the combining marks and lower-cases what the
// decomposition made. Lower-casing comes first too: "İ" lower-cases to "i"
// and a combining dot, which then goes.
func fold(s string) string {
	t := transform.Chain(norm.NFKD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	out, _, err := transform.String(t, strings.ToLower(s))
	if err != nil {
		return strings.ToLower(s) // only on invalid UTF-8, which the service refuses first
	}
	// Decomposition can make upper case again ("℃" is "°C"): lower once more.
	return strings.ToLower(out)
}

// isSeparator reports whether r separates words: anything but a letter or a
// digit (a combining mark inside a word is gone after fold).
func isSeparator(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// isASCIIWord reports whether s is made of ASCII letters and digits only:
// the common case, which needs no Unicode folding.
func isASCIIWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == ' ') {
			return false
		}
	}
	return true
}

// Words returns the words of s in the order they appear, folded, without
// repeats: "Café au LAIT, café!" is [cafe au lait].
func Words(s string) []string {
	if !isASCIIWord(s) {
		s = fold(s)
	} else {
		s = strings.ToLower(s)
	}
	var out []string
	for _, w := range strings.FieldsFunc(s, isSeparator) {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// Document returns the words a plant with name and tag (nil: none) is
// found by, joined by single spaces, with a space at each end: the text both
// backends index, and which a word prefix w matches when the text contains
// " "+w. It is "" when name and tag have no word.
func Document(name string, tag *string) string {
	words := Words(name)
	if tag != nil {
		for _, w := range Words(*tag) {
			if !slices.Contains(words, w) {
				words = append(words, w)
			}
		}
	}
	if len(words) == 0 {
		return ""
	}
	return " " + strings.Join(words, " ") + " "
}

// AppendWords appends to b the words of Document(name, tag) without its
// outer spaces: what a backend indexes. Names and tags of ASCII only (most
// of them) take a path that allocates nothing: their words are their runs
// of ASCII letters and digits, lower-cased, as Words makes them.
func AppendWords(b []byte, name string, tag *string) []byte {
	if !isASCII(name) || tag != nil && !isASCII(*tag) {
		return append(b, strings.Trim(Document(name, tag), " ")...)
	}
	start := len(b)
	b = appendASCIIWords(b, start, name)
	if tag != nil {
		b = appendASCIIWords(b, start, *tag)
	}
	return b
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// appendASCIIWords appends to b the words of s (ASCII) that b[start:], a
// list of words, does not hold yet.
func appendASCIIWords(b []byte, start int, s string) []byte {
	for i := 0; i < len(s); {
		if !isASCIIAlnum(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isASCIIAlnum(s[j]) {
			j++
		}
		mark := len(b)
		if mark > start {
			b = append(b, ' ')
		}
		for k := i; k < j; k++ {
			c := s[k]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b = append(b, c)
		}
		word := b[mark:]
		if mark > start {
			word = word[1:]
		}
		if hasWord(b[start:mark], word) {
			b = b[:mark]
		}
		i = j
	}
	return b
}

func isASCIIAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// hasWord reports whether list, words separated by single spaces, holds w.
func hasWord(list, w []byte) bool {
	for len(list) > 0 {
		i := bytes.IndexByte(list, ' ')
		if i < 0 {
			return bytes.Equal(list, w)
		}
		if bytes.Equal(list[:i], w) {
			return true
		}
		list = list[i+1:]
	}
	return false
}
