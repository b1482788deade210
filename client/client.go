// Package client is a Go client for the Plant Store API. It wraps the code
// that ogen generates from api/openapi.yaml (package client/oapi) with bearer
// authentication, typed errors and pagination that follows the Link header:
//
//	c, err := client.New("http://127.0.0.1:8080", token)
//	p, err := c.CreatePlant(ctx, 1, "Monstera", nil)
//	for p, err := range c.AllPlants(ctx, client.ListOptions{}) { ... }
//
// Every error the API answers is an *Error (use errors.As) carrying the HTTP
// status and the contract's stable error code.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/ogen-go/ogen/validate"

	"github.com/plantstore/plantstore/client/oapi"
)

// Plant is a plant as the API answers it.
type Plant struct {
	ID   int64   `json:"id"`
	Name string  `json:"name"`
	Tag  *string `json:"tag,omitempty"` // nil when the plant has no tag
}

// ListOptions selects a page of plants. The zero value asks for the first
// page of all plants at the server's default page size.
type ListOptions struct {
	Limit int     // page size, 1..1000; 0 for the server's default (100)
	Tag   *string // only plants with exactly this tag
	After *int64  // only plants whose id is greater (the cursor)
}

// Page is one page of plants. Next is the query of the following page, taken
// from the answer's Link header; nil on the last page.
type Page struct {
	Plants []Plant
	Next   *ListOptions
}

// Error is an error answer of the API: Status is the HTTP status, Code the
// stable error code of the contract (Code/100 == Status) and Message its
// text. RetryAfter is the Retry-After of a 429 answer, otherwise 0.
type Error struct {
	Status     int
	Code       int32
	Message    string
	RetryAfter time.Duration
}

// Error implements the error interface.
func (e *Error) Error() string {
	return fmt.Sprintf("%s (HTTP %d, error %d)", e.Message, e.Status, e.Code)
}

// Client calls one Plant Store server with one bearer token. It is safe for
// concurrent use.
type Client struct {
	api *oapi.Client
}

// Option configures a Client.
type Option func(*config)

type config struct {
	http *http.Client
}

// WithHTTPClient makes the client send its requests with hc instead of the
// default (30 s timeout per request, keep-alive connections).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) { c.http = hc }
}

// New returns a client of the server at baseURL (e.g. http://127.0.0.1:8080)
// that authenticates with the bearer token.
func New(baseURL, token string, opts ...Option) (*Client, error) {
	if token == "" {
		return nil, errors.New("client: empty token")
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("client: server url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("client: server url %q: want http(s)://host[:port]", baseURL)
	}
	cfg := config{http: defaultHTTPClient()}
	for _, o := range opts {
		o(&cfg)
	}
	api, err := oapi.NewClient(strings.TrimRight(baseURL, "/"), bearer(token),
		oapi.WithClient(recorder{cfg.http}))
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return &Client{api: api}, nil
}

// defaultHTTPClient bounds every phase of a request: dial, TLS, waiting for
// the answer's headers, and the whole exchange.
func defaultHTTPClient() *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 20 * time.Second,
			ExpectContinueTimeout: time.Second,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConns:          100,
			MaxIdleConnsPerHost:   32,
		},
	}
}

// bearer is the generated client's SecuritySource: the same token for every
// operation.
type bearer string

func (b bearer) BearerAuth(context.Context, oapi.OperationName) (oapi.BearerAuth, error) {
	return oapi.BearerAuth{Token: string(b)}, nil
}

// exchange records the HTTP status and request URL of one call, which the
// generated response types do not carry.
type exchange struct {
	status int
	url    *url.URL
}

type exchangeKey struct{}

// recorder is the generated client's HTTP client: it notes the status and
// URL in the call's exchange, if the context has one.
type recorder struct{ hc *http.Client }

func (r recorder) Do(req *http.Request) (*http.Response, error) {
	resp, err := r.hc.Do(req)
	if x, ok := req.Context().Value(exchangeKey{}).(*exchange); ok {
		x.url = req.URL
		if err == nil {
			x.status = resp.StatusCode
		}
	}
	return resp, err
}

func withExchange(ctx context.Context) (context.Context, *exchange) {
	x := &exchange{}
	return context.WithValue(ctx, exchangeKey{}, x), x
}

