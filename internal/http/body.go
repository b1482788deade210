package http

import (
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/jsonvalue"
)

// prepareBody readies a request body for the generated decoder:
//   - a missing Content-Type is read as JSON, as the contract says;
//   - the body is checked only when the decoder first reads it, that is after
//     authentication, so an unauthenticated client learns nothing from it;
//   - then it must be at most plantstore.MaxBodyBytes (else 413), valid UTF-8
//     and one well-formed JSON value with nothing after it (else 400 40001,
//     saying on which line and column it goes wrong),
//     with no U+0000 in a string, no key twice in an object and no lone
//     surrogate escape (else 400 40002, see jsonvalue.CheckValues).
//
// The generated decoder then checks the value against the schema.
func (s *Server) prepareBody(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Content-Type") == "" {
		r.Header.Set("Content-Type", "application/json")
	}
	var b *checkedBody
	if info := requestInfoFrom(r.Context()); info != nil {
		b = &info.body // made with the request's other state
	} else {
		b = new(checkedBody)
	}
	*b = checkedBody{w: w, body: r.Body, length: r.ContentLength, limit: plantstore.MaxBodyBytes}
	if r.Method == http.MethodPost && r.URL.Path == batchPath {
		b.limit = BatchBodyBytes(s.batchMax())
	}
	r.Body = b
}

// DefaultBatchMax is the most plants a batch takes by default.
const DefaultBatchMax = 1000

// batchPath is the route of the batch create.
const batchPath = "/plants/batch"

// batchItemBytes is the room a batch's body has per plant: a NewPlant of
// the longest name and tag (256 and 64 code points, up to 4 bytes each in
// UTF-8) and its id and punctuation, with room for some escapes.
const batchItemBytes = 2048

// BatchBodyBytes is the largest body of a batch of at most max plants:
// plantstore.MaxBodyBytes plus batchItemBytes a plant.
func BatchBodyBytes(max int) int { return plantstore.MaxBodyBytes + max*batchItemBytes }

// batchMax is Server.BatchMax or its default.
func (s *Server) batchMax() int {
	if s.BatchMax > 0 {
		return s.BatchMax
	}
	return DefaultBatchMax
}

// checkedBody reads and checks the whole body on its first Read.
type checkedBody struct {
	w      http.ResponseWriter
	body   io.ReadCloser
	length int64
	limit  int // the largest body taken: plantstore.MaxBodyBytes, or a batch's

	loaded bool
	buf    *[]byte // from bodyBuffers, holding all; given back by release
	all    []byte  // the whole body, kept for the error mapper (requestError)
	rest   []byte  // what is left to read
	err    error
}

// bodyBuffers holds buffers for request bodies, which the generated
// decoder copies.
var bodyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func (b *checkedBody) Read(p []byte) (int, error) {
	if !b.loaded {
		b.loaded = true
		b.err = b.load()
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

// Close does nothing: net/http closes the request body after the handler.
// Closing it here, before the answer, would make net/http read what is
// left of a body not read (one larger than plantstore.MaxBodyBytes) before
// the 413 goes out.
func (b *checkedBody) Close() error { return nil }

// release gives the buffer back to bodyBuffers, once the request is
// answered (Server.route): until then the error mapper may read the body
// (checked) to say what in it does not match the schema.
func (b *checkedBody) release() {
	if b.buf != nil && cap(*b.buf) <= plantstore.MaxBodyBytes+1 {
		bodyBuffers.Put(b.buf)
	}
	b.buf, b.all, b.rest = nil, nil, nil
}

// checked is the whole body once read and checked, else nil.
func (b *checkedBody) checked() []byte {
	if !b.loaded || b.err != nil {
		return nil
	}
	return b.all
}

// load reads and checks the body into b.rest.
func (b *checkedBody) load() error {
	if b.length > int64(b.limit) {
		return errBodyTooLarge(b.limit)
	}
	r := io.Reader(b.body)
	if b.length < 0 {
		// Of unknown length (chunked): MaxBytesReader stops reading
		// past the limit. A known length at most the limit is all the
		// body net/http gives.
		r = http.MaxBytesReader(b.w, b.body, int64(b.limit))
	}
	b.buf = bodyBuffers.Get().(*[]byte)
	data, err := readAtMost(r, (*b.buf)[:0], b.limit)
	*b.buf = data[:0]
	b.all, b.rest = data, data
	switch {
	case err != nil && isMaxBytesError(err) || len(data) > b.limit:
		err = errBodyTooLarge(b.limit)
	case err != nil:
		err = plantstore.Errorf(plantstore.CodeMalformedJSON, "could not read the request body")
	default:
		err = checkBody(data)
	}
	if err != nil {
		b.release()
	}
	return err
}

// checkBody checks a whole request body with jsonvalue.Check (the checks
// the import commands' plant lines go through too): it must be valid UTF-8
// and one well-formed JSON value (else 400 40001), and that value must not
// hold what no operation takes although JSON allows it (a
// *jsonvalue.ValueError, 400 40002 naming the operation's schema: see
// requestError).
func checkBody(data []byte) error {
	err := jsonvalue.Check(data)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jsonvalue.ErrEmpty):
		return plantstore.Errorf(plantstore.CodeMalformedJSON, "request body is empty: send a JSON object")
	case errors.Is(err, jsonvalue.ErrNotUTF8):
		return plantstore.Errorf(plantstore.CodeMalformedJSON, "request body is not valid UTF-8")
	case errors.Is(err, jsonvalue.ErrNotJSON):
		msg := "request body is not valid JSON (or has data after the JSON value)"
		if se := (*jsonvalue.SyntaxError)(nil); errors.As(err, &se) {
			// Where: "request body is not valid JSON at line 1, column 16:
			// invalid character '}' looking for beginning of value".
			msg = "request body is not valid JSON at " + se.Error()
		}
		return &plantstore.Error{Code: plantstore.CodeMalformedJSON, Message: msg, Err: err}
	}
	return err
}

func isMaxBytesError(err error) bool {
	var maxErr *http.MaxBytesError
	return errors.As(err, &maxErr)
}

func errBodyTooLarge(limit int) error {
	return plantstore.Errorf(plantstore.CodeBodyTooLarge, "request body is larger than %d bytes", limit)
}

// readAtMost appends r's content to buf until EOF or until it holds more
// than limit bytes; an EOF is not an error.
func readAtMost(r io.Reader, buf []byte, limit int) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), limit+1)])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			return buf, nil
		case err != nil:
			return buf, err
		case len(buf) > limit:
			return buf, nil
		}
	}
}
