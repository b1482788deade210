// Package client is a Go client for the Plant Store API, every operation of
// its contract (plants, webhook subscriptions, events and tokens). It wraps
// the code ogen generates from api/openapi.yaml (package client/oapi) with
// bearer authentication, typed errors, conditional requests (ETag, If-Match)
// and iterators that follow the Link header from page to page:
//
//	c, err := client.New("http://127.0.0.1:8080", token)
//	p, err := c.CreatePlant(ctx, client.NewPlant{ID: 1, Name: "Monstera"})
//	p, err = c.GetPlant(ctx, 1, client.GetPlantOptions{})
//	p, err = c.UpdatePlant(ctx, 1, client.PlantPatch{Name: &name}, client.UpdatePlantOptions{IfMatch: p.ETag})
//	for p, err := range c.Plants(ctx, client.ListPlantsOptions{Q: "monstera", Sort: "-created_at"}) { ... }
//	w, err := c.CreateWebhook(ctx, client.NewWebhook{URL: "https://example.com/hook"})
//	for ev, err := range c.TailEvents(ctx, lastSeq, client.TailOptions{}) { ... }
//	tok, err := c.CreateToken(ctx, client.NewToken{Scopes: []string{"plants:read"}, TTL: 24 * time.Hour})
//
// Optional parameters are an options struct whose zero value means none.
// Every error the API answers is an *Error (errors.As) with the HTTP status
// and the contract's error code. TailEvents reads the event stream with a
// Server-Sent Events reader of its own, reconnecting with Last-Event-ID;
// the HEAD operations (HeadPlant, HeadPlants, ...) answer the GET's headers.
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
	// CreatedAt is when the plant was created and UpdatedAt when its name
	// or tag last changed (CreatedAt until then), in UTC to the
	// microsecond; zero from a server that does not send them.
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	// ETag is the strong entity tag of the plant's content, as GetPlant
	// and UpdatePlant answer it (empty from CreatePlant and lists): the
	// IfMatch of a later change, the IfNoneMatch of a later GetPlant.
	ETag string `json:"-"`
}

// ListPlantsOptions selects a page of plants. The zero value asks for the
// first page of all plants, by id, at the server's default page size; every
// filter given applies.
type ListPlantsOptions struct {
	Limit int // page size, 1..1000; 0 for the server's default (100)
	// Q searches: only plants whose name or tag has, for every word of Q,
	// a word that starts with it, ignoring case and accents ("mon del"
	// finds "Monstera deliciosa"). Every character is data, never syntax.
	// At most 200 characters and 16 words; "" for no search.
	Q string
	// Tags keeps only plants with exactly one of these tags; nil for any.
	Tags []string
	// CreatedAfter and CreatedBefore keep only plants created strictly
	// after and strictly before them; the zero time for no bound. They are
	// sent to the nanosecond, in UTC.
	CreatedAfter, CreatedBefore time.Time
	// Sort is the order: "id", "name" (by Unicode code point) or
	// "created_at", or one of these with a leading "-" for descending; ties
	// are broken by id in the same direction. "" for the server's default,
	// "id".
	Sort string
	// After is the opaque cursor of the page's position, as Next carries it
	// from the previous page's Link header; it is valid only with the same
	// Q, Tags, CreatedAfter, CreatedBefore and Sort (else an *Error with
	// Status 400). A plant id in decimal is taken too, with Sort "" or "id":
	// the plants whose id is greater. "" for the first page.
	After string
	// Count asks for the number of plants the query matches (not the page),
	// in PlantPage.Total: "exact", or "estimated" for a figure that costs
	// the server little at any size (exact up to 1,000 matches). "" asks
	// for none, and nothing is counted.
	Count string
}

// PlantPage is one page of plants. Next is the query of the following page,
// taken from the answer's Link header, with Count "" (the total is the
// query's, asked once; set Next.Count to ask again); nil on the last page.
type PlantPage struct {
	Plants []Plant
	Next   *ListPlantsOptions
	// Total is the number of plants the query matches when
	// ListPlantsOptions.Count asked for it, else nil; TotalEstimated says
	// that the server answered an estimate (Count "estimated" beyond the
	// matches it counts exactly).
	Total          *int64
	TotalEstimated bool
}

