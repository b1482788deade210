package apischema

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// maxProblems is how many faults of one body an answer lists.
const maxProblems = 5

// fault is one thing wrong in a body.
type fault struct {
	at      []string // instance location; a missing member's name last
	missing bool     // a required member left out
	msg     string
	rank    int // of two faults at one place, the lower is said
}

// rank orders the faults of one value as a reader fixes them: its type
// first, then its length, then its format and pattern.
func rank(k jsonschema.ErrorKind) int {
	switch k.(type) {
	case *kind.Type, *kind.Enum, *kind.Const:
		return 0
	case *kind.MinLength, *kind.MaxLength, *kind.MinItems, *kind.MaxItems:
		return 1
	case *kind.Format:
		return 2
	case *kind.Pattern:
		return 3
	}
	return 4
}

// word says what the validator found wrong in v: one fault per place,
// ordered by place (members by name, items by index, a missing member
// after those present beside it), at most maxProblems and how many more.
func (c *contract) word(b *Body, v any, top *jsonschema.ValidationError) string {
	var faults []fault
	seen := map[string]int{} // place -> index in faults
	add := func(f fault) {
		key := strings.Join(f.at, "\x00")
		i, ok := seen[key]
		switch {
		case !ok:
			seen[key] = len(faults)
			faults = append(faults, f)
		case f.rank < faults[i].rank:
			faults[i] = f
		}
	}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, cause := range e.Causes {
				walk(cause)
			}
			return
		}
		r := c.ruleAt(e.SchemaURL)
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, name := range k.Missing {
				add(fault{at: append(slices.Clone(e.InstanceLocation), name), missing: true, msg: "required"})
			}
		case *kind.AdditionalProperties:
			for _, name := range k.Properties {
				add(fault{at: append(slices.Clone(e.InstanceLocation), name), msg: "unknown member: send only " + r.members()})
			}
		default:
			add(fault{at: e.InstanceLocation, msg: r.fault(e.ErrorKind), rank: rank(e.ErrorKind)})
		}
	}
	walk(top)
	slices.SortStableFunc(faults, func(a, b fault) int { return comparePlaces(a, b) })

	var list []string
	for _, f := range faults {
		if len(list) == maxProblems {
			break
		}
		msg := f.msg
		if len(f.at) == 1 && !f.missing {
			msg += b.hint(f.at[0], v.(map[string]any)[f.at[0]], msg)
		}
		list = append(list, path(v, f.at)+": "+msg)
	}
	s := strings.Join(list, "; ")
	if more := len(faults) - len(list); more > 0 {
		s += fmt.Sprintf("; and %d more", more)
	}
	return s
}

// hint is what a fault of an optional member of the body adds when its
// value has the wrong type (null included): how to leave it out, and what
// that does.
func (b *Body) hint(name string, value any, msg string) string {
	if slices.Contains(b.top.Required, name) {
		return ""
	}
	r := b.top.Props[name]
	if r == nil || value != nil && r.kindFits(value) || strings.HasPrefix(msg, "unknown member") {
		return ""
	}
	switch {
	case b.Patch && r.Type == "string":
		return " (leave it out to keep the " + name + ")"
	case r.Type == "string":
		return " (leave it out for no " + name + ")"
	case b.Patch && value == nil:
		return " (leave it out to keep its value)"
	case value == nil:
		return " (leave it out for the default)"
	}
	return ""
}

// comparePlaces orders faults by place: members by name, items by index,
// a missing member after the members present in its object, and the
// faults inside a value before the value's own (an array's items before
// its count).
func comparePlaces(a, b fault) int {
	for i := 0; i < len(a.at) && i < len(b.at); i++ {
		lastA, lastB := i == len(a.at)-1 && a.missing, i == len(b.at)-1 && b.missing
		if lastA != lastB {
			if lastA {
				return 1
			}
			return -1
		}
		if a.at[i] == b.at[i] {
			continue
		}
		ia, errA := strconv.Atoi(a.at[i])
		ib, errB := strconv.Atoi(b.at[i])
		if errA == nil && errB == nil {
			return cmp.Compare(ia, ib)
		}
		return strings.Compare(a.at[i], b.at[i])
	}
	return cmp.Compare(len(b.at), len(a.at))
}

