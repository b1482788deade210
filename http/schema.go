package http

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-faster/jx"

	"github.com/plantstore/plantstore/api"
)

// bodySchema is what the error mapper needs of an operation's request body
// schema, read from the contract (api.JSON): its name, to say "invalid
// NewWebhook", and its properties' types, to say which field of a body the
// generated decoder refused and what it must be.
type bodySchema struct {
	Name  string
	Props map[string]propSchema
	// Closed: the schema has additionalProperties false (other members are
	// refused). Patch: the operation takes a JSON merge patch
	// (application/merge-patch+json), where a member left out is kept.
	Closed, Patch bool
}

type propSchema struct {
	Type     string // "integer", "string", ... (the non-null one of a type list)
	Format   string // "int64", "int32", "uri", ...
	Required bool
	Nullable bool // the type list has "null"
}

// schemaType is a schema's type: one name, or (OpenAPI 3.1) a list of
// names, of which null is kept apart.
type schemaType struct {
	Name     string
	Nullable bool
}

func (t *schemaType) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		t.Name = one
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	for _, name := range list {
		if name == "null" {
			t.Nullable = true
		} else {
			t.Name = name
		}
	}
	return nil
}

// requestBodies maps operationId to its JSON request body schema.
var requestBodies = sync.OnceValues(func() (map[string]*bodySchema, error) {
	return readRequestBodies(api.JSON)
})

// readRequestBodies reads every operation's application/json request body
// schema (a $ref to components.schemas, allOf merged) from an OpenAPI
// document.
func readRequestBodies(doc []byte) (map[string]*bodySchema, error) {
	type schema struct {
		Ref        string            `json:"$ref"`
		AllOf      []schema          `json:"allOf"`
		Required   []string          `json:"required"`
		Properties map[string]schema `json:"properties"`
		Type       schemaType        `json:"type"`
		Format     string            `json:"format"`
		Additional json.RawMessage   `json:"additionalProperties"`
	}
	type operation struct {
		OperationID string `json:"operationId"`
		RequestBody struct {
			Content map[string]struct {
				Schema schema `json:"schema"`
			} `json:"content"`
		} `json:"requestBody"`
	}
	var d struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"` // operations, and parameters
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("http: read the contract: %w", err)
	}
	var merge func(out *bodySchema, s schema, depth int) error
	merge = func(out *bodySchema, s schema, depth int) error {
		if depth > 8 {
			return fmt.Errorf("http: contract: schema %s nests too deep", out.Name)
		}
		if s.Ref != "" {
			ref, ok := d.Components.Schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")]
			if !ok {
				return fmt.Errorf("http: contract: unknown schema %s", s.Ref)
			}
			return merge(out, ref, depth+1)
		}
		for _, part := range s.AllOf {
			if err := merge(out, part, depth+1); err != nil {
				return err
			}
		}
		if string(s.Additional) == "false" {
			out.Closed = true
		}
		for name, p := range s.Properties {
			prop := out.Props[name]
			prop.Type, prop.Nullable, prop.Format = p.Type.Name, p.Type.Nullable, p.Format
			out.Props[name] = prop
		}
		for _, name := range s.Required {
			prop := out.Props[name]
			prop.Required = true
			out.Props[name] = prop
		}
		return nil
	}
	bodies := make(map[string]*bodySchema)
	for _, item := range d.Paths {
		for method, raw := range item {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
			default:
				continue
			}
			var op operation
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("http: read the contract: %s: %w", method, err)
			}
			media, ok := op.RequestBody.Content["application/json"]
			if !ok || op.OperationID == "" {
				continue
			}
			_, patch := op.RequestBody.Content["application/merge-patch+json"]
			b := &bodySchema{Name: strings.TrimPrefix(media.Schema.Ref, "#/components/schemas/"), Props: map[string]propSchema{}, Patch: patch}
			if err := merge(b, media.Schema, 0); err != nil {
				return nil, err
			}
			bodies[op.OperationID] = b
		}
	}
	return bodies, nil
}

// fieldError finds the first field of body (valid JSON, which the body
// checks made sure of) whose value does not have its property's type, and
// says what the value must be; "" when every field has its type. It is how
// a body the generated decoder refused is explained: the decoder's own error
// is a chain of wrapped strings, not a typed value.
func (b *bodySchema) fieldError(body []byte) string {
	d := jx.DecodeBytes(body)
	if d.Next() != jx.Object {
		return "the body must be a JSON object"
	}
	var msg string
	_ = d.ObjBytes(func(d *jx.Decoder, key []byte) error {
		prop, known := b.Props[string(key)]
		switch {
		case msg != "":
			return d.Skip()
		case !known && b.Closed:
			msg = fmt.Sprintf("%s: unknown member: send only %s", key, b.members())
			return d.Skip()
		case !known:
			return d.Skip()
		}
		msg = prop.check(string(key), d, b.Patch)
		return nil
	})
	return msg
}

// members lists the schema's members, sorted: "name and tag".
func (b *bodySchema) members() string {
	names := make([]string, 0, len(b.Props))
	for name := range b.Props {
		names = append(names, name)
	}
	slices.Sort(names)
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// check reads one value from d and says what is wrong with it, or "". In a
// merge patch (patch) a member left out is kept, not absent.
func (p propSchema) check(name string, d *jx.Decoder, patch bool) string {
	kind := d.Next()
	if kind == jx.Null && p.Nullable {
		_ = d.Skip()
		return ""
	}
	switch p.Type {
	case "integer":
		raw, err := d.Raw()
		if err != nil {
			return ""
		}
		bits := 64
		if p.Format == "int32" {
			bits = 32
		}
		if kind != jx.Number {
			return name + ": " + integerRange(bits)
		}
		if _, err := strconv.ParseInt(raw.String(), 10, bits); err != nil {
			return name + ": " + integerRange(bits)
		}
		return ""
	case "string":
		if kind != jx.String {
			_ = d.Skip()
			switch {
			case p.Required:
				return name + ": must be a string"
			case patch:
				return name + ": must be a string (leave it out to keep the " + name + ")"
			}
			return name + ": must be a string (leave it out for no " + name + ")"
		}
		s, err := d.Str()
		if err != nil {
			return ""
		}
		if p.Format == "uri" {
			if _, err := url.Parse(s); err != nil {
				return name + ": must be a URI"
			}
		}
		return ""
	}
	_ = d.Skip()
	return ""
}

// integerRange says what an integer of bits bits must be.
func integerRange(bits int) string {
	if bits == 32 {
		return "must be an integer from -2147483648 to 2147483647 (int32)"
	}
	return "must be an integer from -9223372036854775808 to 9223372036854775807 (int64)"
}
