package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/plantstore/plantstore"
)

// prepareBody readies a request body for the generated decoder:
//   - a missing Content-Type is read as JSON, as the contract says;
//   - the body is checked only when the decoder first reads it, that is after
//     authentication, so an unauthenticated client learns nothing from it;
//   - then it must be at most plantstore.MaxBodyBytes (else 413), valid UTF-8
//     and one well-formed JSON value with nothing after it (else 400).
//
// The generated decoder then checks the value against the schema.
func (s *Server) prepareBody(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Content-Type") == "" {
		r.Header.Set("Content-Type", "application/json")
	}
	r.Body = &checkedBody{w: w, body: r.Body, length: r.ContentLength}
}

// checkedBody reads and checks the whole body on its first Read.
type checkedBody struct {
	w      http.ResponseWriter
	body   io.ReadCloser
	length int64

	loaded bool
	rest   []byte
	err    error
}

func (b *checkedBody) Read(p []byte) (int, error) {
	if !b.loaded {
		b.loaded = true
		b.rest, b.err = b.load()
	}
	if b.err != nil {
		return 0, b.err
	}
	if len(b.rest) == 0 {
		return 0, io.EOF
	}
	n := copy(p, b.rest)
	b.rest = b.rest[n:]
	return n, nil
}

func (b *checkedBody) Close() error { return b.body.Close() }

func (b *checkedBody) load() ([]byte, error) {
	tooLarge := plantstore.Errorf(plantstore.CodeBodyTooLarge, "request body is larger than %d bytes", plantstore.MaxBodyBytes)
	if b.length > plantstore.MaxBodyBytes {
		return nil, tooLarge
	}
	// MaxBytesReader also tells net/http to close the connection after
	// the answer, so the rest of an oversized body is never read.
	data, err := io.ReadAll(http.MaxBytesReader(b.w, b.body, plantstore.MaxBodyBytes))
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		return nil, tooLarge
	case err != nil:
		return nil, plantstore.Errorf(plantstore.CodeMalformedJSON, "could not read the request body")
	case len(bytes.TrimSpace(data)) == 0:
		return nil, plantstore.Errorf(plantstore.CodeMalformedJSON, "request body is empty: send a JSON object")
	case !utf8.Valid(data):
		return nil, plantstore.Errorf(plantstore.CodeMalformedJSON, "request body is not valid UTF-8")
	case !json.Valid(data):
		return nil, plantstore.Errorf(plantstore.CodeMalformedJSON, "request body is not valid JSON (or has data after the JSON value)")
	}
	return data, nil
}