// CreatePlant creates the plant id with name and tag (nil for none). Creating
// a plant again with the same content is not an error: the API answers the
// stored plant. Different content is an *Error with Code 40901.
func (c *Client) CreatePlant(ctx context.Context, id int64, name string, tag *string) (*Plant, error) {
	ctx, x := withExchange(ctx)
	req := &oapi.NewPlant{ID: id, Name: name}
	if tag != nil {
		req.Tag = oapi.NewOptString(*tag)
	}
	res, err := c.api.AddPlant(ctx, req)
	if err != nil {
		return nil, callError("create plant", x, err)
	}
	if p, ok := res.(*oapi.Plant); ok {
		return fromAPI(p), nil
	}
	return nil, answerError(x, res)
}

// GetPlant returns the plant id; an unknown id is an *Error with Code 40401.
func (c *Client) GetPlant(ctx context.Context, id int64) (*Plant, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.GetPlant(ctx, oapi.GetPlantParams{ID: id})
	if err != nil {
		return nil, callError("get plant", x, err)
	}
	if p, ok := res.(*oapi.Plant); ok {
		return fromAPI(p), nil
	}
	return nil, answerError(x, res)
}

// DeletePlant deletes the plant id; an unknown id is an *Error with Code 40401.
func (c *Client) DeletePlant(ctx context.Context, id int64) error {
	ctx, x := withExchange(ctx)
	res, err := c.api.DeletePlant(ctx, oapi.DeletePlantParams{ID: id})
	if err != nil {
		return callError("delete plant", x, err)
	}
	if _, ok := res.(*oapi.DeletePlantNoContent); ok {
		return nil
	}
	return answerError(x, res)
}

// ListPlants returns one page of plants, by id ascending, and the query of
// the next page from the Link header.
func (c *Client) ListPlants(ctx context.Context, opts ListOptions) (*Page, error) {
	ctx, x := withExchange(ctx)
	params := oapi.ListPlantsParams{}
	if opts.Limit != 0 {
		params.Limit = oapi.NewOptInt32(int32(opts.Limit))
	}
	if opts.Tag != nil {
		params.Tag = oapi.NewOptString(*opts.Tag)
	}
	if opts.After != nil {
		params.After = oapi.NewOptInt64(*opts.After)
	}
	res, err := c.api.ListPlants(ctx, params)
	if err != nil {
		return nil, callError("list plants", x, err)
	}
	ok, isOK := res.(*oapi.ListPlantsOKHeaders)
	if !isOK {
		return nil, answerError(x, res)
	}
	page := &Page{Plants: make([]Plant, len(ok.Response))}
	for i := range ok.Response {
		page.Plants[i] = *fromAPI(&ok.Response[i])
	}
	if link, has := ok.Link.Get(); has {
		next, err := nextPage(x.url, link)
		if err != nil {
			return nil, fmt.Errorf("client: list plants: %w", err)
		}
		page.Next = next
	}
	return page, nil
}

// AllPlants iterates over every plant that opts selects, from opts.After on,
// requesting page after page by following each answer's Link rel="next"
// until there is none. An error ends the iteration after it is yielded.
func (c *Client) AllPlants(ctx context.Context, opts ListOptions) iter.Seq2[Plant, error] {
	return func(yield func(Plant, error) bool) {
		next := &opts
		for next != nil {
			page, err := c.ListPlants(ctx, *next)
			if err != nil {
				yield(Plant{}, err)
				return
			}
			for _, p := range page.Plants {
				if !yield(p, nil) {
					return
				}
			}
			if page.Next != nil && next.After != nil && page.Next.After != nil && *page.Next.After <= *next.After {
				yield(Plant{}, fmt.Errorf("client: list plants: next link does not advance (after=%d)", *page.Next.After))
				return
			}
			next = page.Next
		}
	}
}

// nextPage resolves the Link header's rel="next" target against the request
// URL and reads its query into ListOptions; nil when no link is rel="next".
func nextPage(base *url.URL, header string) (*ListOptions, error) {
	target, ok, err := linkTarget(header, "next")
	if err != nil || !ok {
		return nil, err
	}
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("link header: %w", err)
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	q := u.Query()
	var opts ListOptions
	if s := q.Get("limit"); s != "" {
		if opts.Limit, err = strconv.Atoi(s); err != nil {
			return nil, fmt.Errorf("link header: limit %q: %w", s, err)
		}
	}
	if q.Has("tag") {
		tag := q.Get("tag")
		opts.Tag = &tag
	}
	if s := q.Get("after"); s != "" {
		after, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("link header: after %q: %w", s, err)
		}
		opts.After = &after
	}
	return &opts, nil
}

