// Package apischema says why a JSON request body does not match its schema
// in the served contract (api.JSON), in the API's words: "name: must have
// at least 1 character; tag: must be a string (leave it out for no tag)".
// A JSON Schema validator (santhosh-tekuri/jsonschema, the 2020-12 dialect
// of OpenAPI 3.1) compiled from the document decides what is wrong; this
// package only words it. It runs on the error path: the generated decoder
// (internal/http/oapi) takes or refuses a body, and a refused one is
// explained here, by the API and by the import commands alike.
package apischema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/plantstore/plantstore/api"
)

// docURL names the contract among the validator's resources (an address
// the validator never loads: the document is given to it).
const docURL = "urn:plantstore:openapi.json"

// Body is the schema of a JSON request body of the contract.
type Body struct {
	Name string // the component's name: "NewPlant"
	// Patch: the operation takes a JSON merge patch
	// (application/merge-patch+json), where a member left out is kept.
	Patch bool

	c      *contract
	schema *jsonschema.Schema
	top    *rule // the body's own rules, $ref and allOf merged
}

// contract is what this package reads of the served document, once.
type contract struct {
	doc    any                         // the document, as the validator reads it
	bodies map[string]*Body            // by operationId
	params map[string]map[string]*rule // by operationId, then "in:name" (header names canonical)
	byName map[string]*Body            // by component name
	rules  sync.Map                    // schema location -> *rule, read on first use
}

// load reads and compiles the served document once.
var load = sync.OnceValues(func() (*contract, error) { return read(api.JSON) })

// Load reads the served contract and compiles its request body schemas;
// the server calls it at start-up so that a contract it cannot read stops
// it there. Every other function loads it on first use.
func Load() error {
	_, err := load()
	return err
}

// ForOperation is the JSON request body schema of an operation (by its
// operationId), or nil when it takes none.
func ForOperation(operationID string) (*Body, error) {
	c, err := load()
	if err != nil {
		return nil, err
	}
	return c.bodies[operationID], nil
}

// Component is the body schema of a component schema used as a request
// body ("NewPlant"), or an error when no operation takes it.
func Component(name string) (*Body, error) {
	c, err := load()
	if err != nil {
		return nil, err
	}
	b := c.byName[name]
	if b == nil {
		return nil, fmt.Errorf("apischema: no request body is a %s", name)
	}
	return b, nil
}

// Param says what a parameter of an operation must be ("must be an
// integer from 1 to 1000"), "" when the contract has no such parameter.
func Param(operationID, in, name string) string {
	c, err := load()
	if err != nil {
		return ""
	}
	if in == "header" {
		name = http.CanonicalHeaderKey(name)
	}
	r := c.params[operationID][in+":"+name]
	if r == nil {
		return ""
	}
	if r.Type == "string" && r.Pattern != "" && len(r.Enum) == 0 {
		return r.patternRule()
	}
	return r.mustBe()
}

// ErrNotObject is Explain's answer to a body that is not a JSON object.
var ErrNotObject = errors.New("the body must be a JSON object")

// Explain decodes data, one well-formed JSON value (jsonvalue.Check made
// sure of it), and says what in it does not match b: each fault names where
// ("name", "types[1]") and what the value there must be, at most
// maxProblems of them; "" when nothing does. A body that is not an object
// is ErrNotObject.
func (b *Body) Explain(data []byte) (string, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("apischema: %w", err)
	}
	return b.explainValue(v)
}

// explainValue is Explain of a value already decoded by
// jsonschema.UnmarshalJSON (numbers as json.Number).
func (b *Body) explainValue(v any) (string, error) {
	if _, ok := v.(map[string]any); !ok {
		return "", ErrNotObject
	}
	err := b.schema.Validate(v)
	if err == nil {
		return "", nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "", fmt.Errorf("apischema: %w", err)
	}
	return b.c.word(b, v, ve), nil
}

// read reads a document: its operations' application/json request bodies
// (compiled) and their parameters' schemas.
func read(data []byte) (*contract, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("apischema: read the contract: %w", err)
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	comp.AssertFormat()
	for _, f := range formats {
		comp.RegisterFormat(f)
	}
	if err := comp.AddResource(docURL, doc); err != nil {
		return nil, fmt.Errorf("apischema: %w", err)
	}
	c := &contract{doc: doc, bodies: map[string]*Body{}, params: map[string]map[string]*rule{}, byName: map[string]*Body{}}
	paths, _ := lookup(doc, "paths").(map[string]any)
	for _, item := range paths {
		item, _ := item.(map[string]any)
		shared, _ := item["parameters"].([]any)
		for method, op := range item {
			op, ok := op.(map[string]any)
			id, _ := op["operationId"].(string)
			if !ok || method == "parameters" || id == "" {
				continue
			}
			own, _ := op["parameters"].([]any)
			params := map[string]*rule{}
			for _, p := range append(append([]any(nil), shared...), own...) { // the operation's own win
				p := c.deref(p)
				name, _ := p["name"].(string)
				in, _ := p["in"].(string)
				if in == "header" {
					name = http.CanonicalHeaderKey(name)
				}
				params[in+":"+name] = c.rule(p["schema"])
			}
			c.params[id] = params
			content, _ := lookup(op, "requestBody", "content").(map[string]any)
			media, ok := content["application/json"].(map[string]any)
			if !ok {
				continue
			}
			ref, _ := lookup(media, "schema", "$ref").(string)
			if !strings.HasPrefix(ref, "#/components/schemas/") {
				return nil, fmt.Errorf("apischema: %s: the request body's schema is not a component", id)
			}
			b := c.byName[ref]
			if b == nil {
				s, err := comp.Compile(docURL + ref)
				if err != nil {
					return nil, fmt.Errorf("apischema: %w", err)
				}
				b = &Body{Name: strings.TrimPrefix(ref, "#/components/schemas/"), c: c, schema: s, top: c.rule(media["schema"])}
				c.byName[ref] = b
			}
			if _, patch := content["application/merge-patch+json"]; patch {
				pb := *b
				pb.Patch = true
				b = &pb
			}
			c.bodies[id] = b
		}
	}
	for ref, b := range c.byName {
		delete(c.byName, ref)
		c.byName[b.Name] = b
	}
	return c, nil
}

// formats are the formats the generated decoder checks, checked as it
// does, so that a value it refuses is refused here too.
var formats = []*jsonschema.Format{
	{Name: "int64", Validate: func(v any) error { return intFormat(v, 64) }},
	{Name: "int32", Validate: func(v any) error { return intFormat(v, 32) }},
	{Name: "uri", Validate: func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		_, err := url.ParseRequestURI(s)
		return err
	}},
	{Name: "date-time", Validate: func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		_, err := time.Parse(time.RFC3339, s)
		return err
	}},
}

// intFormat checks that a number is an integer of bits bits written as one
// (1.0 and 1e2 are not), as the generated decoder reads it.
func intFormat(v any, bits int) error {
	n, ok := v.(json.Number)
	if !ok {
		return nil
	}
	_, err := strconv.ParseInt(string(n), 10, bits)
	return err
}
