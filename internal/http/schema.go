package http

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-faster/jx"

	"github.com/plantstore/plantstore/api"
)

// jsonSchema is the part of a contract schema the error mapper reads to say
// what a value the generated decoder refused must be: $ref and allOf are
// resolved, the OpenAPI 3.1 type list split into a type and null. It covers
// what the contract's request bodies and parameters use; a keyword it does
// not know is not checked (the generated code still is).
type jsonSchema struct {
	Name     string // the component's name ("NewWebhook", "EventType"), "" inline
	Type     string // "string", "integer", "number", "boolean", "array", "object"; "" any
	Nullable bool   // the type list has "null"
	Format   string // "int64", "int32", "uri", "date-time", ...
	Enum     []any

	MinLength, MaxLength *int // strings, in code points (as the generated validators count)
	MinItems, MaxItems   *int // arrays
	UniqueItems          bool
	Pattern              *regexp.Regexp

	Minimum, Maximum, ExclusiveMinimum, ExclusiveMaximum *json.Number

	Items    *jsonSchema
	Props    map[string]*jsonSchema
	Required []string // sorted
	Closed   bool     // additionalProperties: false
}

// rawSchema is a schema as the contract writes it.
type rawSchema struct {
	Ref              string               `json:"$ref"`
	AllOf            []rawSchema          `json:"allOf"`
	Type             schemaType           `json:"type"`
	Format           string               `json:"format"`
	Enum             []any                `json:"enum"`
	MinLength        *int                 `json:"minLength"`
	MaxLength        *int                 `json:"maxLength"`
	MinItems         *int                 `json:"minItems"`
	MaxItems         *int                 `json:"maxItems"`
	UniqueItems      bool                 `json:"uniqueItems"`
	Pattern          string               `json:"pattern"`
	Minimum          *json.Number         `json:"minimum"`
	Maximum          *json.Number         `json:"maximum"`
	ExclusiveMinimum *json.Number         `json:"exclusiveMinimum"`
	ExclusiveMaximum *json.Number         `json:"exclusiveMaximum"`
	Items            *rawSchema           `json:"items"`
	Properties       map[string]rawSchema `json:"properties"`
	Required         []string             `json:"required"`
	Additional       json.RawMessage      `json:"additionalProperties"`
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

// bodySchema is an operation's JSON request body schema.
type bodySchema struct {
	*jsonSchema
	// Patch: the operation takes a JSON merge patch
	// (application/merge-patch+json), where a member left out is kept.
	Patch bool
}

// contractSchemas is what the error mapper reads of the contract: each
// operation's request body schema and its parameters' schemas.
type contractSchemas struct {
	bodies map[string]*bodySchema            // by operationId
	params map[string]map[string]*jsonSchema // by operationId, then "in:name" (in as ogen says it: "query", "path", "header")
}

// schemas is the served contract's (api.JSON), read once.
var schemas = sync.OnceValues(func() (*contractSchemas, error) {
	return readSchemas(api.JSON)
})

// requestBodies maps operationId to its JSON request body schema.
func requestBodies() (map[string]*bodySchema, error) {
	s, err := schemas()
	if err != nil {
		return nil, err
	}
	return s.bodies, nil
}

// paramSchema is the schema of an operation's parameter, or nil.
func paramSchema(op, in, name string) *jsonSchema {
	s, err := schemas()
	if err != nil {
		return nil
	}
	if in == "header" {
		name = http.CanonicalHeaderKey(name)
	}
	return s.params[op][in+":"+name]
}

// readSchemas reads every operation's application/json request body schema
// and its parameters' schemas from an OpenAPI document (JSON).
func readSchemas(doc []byte) (*contractSchemas, error) {
	type param struct {
		Ref    string    `json:"$ref"`
		Name   string    `json:"name"`
		In     string    `json:"in"`
		Schema rawSchema `json:"schema"`
	}
	type operation struct {
		OperationID string  `json:"operationId"`
		Parameters  []param `json:"parameters"`
		RequestBody struct {
			Content map[string]struct {
				Schema rawSchema `json:"schema"`
			} `json:"content"`
		} `json:"requestBody"`
	}
	var d struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"` // operations, and parameters
		Components struct {
			Schemas    map[string]rawSchema `json:"schemas"`
			Parameters map[string]param     `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("http: read the contract: %w", err)
	}
	r := &resolver{components: d.Components.Schemas}
	param1 := func(p param) (param, error) {
		if p.Ref == "" {
			return p, nil
		}
		ref, ok := d.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
		if !ok {
			return p, fmt.Errorf("http: contract: unknown parameter %s", p.Ref)
		}
		return ref, nil
	}
	out := &contractSchemas{bodies: map[string]*bodySchema{}, params: map[string]map[string]*jsonSchema{}}
	for path, item := range d.Paths {
		var shared []param
		if raw, ok := item["parameters"]; ok {
			if err := json.Unmarshal(raw, &shared); err != nil {
				return nil, fmt.Errorf("http: read the contract: %s parameters: %w", path, err)
			}
		}
		for method, raw := range item {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
			default:
				continue
			}
			var op operation
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("http: read the contract: %s %s: %w", method, path, err)
			}
			if op.OperationID == "" {
				continue
			}
			params := map[string]*jsonSchema{}
			for _, p := range append(slices.Clone(shared), op.Parameters...) { // the operation's own win
				p, err := param1(p)
				if err != nil {
					return nil, err
				}
				s, err := r.resolve(p.Schema, 0)
				if err != nil {
					return nil, err
				}
				name := p.Name
				if p.In == "header" {
					name = http.CanonicalHeaderKey(name)
				}
				params[p.In+":"+name] = s
			}
			out.params[op.OperationID] = params
			media, ok := op.RequestBody.Content["application/json"]
			if !ok {
				continue
			}
			_, patch := op.RequestBody.Content["application/merge-patch+json"]
			s, err := r.resolve(media.Schema, 0)
			if err != nil {
				return nil, err
			}
			out.bodies[op.OperationID] = &bodySchema{jsonSchema: s, Patch: patch}
		}
	}
	return out, nil
}

// resolver turns rawSchemas into jsonSchemas.
type resolver struct {
	components map[string]rawSchema
}

// resolve returns s with its $ref and allOf merged in.
func (r *resolver) resolve(s rawSchema, depth int) (*jsonSchema, error) {
	out := &jsonSchema{}
	if err := r.merge(out, s, depth); err != nil {
		return nil, err
	}
	slices.Sort(out.Required)
	out.Required = slices.Compact(out.Required)
	return out, nil
}

// merge adds s's keywords to out (allOf: every part applies, so a keyword
// given twice keeps the last, and properties and required add up).
func (r *resolver) merge(out *jsonSchema, s rawSchema, depth int) error {
	if depth > 16 {
		return fmt.Errorf("http: contract: schema %s nests too deep", out.Name)
	}
	if s.Ref != "" {
		name := strings.TrimPrefix(s.Ref, "#/components/schemas/")
		ref, ok := r.components[name]
		if !ok {
			return fmt.Errorf("http: contract: unknown schema %s", s.Ref)
		}
		if out.Name == "" {
			out.Name = name
		}
		if err := r.merge(out, ref, depth+1); err != nil {
			return err
		}
	}
	for _, part := range s.AllOf {
		if err := r.merge(out, part, depth+1); err != nil {
			return err
		}
	}
	if s.Type.Name != "" {
		out.Type = s.Type.Name
	}
	out.Nullable = out.Nullable || s.Type.Nullable
	if s.Format != "" {
		out.Format = s.Format
	}
	if s.Enum != nil {
		out.Enum = s.Enum
	}
	for _, kw := range []struct {
		dst **int
		src *int
	}{
		{&out.MinLength, s.MinLength}, {&out.MaxLength, s.MaxLength}, {&out.MinItems, s.MinItems}, {&out.MaxItems, s.MaxItems},
	} {
		if kw.src != nil {
			*kw.dst = kw.src
		}
	}
	for _, kw := range []struct {
		dst **json.Number
		src *json.Number
	}{
		{&out.Minimum, s.Minimum}, {&out.Maximum, s.Maximum}, {&out.ExclusiveMinimum, s.ExclusiveMinimum}, {&out.ExclusiveMaximum, s.ExclusiveMaximum},
	} {
		if kw.src != nil {
			*kw.dst = kw.src
		}
	}
	out.UniqueItems = out.UniqueItems || s.UniqueItems
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			return fmt.Errorf("http: contract: pattern %q: %w", s.Pattern, err)
		}
		out.Pattern = re
	}
	if s.Items != nil {
		items, err := r.resolve(*s.Items, depth+1)
		if err != nil {
			return err
		}
		out.Items = items
	}
	if string(s.Additional) == "false" {
		out.Closed = true
	}
	for name, p := range s.Properties {
		if out.Props == nil {
			out.Props = map[string]*jsonSchema{}
		}
		prop := out.Props[name]
		if prop == nil {
			prop = &jsonSchema{}
			out.Props[name] = prop
		}
		if err := r.merge(prop, p, depth+1); err != nil {
			return err
		}
	}
	out.Required = append(out.Required, s.Required...)
	return nil
}

// maxProblems is how many faults of one body an answer lists.
const maxProblems = 5

// problems collects what is wrong in a body, in the order found.
type problems struct {
	list []string
	more int // found past maxProblems
}

func (p *problems) add(path, msg string) {
	if len(p.list) == maxProblems {
		p.more++
		return
	}
	if path != "" {
		msg = path + ": " + msg
	}
	p.list = append(p.list, msg)
}

// String lists the problems: "name: required; tag: must be a string".
func (p *problems) String() string {
	s := strings.Join(p.list, "; ")
	if p.more > 0 {
		s += fmt.Sprintf("; and %d more", p.more)
	}
	return s
}

// check says what is wrong in body (well-formed JSON, which the body checks
// made sure of) against the operation's schema: each fault names where
// ("name", "types[1]") and what the value must be; "" when nothing is.
// Members are read in the body's order, then the required ones missing.
func (b *bodySchema) check(body []byte) string {
	var p problems
	d := jx.DecodeBytes(body)
	if d.Next() != jx.Object {
		return "the body must be a JSON object"
	}
	b.checkValue(d, "", &p, true, b.Patch)
	return p.String()
}

// checkValue reads one value from d and adds its faults to p, each named by
// its path from path. top: the value is the body itself, whose members are
// checked by checkMember (patch: the body is a merge patch).
func (s *jsonSchema) checkValue(d *jx.Decoder, path string, p *problems, top, patch bool) {
	kind := d.Next()
	if kind == jx.Null && (s.Nullable || s.Type == "" || s.Type == "null") {
		_ = d.Skip()
		return
	}
	switch s.Type {
	case "string":
		if kind != jx.String {
			_ = d.Skip()
			p.add(path, s.mustBe())
			return
		}
		v, err := d.Str()
		if err != nil {
			p.add(path, s.mustBe())
			return
		}
		if msg := s.checkString(v); msg != "" {
			p.add(path, msg)
		}
	case "integer", "number":
		raw, err := d.Raw()
		if err != nil || kind != jx.Number || !s.numberOK(raw.String()) {
			p.add(path, s.mustBe())
		}
	case "boolean":
		_ = d.Skip()
		if kind != jx.Bool {
			p.add(path, s.mustBe())
		}
	case "array":
		if kind != jx.Array {
			_ = d.Skip()
			p.add(path, s.mustBe())
			return
		}
		var items []string // raw items, for uniqueItems
		n := 0
		_ = d.Arr(func(d *jx.Decoder) error {
			at := path + "[" + strconv.Itoa(n) + "]"
			n++
			if s.Items == nil && !s.UniqueItems {
				return d.Skip()
			}
			raw, err := d.Raw()
			if err != nil {
				return err
			}
			if s.UniqueItems {
				items = append(items, string(raw))
			}
			if s.Items != nil {
				s.Items.checkValue(jx.DecodeBytes(raw), at, p, false, false)
			}
			return nil
		})
		if s.MinItems != nil && n < *s.MinItems || s.MaxItems != nil && n > *s.MaxItems {
			p.add(path, "must have "+countOf(s.itemCount(), "item"))
		}
		for i := range items {
			if j := slices.Index(items[i+1:], items[i]); j >= 0 {
				p.add(path, fmt.Sprintf("must not hold an item twice (items %d and %d are equal)", i, i+1+j))
				break
			}
		}
	case "object":
		if kind != jx.Object {
			_ = d.Skip()
			p.add(path, s.mustBe())
			return
		}
		seen := map[string]bool{}
		_ = d.ObjBytes(func(d *jx.Decoder, key []byte) error {
			name := string(key)
			seen[name] = true
			at := name
			if path != "" {
				at = path + "." + name
			}
			prop, known := s.Props[name]
			switch {
			case !known && s.Closed:
				p.add(at, "unknown member: send only "+s.members())
				return d.Skip()
			case !known:
				return d.Skip()
			}
			if top {
				prop.checkMember(d, name, p, slices.Contains(s.Required, name), patch)
				return nil
			}
			prop.checkValue(d, at, p, false, false)
			return nil
		})
		for _, name := range s.Required {
			if !seen[name] {
				at := name
				if path != "" {
					at = path + "." + name
				}
				p.add(at, "required")
			}
		}
	default:
		_ = d.Skip()
	}
}

// checkMember checks a member of the body. A fault of its type says how to
// leave it out, when it is optional: in a merge patch (patch) a member left
// out keeps its value.
func (s *jsonSchema) checkMember(d *jx.Decoder, name string, p *problems, required, patch bool) {
	kind := d.Next()
	var inner problems
	s.checkValue(d, name, &inner, false, false)
	if !required && len(inner.list) == 1 && inner.more == 0 && (kind == jx.Null || !kindFits(s.Type, kind)) {
		switch {
		case patch && s.Type == "string":
			inner.list[0] += " (leave it out to keep the " + name + ")"
		case s.Type == "string":
			inner.list[0] += " (leave it out for no " + name + ")"
		case patch && kind == jx.Null:
			inner.list[0] += " (leave it out to keep its value)"
		case kind == jx.Null:
			inner.list[0] += " (leave it out for the default)"
		}
	}
	for _, msg := range inner.list {
		p.add("", msg)
	}
	p.more += inner.more
}

// kindFits says whether a JSON value of kind has the schema type typ.
func kindFits(typ string, kind jx.Type) bool {
	switch typ {
	case "string":
		return kind == jx.String
	case "integer", "number":
		return kind == jx.Number
	case "boolean":
		return kind == jx.Bool
	case "array":
		return kind == jx.Array
	case "object":
		return kind == jx.Object
	}
	return true
}

// checkString says what is wrong with a string value, or "".
func (s *jsonSchema) checkString(v string) string {
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return e == v }) {
		return s.mustBe()
	}
	n := utf8.RuneCountInString(v)
	if s.MinLength != nil && n < *s.MinLength {
		return "must have at least " + plural(*s.MinLength, "character")
	}
	if s.MaxLength != nil && n > *s.MaxLength {
		return "must have at most " + plural(*s.MaxLength, "character")
	}
	switch s.Format {
	case "date-time":
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			return s.formatRule()
		}
	case "uri":
		if _, err := url.ParseRequestURI(v); err != nil { // as the generated decoder
			return s.formatRule()
		}
	}
	if s.Pattern != nil && !s.Pattern.MatchString(v) {
		return s.patternRule()
	}
	return ""
}

// formatRule says what a string of s's format must be.
func (s *jsonSchema) formatRule() string {
	switch s.Format {
	case "date-time":
		return "must be an RFC 3339 date-time, such as 2026-01-02T15:04:05Z"
	case "uri":
		return "must be a URI, such as https://example.com/hook"
	}
	return "must be a string of format " + s.Format
}

// patternRule says what a string of s's pattern must be.
func (s *jsonSchema) patternRule() string {
	switch s.Pattern.String() {
	case "^whk_[0-9a-f]{16}$":
		return "must be a webhook id: whk_ and 16 lower-case hex digits"
	case "^msg_[0-9a-f]{24}$":
		return "must be a delivery id: msg_ and 24 lower-case hex digits"
	case "^tok_[0-9a-f]{16}$":
		return "must be a token id: tok_ and 16 lower-case hex digits"
	}
	return "must match the pattern " + s.Pattern.String()
}

// numberOK says whether the JSON number raw has s's type and bounds.
func (s *jsonSchema) numberOK(raw string) bool {
	if s.Type == "integer" {
		lo, hi := s.intBounds()
		v, err := strconv.ParseInt(raw, 10, 64)
		return err == nil && v >= lo && v <= hi
	}
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsInf(v, 0) {
		return false
	}
	bound := func(n *json.Number) (float64, bool) {
		if n == nil {
			return 0, false
		}
		f, err := n.Float64()
		return f, err == nil
	}
	if b, ok := bound(s.Minimum); ok && v < b {
		return false
	}
	if b, ok := bound(s.Maximum); ok && v > b {
		return false
	}
	if b, ok := bound(s.ExclusiveMinimum); ok && v <= b {
		return false
	}
	if b, ok := bound(s.ExclusiveMaximum); ok && v >= b {
		return false
	}
	return true
}

// intBounds are the least and greatest integers of an integer schema: its
// format's range, narrowed by its minimum and maximum (exclusive or not).
func (s *jsonSchema) intBounds() (lo, hi int64) {
	lo, hi = math.MinInt64, math.MaxInt64
	if s.Format == "int32" {
		lo, hi = math.MinInt32, math.MaxInt32
	}
	// bound is the integer bound n sets: itself, one past it when
	// exclusive, the nearest integer inside it when fractional.
	bound := func(n *json.Number, exclusive, upper bool) (int64, bool) {
		if n == nil {
			return 0, false
		}
		if v, err := n.Int64(); err == nil {
			switch {
			case exclusive && upper && v > math.MinInt64:
				v--
			case exclusive && !upper && v < math.MaxInt64:
				v++
			}
			return v, true
		}
		f, err := n.Float64()
		if err != nil || math.Abs(f) >= math.MaxInt64 {
			return 0, false
		}
		if upper {
			return int64(math.Floor(f)), true
		}
		return int64(math.Ceil(f)), true
	}
	for _, b := range []struct {
		n                *json.Number
		exclusive, upper bool
	}{{s.Minimum, false, false}, {s.ExclusiveMinimum, true, false}, {s.Maximum, false, true}, {s.ExclusiveMaximum, true, true}} {
		v, ok := bound(b.n, b.exclusive, b.upper)
		switch {
		case !ok:
		case b.upper:
			hi = min(hi, v)
		default:
			lo = max(lo, v)
		}
	}
	return lo, hi
}

// mustBe says what a value of s must be, whole: "must be an integer from 0
// to 604800", "must be one of plant.created, plant.updated, plant.deleted".
func (s *jsonSchema) mustBe() string {
	switch s.Type {
	case "string":
		if len(s.Enum) > 0 {
			return "must be one of " + enumList(s.Enum)
		}
		if s.Format == "date-time" { // a type fault of a URI says only this: the service says the rest
			return "must be a string: " + strings.TrimPrefix(s.formatRule(), "must be ")
		}
		return "must be a string"
	case "integer":
		lo, hi := s.intBounds()
		if s.Format == "int32" && lo == math.MinInt32 && hi == math.MaxInt32 {
			return integerRange(32)
		}
		if lo == math.MinInt64 && hi == math.MaxInt64 {
			return integerRange(64)
		}
		return fmt.Sprintf("must be an integer from %d to %d", lo, hi)
	case "number":
		var rules []string
		for _, b := range []struct {
			n  *json.Number
			op string
		}{{s.Minimum, "at least"}, {s.ExclusiveMinimum, "greater than"}, {s.Maximum, "at most"}, {s.ExclusiveMaximum, "less than"}} {
			if b.n != nil {
				rules = append(rules, b.op+" "+b.n.String())
			}
		}
		if len(rules) == 0 {
			return "must be a number"
		}
		return "must be a number " + strings.Join(rules, " and ")
	case "boolean":
		return "must be true or false"
	case "array":
		noun, each := "items", ""
		if s.Items != nil {
			if s.Items.Type != "" {
				noun = s.Items.Type + "s"
			}
			if len(s.Items.Enum) > 0 {
				each = ", each one of " + enumList(s.Items.Enum)
			}
		}
		if count := s.itemCount(); count != "" {
			return "must be an array of " + countOf(count, strings.TrimSuffix(noun, "s")) + each
		}
		return "must be an array of " + noun + each
	case "object":
		if s.Name != "" {
			return "must be a JSON object (" + s.Name + ")"
		}
		return "must be a JSON object"
	}
	return "is not valid"
}

// itemCount says how many items an array of s may have: "at most 3",
// "1 to 3"; "" for any number.
func (s *jsonSchema) itemCount() string {
	switch {
	case s.MinItems != nil && s.MaxItems != nil:
		return fmt.Sprintf("%d to %d", *s.MinItems, *s.MaxItems)
	case s.MaxItems != nil:
		return fmt.Sprintf("at most %d", *s.MaxItems)
	case s.MinItems != nil:
		return fmt.Sprintf("at least %d", *s.MinItems)
	}
	return ""
}

// members lists the schema's members, sorted: "name and tag".
func (s *jsonSchema) members() string {
	names := make([]string, 0, len(s.Props))
	for name := range s.Props {
		names = append(names, name)
	}
	slices.Sort(names)
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// enumList lists an enum's values: "a, b, c".
func enumList(values []any) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ")
}

// countOf says "at most 3 items", "at least 1 item".
func countOf(count, noun string) string {
	if strings.HasSuffix(count, " 1") {
		return count + " " + noun
	}
	return count + " " + noun + "s"
}

// plural says "1 character", "3 characters".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// integerRange says what an integer of bits bits must be.
func integerRange(bits int) string {
	if bits == 32 {
		return "must be an integer from -2147483648 to 2147483647 (int32)"
	}
	return "must be an integer from -9223372036854775808 to 9223372036854775807 (int64)"
}