// linkTarget returns the target URI reference of the first link in an RFC
// 8288 Link header value whose rel parameter includes relType (compared
// case-insensitively): `<uri>; rel="next"; title="x", <uri2>; rel=prev`.
func linkTarget(header, relType string) (string, bool, error) {
	s := header
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return "", false, nil
		}
		if s[0] != '<' {
			return "", false, fmt.Errorf("link header %q: want '<' at %q", header, s)
		}
		end := strings.IndexByte(s, '>')
		if end < 0 {
			return "", false, fmt.Errorf("link header %q: unterminated '<'", header)
		}
		target := s[1:end]
		s = s[end+1:]
		matched := false
		// Parameters: *( OWS ";" OWS name [ OWS "=" OWS ( token / quoted-string ) ] ).
		for {
			s = strings.TrimLeft(s, " \t")
			if s == "" || s[0] == ',' {
				break
			}
			if s[0] != ';' {
				return "", false, fmt.Errorf("link header %q: want ';' or ',' at %q", header, s)
			}
			s = strings.TrimLeft(s[1:], " \t")
			i := strings.IndexAny(s, "=;, \t")
			if i < 0 {
				i = len(s)
			}
			name := strings.ToLower(s[:i])
			s = strings.TrimLeft(s[i:], " \t")
			var value string
			if s != "" && s[0] == '=' {
				s = strings.TrimLeft(s[1:], " \t")
				var err error
				if value, s, err = paramValue(s); err != nil {
					return "", false, fmt.Errorf("link header %q: %w", header, err)
				}
			}
			if name == "rel" {
				for _, r := range strings.Fields(value) {
					if strings.EqualFold(r, relType) {
						matched = true
					}
				}
			}
		}
		if matched {
			return target, true, nil
		}
	}
}

// paramValue reads a token or a quoted-string (with backslash escapes) from
// the start of s and returns it with the rest of s.
func paramValue(s string) (value, rest string, err error) {
	if s == "" || s[0] != '"' {
		i := strings.IndexAny(s, ";, \t")
		if i < 0 {
			i = len(s)
		}
		return s[:i], s[i:], nil
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case '"':
			return b.String(), s[i+1:], nil
		default:
			b.WriteByte(s[i])
		}
	}
	return "", "", errors.New("unterminated quoted string")
}

func fromAPI(p *oapi.Plant) *Plant {
	out := &Plant{ID: p.ID.Or(0), Name: p.Name}
	if tag, ok := p.Tag.Get(); ok {
		out.Tag = &tag
	}
	return out
}

var errorType = reflect.TypeFor[oapi.Error]()

// answerError turns a generated error response into an *Error. The generated
// code gives each (operation, status) its own named type over oapi.Error, or
// a *Headers wrapper for shared responses.
func answerError(x *exchange, res any) error {
	e := &Error{Status: x.status}
	var body oapi.Error
	switch r := res.(type) {
	case *oapi.UnauthorizedHeaders:
		body = r.Response
	case *oapi.ForbiddenHeaders:
		body = r.Response
	case *oapi.TooManyRequestsHeaders:
		body = r.Response
		if s, ok := r.RetryAfter.Get(); ok {
			e.RetryAfter = time.Duration(s) * time.Second
		}
	default:
		v := reflect.ValueOf(res)
		if v.Kind() != reflect.Pointer || v.IsNil() || !v.Elem().Type().ConvertibleTo(errorType) {
			return fmt.Errorf("client: unexpected answer %T (HTTP %d)", res, x.status)
		}
		body = v.Elem().Convert(errorType).Interface().(oapi.Error)
	}
	e.Code, e.Message = body.Error, body.Message
	if e.Status == 0 {
		e.Status = int(e.Code / 100)
	}
	return e
}

// callError wraps an error of the generated client. An answer whose status
// the contract does not list for the operation (a proxy's 502, a 405) still
// becomes an *Error, with the body's code if it is the contract's Error.
func callError(op string, x *exchange, err error) error {
	var unexpected *validate.UnexpectedStatusCodeError
	if errors.As(err, &unexpected) {
		e := &Error{Status: unexpected.StatusCode, Message: http.StatusText(unexpected.StatusCode)}
		if resp := unexpected.Payload; resp != nil && resp.Body != nil {
			var body struct {
				Error   int32  `json:"error"`
				Message string `json:"message"`
			}
			data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			if json.Unmarshal(data, &body) == nil && body.Error != 0 {
				e.Code, e.Message = body.Error, body.Message
			}
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
				e.RetryAfter = time.Duration(s) * time.Second
			}
		}
		return e
	}
	if x.status >= 400 {
		// An error status whose body did not decode (not JSON, say).
		return &Error{Status: x.status, Message: fmt.Sprintf("%s: %v", op, err)}
	}
	return fmt.Errorf("client: %s: %w", op, err)
}
