package clientcli

import (
	"encoding/json"
	"io"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// TextColumn is a string from the database or the server (plant names
// and tags, owners, webhook URLs and descriptions, attempt errors, ids) as
// the text and table output of every command shows it: as it is when it
// is valid UTF-8 of printable characters only (unicode.IsPrint: letters,
// marks, numbers, punctuation, symbols and the ASCII space) and does not
// start with a double quote; otherwise quoted in Go syntax (strconv.Quote,
// which escapes the rest: \x1b, \a, \t, \n, \u202e, invalid bytes as
// \xff). So no stored string can reach the terminal as a control sequence
// (retitle it, clear it, move the cursor), add or hide a row or a column,
// reorder text (bidirectional overrides), or pass for another (a name that
// is itself in quotes is quoted too). JSON output needs none of this: its
// encoder escapes control characters already.
func TextColumn(s string) string {
	if s == "" {
		return s
	}
	printable := s[0] != '"' && utf8.ValidString(s)
	for _, r := range s {
		if !printable {
			break
		}
		printable = unicode.IsPrint(r)
	}
	if printable {
		return s
	}
	return strconv.Quote(s)
}

// WriteJSON writes v as indented JSON: the json output of every command.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
