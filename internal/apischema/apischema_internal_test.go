package apischema

import (
	"testing"
)

// TestExplain: for each rule a schema can set, the words say where in a
// body the validator found the fault and what the value must be, on a
// contract of its own that uses the rules the served one does not (yet):
// nested objects and arrays, uniqueItems, minItems, exclusive bounds,
// numbers, int32, a date-time, a pattern, null.
func TestExplain(t *testing.T) {
	const doc = `{
	  "paths": {"/things": {"post": {"operationId": "addThing",
	    "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}}}}},
	  "components": {"schemas": {
	    "Thing": {"type": "object", "additionalProperties": false, "required": ["when", "parts"],
	      "properties": {
	        "when": {"type": "string", "format": "date-time"},
	        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
	        "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
	        "count": {"type": "integer", "format": "int32"},
	        "step": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
	        "note": {"type": ["string", "null"], "maxLength": 2},
	        "labels": {"type": "array", "minItems": 1, "uniqueItems": true, "items": {"type": "string"}},
	        "parts": {"type": "array", "items": {"$ref": "#/components/schemas/Part"}}
	      }},
	    "Part": {"type": "object", "additionalProperties": false, "required": ["id"],
	      "properties": {"id": {"type": "integer", "format": "int64"}, "ok": {"type": "boolean"}}}
	  }}
	}`
	s, err := read([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.bodies["addThing"].Explain([]byte(`[]`)); err != ErrNotObject {
		t.Errorf("Explain([]) = %v, want ErrNotObject", err)
	}
	b := s.bodies["addThing"]
	if b == nil || b.Name != "Thing" {
		t.Fatalf("addThing body: %+v", b)
	}
	const valid = `"when":"2026-01-02T15:04:05Z","parts":[]`
	for _, tt := range []struct{ name, body, want string }{
		{"OK", `{` + valid + `,"code":"ABC","ratio":1,"count":5,"step":9,"note":null,"labels":["a"],"parts":[{"id":1,"ok":true}]}`, ""},
		{"Missing", `{}`, "parts: required; when: required"},
		{"DateTime", `{"when":"24h","parts":[]}`, "when: must be an RFC 3339 date-time, such as 2026-01-02T15:04:05Z"},
		{"DateTimeType", `{"when":5,"parts":[]}`, "when: must be a string: an RFC 3339 date-time, such as 2026-01-02T15:04:05Z"},
		{"Pattern", `{` + valid + `,"code":"abc"}`, "code: must match the pattern ^[A-Z]{3}$"},
		{"ExclusiveMinimum", `{` + valid + `,"ratio":0}`, "ratio: must be a number greater than 0 and at most 1"},
		{"Maximum", `{` + valid + `,"ratio":1.5}`, "ratio: must be a number greater than 0 and at most 1"},
		{"Int32", `{` + valid + `,"count":2147483648}`, "count: must be an integer from -2147483648 to 2147483647 (int32)"},
		{"ExclusiveBounds", `{` + valid + `,"step":10}`, "step: must be an integer from 1 to 9"},
		{"Fraction", `{` + valid + `,"step":1.5}`, "step: must be an integer from 1 to 9"},
		{"NullableLong", `{` + valid + `,"note":"abc"}`, "note: must have at most 2 characters"},
		{"MinItems", `{` + valid + `,"labels":[]}`, "labels: must have at least 1 item"},
		{"Unique", `{` + valid + `,"labels":["a","b","a"]}`, "labels: must not hold an item twice (items 0 and 2 are equal)"},
		{"ItemType", `{` + valid + `,"labels":["a",2]}`, "labels[1]: must be a string"},
		{"NestedRequired", `{"when":"2026-01-02T15:04:05Z","parts":[{"id":1},{"ok":true}]}`, "parts[1].id: required"},
		{"NestedType", `{"when":"2026-01-02T15:04:05Z","parts":[{"id":1,"ok":"yes"}]}`, "parts[0].ok: must be true or false"},
		{"NestedUnknown", `{"when":"2026-01-02T15:04:05Z","parts":[{"id":1,"x":1}]}`, "parts[0].x: unknown member: send only id and ok"},
		{"NestedNotObject", `{"when":"2026-01-02T15:04:05Z","parts":[7]}`, "parts[0]: must be a JSON object (Part)"},
		{"Unknown", `{` + valid + `,"extra":1}`, "extra: unknown member: send only code, count, labels, note, parts, ratio, step and when"},
		{"Cap", `{"parts":[1,2,3,4,5,6,7]}`,
			"parts[0]: must be a JSON object (Part); parts[1]: must be a JSON object (Part); parts[2]: must be a JSON object (Part); " +
				"parts[3]: must be a JSON object (Part); parts[4]: must be a JSON object (Part); and 3 more"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := b.Explain([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("check(%s)\n got %q\nwant %q", tt.body, got, tt.want)
			}
		})
	}
}