// Error is an error answer of the API: Status is the HTTP status, Code the
// stable error code of the contract (Code/100 == Status) and Message its
// text. RetryAfter is the Retry-After of a 429 answer, otherwise 0.
type Error struct {
	Status     int
	Code       int32
	Message    string
	RetryAfter time.Duration
	// Index is the position of the item at fault of a refused
	// CreatePlants batch (the answer's "index"); nil otherwise.
	Index *int
}

// Error implements the error interface.
func (e *Error) Error() string {
	return fmt.Sprintf("%s (HTTP %d, error %d)", e.Message, e.Status, e.Code)
}

// Client calls one Plant Store server with one bearer token. It is safe for
// concurrent use.
type Client struct {
	api *oapi.Client
	// base, token and http serve the requests the generated client cannot
	// make (the event stream).
	base  string
	token string
	http  *http.Client
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
	return &Client{api: api, base: strings.TrimRight(baseURL, "/"), token: token, http: cfg.http}, nil
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
	header http.Header // the answer's headers (HEAD answers carry nothing else)
}

type exchangeKey struct{}

// recorder is the generated client's HTTP client: it notes the status and
// URL in the call's exchange, if the context has one.
type recorder struct{ hc *http.Client }

func (r recorder) Do(req *http.Request) (*http.Response, error) {
	x, hasX := req.Context().Value(exchangeKey{}).(*exchange)
	resp, err := r.hc.Do(req)
	if hasX {
		x.url = req.URL
		if err == nil {
			x.status = resp.StatusCode
			x.header = resp.Header
		}
	}
	return resp, err
}

func withExchange(ctx context.Context) (context.Context, *exchange) {
	x := &exchange{}
	return context.WithValue(ctx, exchangeKey{}, x), x
}

// NewPlant is a plant to create.
type NewPlant struct {
	ID   int64   // any int64, chosen by the caller
	Name string  // 1 to 256 characters
	Tag  *string // at most 64 characters; nil for none
}

// CreatePlant creates the plant p and returns it as stored. Creating a plant
// again with the same content is not an error: the API answers the stored
// plant. Different content is an *Error with Code 40901.
func (c *Client) CreatePlant(ctx context.Context, p NewPlant) (*Plant, error) {
	ctx, x := withExchange(ctx)
	req := &oapi.NewPlant{ID: p.ID, Name: p.Name}
	if p.Tag != nil {
		req.Tag = oapi.NewOptString(*p.Tag)
	}
	res, err := c.api.AddPlant(ctx, req)
	if err != nil {
		return nil, callError("create plant", x, err)
	}
	if p, ok := res.(*oapi.PlantHeaders); ok {
		return fromAPI(&p.Response, ""), nil
	}
	return nil, answerError(x, res)
}

// CreatePlants creates plants in one request (POST /plants/batch) and one
// transaction: all of them or none. Each is taken as CreatePlant takes
// one (a plant identical to the stored one of its id is a replay). It
// returns the plants as stored, in plants' order. A refused batch is an
// *Error whose Index names the item at fault when one is: 400 (error
// 40002) for an invalid item or an id given twice, 409 (40901) for an id
// stored with another name or tag, 413 (41301) for more plants than the
// server's --batch-max. A server without the operation answers 405 (an
// older plantstore) or 404: the caller may fall back to CreatePlant.
func (c *Client) CreatePlants(ctx context.Context, plants []NewPlant) ([]*Plant, error) {
	ctx, x := withExchange(ctx)
	req := &oapi.NewPlants{Plants: make([]oapi.NewPlant, len(plants))}
	for i, p := range plants {
		req.Plants[i] = oapi.NewPlant{ID: p.ID, Name: p.Name}
		if p.Tag != nil {
			req.Plants[i].Tag = oapi.NewOptString(*p.Tag)
		}
	}
	res, err := c.api.AddPlants(ctx, req)
	if err != nil {
		return nil, callError("create plants", x, err)
	}
	b, ok := res.(*oapi.PlantBatchHeaders)
	if !ok {
		return nil, answerError(x, res)
	}
	out := make([]*Plant, len(b.Response.Plants))
	for i := range b.Response.Plants {
		out[i] = fromAPI(&b.Response.Plants[i], "")
	}
	return out, nil
}