// path words an instance location in v: "name", "types[1]", "parts[0].id".
func path(v any, at []string) string {
	var sb strings.Builder
	for _, tok := range at {
		if _, ok := v.([]any); ok {
			sb.WriteString("[" + tok + "]")
			i, _ := strconv.Atoi(tok)
			v = v.([]any)[i]
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.WriteString(tok)
		m, _ := v.(map[string]any)
		v = m[tok]
	}
	return sb.String()
}

// at is the document's value at a schema location of the validator
// ("openapi.json#/components/schemas/Plant/properties/name").
func (c *contract) at(loc string) any {
	_, ptr, _ := strings.Cut(loc, "#")
	var toks []string
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if tok != "" {
			toks = append(toks, strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~"))
		}
	}
	return lookup(c.doc, toks...)
}

// lookup walks a path of keys through nested maps.
func lookup(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// deref follows a $ref within the document.
func (c *contract) deref(v any) map[string]any {
	m, _ := v.(map[string]any)
	for i := 0; i < 16 && m != nil; i++ {
		ref, ok := m["$ref"].(string)
		if !ok {
			break
		}
		m, _ = c.at(ref).(map[string]any)
	}
	return m
}

// rule is what the words of a schema need of it: $ref and allOf merged,
// the OpenAPI 3.1 type list split into a type and null.
type rule struct {
	Name     string // the component's name, "" inline
	Type     string // "string", "integer", "number", "boolean", "array", "object"; "" any
	Nullable bool
	Format   string
	Enum     []any
	Pattern  string

	MinLength, MaxLength *int
	MinItems, MaxItems   *int
	Minimum, Maximum     *json.Number
	ExclusiveMinimum     *json.Number
	ExclusiveMaximum     *json.Number

	Items    *rule
	Props    map[string]*rule
	Required []string
}

// ruleAt reads the schema at a location of the validator, named when it
// is a component; each location once.
func (c *contract) ruleAt(loc string) *rule {
	if r, ok := c.rules.Load(loc); ok {
		return r.(*rule)
	}
	r := c.rule(c.at(loc))
	if _, ptr, _ := strings.Cut(loc, "#"); strings.Count(ptr, "/") == 3 && strings.HasPrefix(ptr, "/components/schemas/") {
		r.Name = strings.TrimPrefix(ptr, "/components/schemas/")
	}
	c.rules.Store(loc, r)
	return r
}

// rule reads a schema of the document.
func (c *contract) rule(s any) *rule {
	r := &rule{}
	c.merge(r, s, 0)
	return r
}

// merge adds s's keywords to r (allOf: every part applies, so a keyword
// given twice keeps the last, and properties and required add up).
func (c *contract) merge(r *rule, s any, depth int) {
	m, _ := s.(map[string]any)
	if m == nil || depth > 16 {
		return
	}
	if ref, ok := m["$ref"].(string); ok {
		if r.Name == "" {
			r.Name = strings.TrimPrefix(ref, "#/components/schemas/")
		}
		c.merge(r, c.at(ref), depth+1)
	}
	for _, part := range asSlice(m["allOf"]) {
		c.merge(r, part, depth+1)
	}
	switch t := m["type"].(type) {
	case string:
		r.Type = t
	case []any:
		for _, name := range t {
			if name == "null" {
				r.Nullable = true
			} else if name, ok := name.(string); ok {
				r.Type = name
			}
		}
	}
	if f, ok := m["format"].(string); ok {
		r.Format = f
	}
	if e, ok := m["enum"].([]any); ok {
		r.Enum = e
	}
	if p, ok := m["pattern"].(string); ok {
		r.Pattern = p
	}
	for _, kw := range []struct {
		dst **int
		key string
	}{{&r.MinLength, "minLength"}, {&r.MaxLength, "maxLength"}, {&r.MinItems, "minItems"}, {&r.MaxItems, "maxItems"}} {
		if n, ok := m[kw.key].(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				v := int(i)
				*kw.dst = &v
			}
		}
	}
	for _, kw := range []struct {
		dst **json.Number
		key string
	}{{&r.Minimum, "minimum"}, {&r.Maximum, "maximum"}, {&r.ExclusiveMinimum, "exclusiveMinimum"}, {&r.ExclusiveMaximum, "exclusiveMaximum"}} {
		if n, ok := m[kw.key].(json.Number); ok {
			*kw.dst = &n
		}
	}
	if items, ok := m["items"]; ok {
		r.Items = c.rule(items)
	}
	if props, ok := m["properties"].(map[string]any); ok {
		if r.Props == nil {
			r.Props = map[string]*rule{}
		}
		for name, p := range props {
			if r.Props[name] == nil {
				r.Props[name] = &rule{}
			}
			c.merge(r.Props[name], p, depth+1)
		}
	}
	for _, name := range asSlice(m["required"]) {
		if name, ok := name.(string); ok && !slices.Contains(r.Required, name) {
			r.Required = append(r.Required, name)
		}
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// fault words what the validator found wrong with a value of r.
func (r *rule) fault(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.MinLength:
		return "must have at least " + plural(k.Want, "character")
	case *kind.MaxLength:
		return "must have at most " + plural(k.Want, "character")
	case *kind.MinItems, *kind.MaxItems:
		return "must have " + countOf(r.itemCount(), "item")
	case *kind.UniqueItems:
		return fmt.Sprintf("must not hold an item twice (items %d and %d are equal)", k.Duplicates[0], k.Duplicates[1])
	case *kind.Pattern:
		return r.patternRule()
	case *kind.Format:
		// The validator stops at a format fault before it counts a
		// string's characters: the length is said first, as the
		// generated decoder checks it first.
		if s, ok := k.Got.(string); ok {
			n := utf8.RuneCountInString(s)
			switch {
			case r.MinLength != nil && n < *r.MinLength:
				return "must have at least " + plural(*r.MinLength, "character")
			case r.MaxLength != nil && n > *r.MaxLength:
				return "must have at most " + plural(*r.MaxLength, "character")
			}
			return r.formatRule()
		}
	}
	// A type, an enum, a bound, an integer's format: what the value must
	// be, whole.
	return r.mustBe()
}

// kindFits says whether a JSON value has r's type.
func (r *rule) kindFits(v any) bool {
	switch v.(type) {
	case string:
		return r.Type == "string" || r.Type == ""
	case json.Number:
		return r.Type == "integer" || r.Type == "number" || r.Type == ""
	case bool:
		return r.Type == "boolean" || r.Type == ""
	case []any:
		return r.Type == "array" || r.Type == ""
	case map[string]any:
		return r.Type == "object" || r.Type == ""
	}
	return r.Type == "" || r.Nullable
}

// formatRule says what a string of r's format must be.
func (r *rule) formatRule() string {
	switch r.Format {
	case "date-time":
		return "must be an RFC 3339 date-time, such as 2026-01-02T15:04:05Z"
	case "uri":
		return "must be a URI, such as https://example.com/hook"
	}
	return "must be a string of format " + r.Format
}

// patternRule says what a string of r's pattern must be.
func (r *rule) patternRule() string {
	switch r.Pattern {
	case "^whk_[0-9a-f]{16}$":
		return "must be a webhook id: whk_ and 16 lower-case hex digits"
	case "^msg_[0-9a-f]{24}$":
		return "must be a delivery id: msg_ and 24 lower-case hex digits"
	case "^tok_[0-9a-f]{16}$":
		return "must be a token id: tok_ and 16 lower-case hex digits"
	}
	return "must match the pattern " + r.Pattern
}

// intBounds are the least and greatest integers of an integer schema: its
// format's range, narrowed by its minimum and maximum (exclusive or not).
func (r *rule) intBounds() (lo, hi int64) {
	lo, hi = math.MinInt64, math.MaxInt64
	if r.Format == "int32" {
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
	}{{r.Minimum, false, false}, {r.ExclusiveMinimum, true, false}, {r.Maximum, false, true}, {r.ExclusiveMaximum, true, true}} {
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

// mustBe says what a value of r must be, whole: "must be an integer from 0
// to 604800", "must be one of plant.created, plant.updated, plant.deleted".
func (r *rule) mustBe() string {
	switch r.Type {
	case "string":
		if len(r.Enum) > 0 {
			return "must be one of " + enumList(r.Enum)
		}
		if r.Format == "date-time" { // a type fault of a URI says only this: the service says the rest
			return "must be a string: " + strings.TrimPrefix(r.formatRule(), "must be ")
		}
		return "must be a string"
	case "integer":
		lo, hi := r.intBounds()
		if r.Format == "int32" && lo == math.MinInt32 && hi == math.MaxInt32 {
			return "must be an integer from -2147483648 to 2147483647 (int32)"
		}
		if lo == math.MinInt64 && hi == math.MaxInt64 {
			return "must be an integer from -9223372036854775808 to 9223372036854775807 (int64)"
		}
		return fmt.Sprintf("must be an integer from %d to %d", lo, hi)
	case "number":
		var rules []string
		for _, b := range []struct {
			n  *json.Number
			op string
		}{{r.Minimum, "at least"}, {r.ExclusiveMinimum, "greater than"}, {r.Maximum, "at most"}, {r.ExclusiveMaximum, "less than"}} {
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
		if r.Items != nil {
			if r.Items.Type != "" {
				noun = r.Items.Type + "s"
			}
			if len(r.Items.Enum) > 0 {
				each = ", each one of " + enumList(r.Items.Enum)
			}
		}
		if count := r.itemCount(); count != "" {
			return "must be an array of " + countOf(count, strings.TrimSuffix(noun, "s")) + each
		}
		return "must be an array of " + noun + each
	case "object":
		if r.Name != "" {
			return "must be a JSON object (" + r.Name + ")"
		}
		return "must be a JSON object"
	}
	return "is not valid"
}

// itemCount says how many items an array of r may have: "at most 3",
// "1 to 3"; "" for any number.
func (r *rule) itemCount() string {
	switch {
	case r.MinItems != nil && r.MaxItems != nil:
		return fmt.Sprintf("%d to %d", *r.MinItems, *r.MaxItems)
	case r.MaxItems != nil:
		return fmt.Sprintf("at most %d", *r.MaxItems)
	case r.MinItems != nil:
		return fmt.Sprintf("at least %d", *r.MinItems)
	}
	return ""
}

// members lists r's members, sorted: "name and tag".
func (r *rule) members() string {
	names := make([]string, 0, len(r.Props))
	for name := range r.Props {
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