// GetPlantOptions are the optional parameters of GetPlant. The zero value
// asks for the plant unconditionally.
type GetPlantOptions struct {
	// IfNoneMatch makes the request conditional: if the plant's current
	// ETag is one of these (a Plant.ETag, or a comma-separated list),
	// GetPlant returns ErrNotModified and no plant.
	IfNoneMatch string
}

// ErrNotModified is the error of a conditional GetPlant whose plant still
// has an ETag of GetPlantOptions.IfNoneMatch (HTTP 304).
var ErrNotModified = errors.New("client: not modified")

// GetPlant returns the plant id, with its ETag; an unknown id is an *Error
// with Code 40401.
func (c *Client) GetPlant(ctx context.Context, id int64, opts GetPlantOptions) (*Plant, error) {
	ctx, x := withExchange(ctx)
	params := oapi.GetPlantParams{ID: id}
	if opts.IfNoneMatch != "" {
		params.IfNoneMatch = oapi.NewOptString(opts.IfNoneMatch)
	}
	res, err := c.api.GetPlant(ctx, params)
	if err != nil {
		return nil, callError("get plant", x, err)
	}
	switch r := res.(type) {
	case *oapi.GetPlantOKHeaders:
		return fromAPI(&r.Response, r.ETag.Or("")), nil
	case *oapi.NotModified:
		return nil, ErrNotModified
	}
	return nil, answerError(x, res)
}

// PlantPatch is a change of a plant: each non-nil field is set, the others
// keep their value. A zero PlantPatch changes nothing.
type PlantPatch struct {
	Name *string // the new name, 1 to 256 characters
	Tag  *string // the new tag, at most 64 characters
	// RemoveTag removes the plant's tag (the merge patch `"tag": null`);
	// it excludes Tag.
	RemoveTag bool
}

// UpdatePlantOptions are the optional parameters of UpdatePlant.
type UpdatePlantOptions struct {
	// IfMatch makes the change conditional: it is made only if the plant's
	// current ETag is one of these (a Plant.ETag from GetPlant or
	// UpdatePlant, a comma-separated list, or "*"), else UpdatePlant returns
	// an *Error with Status 412 and Code 41201 and nothing changes.
	IfMatch string
}

// UpdatePlant changes the plant id as patch says (a JSON merge patch, RFC
// 7396) and returns it as changed, with its new ETag. An unknown id is an
// *Error with Code 40401, an invalid name or tag one with Code 40002.
func (c *Client) UpdatePlant(ctx context.Context, id int64, patch PlantPatch, opts UpdatePlantOptions) (*Plant, error) {
	if patch.RemoveTag && patch.Tag != nil {
		return nil, errors.New("client: update plant: PlantPatch with both Tag and RemoveTag")
	}
	ctx, x := withExchange(ctx)
	req := oapi.UpdatePlantApplicationMergePatchJSON{}
	if patch.Name != nil {
		req.Name = oapi.NewOptString(*patch.Name)
	}
	switch {
	case patch.Tag != nil:
		req.Tag = oapi.NewOptNilString(*patch.Tag)
	case patch.RemoveTag:
		req.Tag.SetToNull()
	}
	params := oapi.UpdatePlantParams{ID: id}
	if opts.IfMatch != "" {
		params.IfMatch = oapi.NewOptString(opts.IfMatch)
	}
	res, err := c.api.UpdatePlant(ctx, &req, params)
	if err != nil {
		return nil, callError("update plant", x, err)
	}
	if r, ok := res.(*oapi.GetPlantOKHeaders); ok {
		return fromAPI(&r.Response, r.ETag.Or("")), nil
	}
	return nil, answerError(x, res)
}

// DeletePlantOptions are the optional parameters of DeletePlant.
type DeletePlantOptions struct {
	// IfMatch makes the delete conditional, as UpdatePlantOptions.IfMatch.
	IfMatch string
}

// DeletePlant deletes the plant id; an unknown id is an *Error with Code
// 40401.
func (c *Client) DeletePlant(ctx context.Context, id int64, opts DeletePlantOptions) error {
	ctx, x := withExchange(ctx)
	params := oapi.DeletePlantParams{ID: id}
	if opts.IfMatch != "" {
		params.IfMatch = oapi.NewOptString(opts.IfMatch)
	}
	res, err := c.api.DeletePlant(ctx, params)
	if err != nil {
		return callError("delete plant", x, err)
	}
	if _, ok := res.(*oapi.DeletePlantNoContent); ok {
		return nil
	}
	return answerError(x, res)
}

// ListPlants returns one page of the plants opts selects, in its Sort
// order, the query of the next page from the Link header, and the total
// when opts.Count asks for it.
func (c *Client) ListPlants(ctx context.Context, opts ListPlantsOptions) (*PlantPage, error) {
	params, err := opts.params()
	if err != nil {
		return nil, fmt.Errorf("client: list plants: %w", err)
	}
	ctx, x := withExchange(ctx)
	res, err := c.api.ListPlants(ctx, params)
	if err != nil {
		return nil, callError("list plants", x, err)
	}
	ok, isOK := res.(*oapi.ListPlantsOKHeaders)
	if !isOK {
		return nil, answerError(x, res)
	}
	page := &PlantPage{Plants: make([]Plant, len(ok.Response))}
	page.Total, page.TotalEstimated = total(ok.XTotalCount, ok.PreferenceApplied)
	for i := range ok.Response {
		page.Plants[i] = *fromAPI(&ok.Response[i], "")
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

// params are the parameters of opts (HEAD /plants takes the same).
func (opts ListPlantsOptions) params() (oapi.ListPlantsParams, error) {
	var params oapi.ListPlantsParams
	if opts.Limit != 0 {
		params.Limit = oapi.NewOptInt32(int32(opts.Limit))
	}
	if opts.Q != "" {
		params.Q = oapi.NewOptString(opts.Q)
	}
	params.Tag = opts.Tags
	if !opts.CreatedAfter.IsZero() {
		params.CreatedAfter = oapi.NewOptDateTime(opts.CreatedAfter.UTC())
	}
	if !opts.CreatedBefore.IsZero() {
		params.CreatedBefore = oapi.NewOptDateTime(opts.CreatedBefore.UTC())
	}
	if opts.Sort != "" {
		// Not checked here: the server names an unknown sort in its 400.
		params.Sort = oapi.NewOptPlantSort(oapi.PlantSort(opts.Sort))
	}
	if opts.After != "" {
		params.After = oapi.NewOptString(opts.After)
	}
	switch opts.Count {
	case "":
	case "exact", "estimated":
		params.Prefer = oapi.NewOptString("count=" + opts.Count)
	default:
		return params, fmt.Errorf(`count %q: want "exact", "estimated" or ""`, opts.Count)
	}
	return params, nil
}

// total reads X-Total-Count and Preference-Applied: the total, nil when
// the answer has none, and whether it is an estimate.
func total(count oapi.OptInt64, applied oapi.OptPreferenceApplied) (*int64, bool) {
	n, ok := count.Get()
	if !ok {
		return nil, false
	}
	return &n, applied.Or("") == oapi.PreferenceAppliedCountEstimated
}

// Plants iterates over every plant that opts selects, from opts.After on,
// in opts.Sort's order, requesting page after page by following each
// answer's Link rel="next" until there is none; breaking out of the loop
// stops the requests. opts.Count is ignored (ListPlants answers the
// total). An error ends the iteration after it is yielded.
func (c *Client) Plants(ctx context.Context, opts ListPlantsOptions) iter.Seq2[Plant, error] {
	opts.Count = ""
	return paginate(opts, func(o ListPlantsOptions) ([]Plant, *ListPlantsOptions, error) {
		page, err := c.ListPlants(ctx, o)
		if err != nil {
			return nil, nil, err
		}
		if n := page.Next; n != nil && n.After == o.After {
			return nil, nil, fmt.Errorf("client: list plants: next link does not move the cursor after=%q", o.After)
		}
		return page.Plants, page.Next, nil
	})
}

// paginate iterates over the items of the pages that list returns, from
// the first query on, each page's next query (nil after the last) leading
// to the following one.
func paginate[T, Q any](first Q, list func(Q) ([]T, *Q, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for next := &first; next != nil; {
			items, following, err := list(*next)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			next = following
		}
	}
}

// nextPage resolves the Link header's rel="next" target against the request
// URL and reads its query into ListPlantsOptions (Count stays ""); nil when
// no link is rel="next".
func nextPage(base *url.URL, header string) (*ListPlantsOptions, error) {
	q, err := nextQuery(base, header)
	if err != nil || q == nil {
		return nil, err
	}
	opts := ListPlantsOptions{Q: q.Get("q"), Tags: q["tag"], Sort: q.Get("sort"), After: q.Get("after")}
	if opts.Limit, err = limitParam(q); err != nil {
		return nil, err
	}
	for _, t := range []struct {
		name string
		to   *time.Time
	}{{"created_after", &opts.CreatedAfter}, {"created_before", &opts.CreatedBefore}} {
		s := q.Get(t.name)
		if s == "" {
			continue
		}
		if *t.to, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, fmt.Errorf("link header: %s %q: %w", t.name, s, err)
		}
	}
	return &opts, nil
}

// nextQuery returns the query of the Link header's rel="next" target,
// resolved against the request URL; nil when no link is rel="next".
func nextQuery(base *url.URL, header string) (url.Values, error) {
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
	return u.Query(), nil
}

// limitParam reads the limit of a next link's query; 0 when absent.
func limitParam(q url.Values) (int, error) {
	s := q.Get("limit")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("link header: limit %q: %w", s, err)
	}
	return n, nil
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

func fromAPI(p *oapi.Plant, etag string) *Plant {
	out := &Plant{ID: p.ID, Name: p.Name, ETag: etag, CreatedAt: p.CreatedAt.Or(time.Time{}), UpdatedAt: p.UpdatedAt.Or(time.Time{})}
	if tag, ok := p.Tag.Get(); ok {
		out.Tag = &tag
	}
	return out
}

var (
	errorType      = reflect.TypeFor[oapi.Error]()
	batchErrorType = reflect.TypeFor[oapi.BatchError]()
)

// answerError turns a generated error response into an *Error. The generated
// code gives each (operation, status) its own named type over oapi.Error, or
// a *Headers wrapper (its Response field the oapi.Error, a RetryAfter field
// with the Retry-After header) for responses shared by operations.
func answerError(x *exchange, res any) error {
	e := &Error{Status: x.status}
	v := reflect.ValueOf(res)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("client: unexpected answer %T (HTTP %d)", res, x.status)
	}
	v = v.Elem()
	var body oapi.Error
	switch {
	case v.Type().ConvertibleTo(batchErrorType):
		be := v.Convert(batchErrorType).Interface().(oapi.BatchError)
		body = oapi.Error{Error: be.Error, Message: be.Message}
		if i, ok := be.Index.Get(); ok {
			index := int(i)
			e.Index = &index
		}
	case v.Type().ConvertibleTo(errorType):
		body = v.Convert(errorType).Interface().(oapi.Error)
	case v.FieldByName("Response").IsValid() && v.FieldByName("Response").Type() == errorType:
		body = v.FieldByName("Response").Interface().(oapi.Error)
		if f := v.FieldByName("RetryAfter"); f.IsValid() && f.Type() == reflect.TypeFor[oapi.OptInt]() {
			if s, ok := f.Interface().(oapi.OptInt).Get(); ok {
				e.RetryAfter = time.Duration(s) * time.Second
			}
		}
	default:
		return fmt.Errorf("client: unexpected answer %T (HTTP %d)", res, x.status)
	}
	e.Code, e.Message = body.Error, body.Message
	if e.Status == 0 {
		e.Status = int(e.Code / 100)
	}
	return e
}

// responseError is the *Error of an answer with an error status: the body's
// code and message when it is the contract's Error, its Retry-After.
func responseError(resp *http.Response) *Error {
	e := &Error{Status: resp.StatusCode, Message: http.StatusText(resp.StatusCode)}
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
	return e
}

// callError wraps an error of the generated client. An answer whose status
// the contract does not list for the operation (a proxy's 502, a 405) still
// becomes an *Error, with the body's code if it is the contract's Error.
func callError(op string, x *exchange, err error) error {
	var unexpected *validate.UnexpectedStatusCodeError
	if errors.As(err, &unexpected) {
		if resp := unexpected.Payload; resp != nil && resp.Body != nil {
			return responseError(resp)
		}
		return &Error{Status: unexpected.StatusCode, Message: http.StatusText(unexpected.StatusCode)}
	}
	if x.status >= 400 {
		// An error status whose body did not decode (not JSON, say).
		return &Error{Status: x.status, Message: fmt.Sprintf("%s: %v", op, err)}
	}
	return fmt.Errorf("client: %s: %w", op, err)
}
