package http_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/api"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
)

type document map[string]any

func loadDocument(t *testing.T, data []byte) document {
	t.Helper()
	var d document
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// get walks a path of keys through nested maps.
func (d document) get(keys ...string) any {
	var v any = map[string]any(d)
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// shape resolves $ref and allOf and keeps what decides whether a value is
// valid in the seed's terms: type, format, required and properties.
// Descriptions and the length limits this service adds are left out.
func (d document) shape(s any) any {
	m, ok := s.(map[string]any)
	if !ok {
		return s
	}
	if ref, ok := m["$ref"].(string); ok {
		return d.shape(d.get(strings.Split(strings.TrimPrefix(ref, "#/"), "/")...))
	}
	out := map[string]any{}
	props := map[string]any{}
	var required []string
	merge := func(m map[string]any) {
		for _, k := range []string{"type", "format"} {
			if v, ok := m[k]; ok {
				out[k] = v
			}
		}
		switch r := m["required"].(type) {
		case []string: // from a shape already resolved
			required = append(required, r...)
		case []any:
			for _, name := range r {
				required = append(required, name.(string))
			}
		}
		if p, ok := m["properties"].(map[string]any); ok {
			for k, v := range p {
				props[k] = d.shape(v)
			}
		}
		if items, ok := m["items"]; ok {
			out["items"] = d.shape(items)
		}
	}
	for _, part := range asSlice(m["allOf"]) {
		merge(d.shape(part).(map[string]any))
	}
	merge(m)
	if len(props) > 0 {
		out["properties"] = props
	}
	if len(required) > 0 {
		slices.Sort(required)
		out["required"] = slices.Compact(required)
	}
	return out
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// TestContract_SeedOperation checks that POST /plants is still exactly the
// seed's: request body, the 200 and 400 responses and bearer security, to
// which it adds only the scope it needs (plants:write) as the role of the
// seed's own security requirement. The public document it was cut from is
// in testdata.
func TestContract_SeedOperation(t *testing.T) {
	t.Parallel()
	seedData, err := os.ReadFile("testdata/public-plant-store-openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	seed, ours := loadDocument(t, seedData), loadDocument(t, api.JSON)

	if got := ours.get("openapi"); got != "3.1.0" {
		t.Fatalf("openapi = %v", got)
	}
	op := func(d document) map[string]any { return d.get("paths", "/plants", "post").(map[string]any) }
	t.Run("Operation", func(t *testing.T) {
		for _, k := range []string{"operationId", "description"} {
			if got, want := op(ours)[k], op(seed)[k]; got != want {
				t.Errorf("%s = %v, want %v", k, got, want)
			}
		}
		// The seed's global requirement, with the operation's scope as
		// its role: the same scheme, nothing else required.
		want := []any{map[string]any{"bearerAuth": []any{plantstore.ScopePlantsWrite}}}
		if diff := cmp.Diff([]any{map[string]any{"bearerAuth": []any{}}}, seed.get("security")); diff != "" {
			t.Fatalf("the seed's security changed (-want +got):\n%s", diff)
		}
		if _, ok := op(seed)["security"]; ok {
			t.Fatal("the seed's POST /plants has a security of its own")
		}
		if diff := cmp.Diff(want, op(ours)["security"]); diff != "" {
			t.Errorf("POST /plants security (-want +got):\n%s", diff)
		}
	})
	t.Run("RequestBody", func(t *testing.T) {
		body := func(d document) map[string]any { return op(d)["requestBody"].(map[string]any) }
		if got := body(ours)["required"]; got != true {
			t.Errorf("required = %v", got)
		}
		want := seed.shape(body(seed)["content"].(map[string]any)["application/json"].(map[string]any)["schema"])
		content := body(ours)["content"].(map[string]any)
		if len(content) != 1 {
			t.Errorf("content types = %v, want only application/json", content)
		}
		got := ours.shape(content["application/json"].(map[string]any)["schema"]).(map[string]any)
		dropServerTimes(t, got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("NewPlant (-seed +ours):\n%s", diff)
		}
	})
	response := func(d document, status string) any {
		r := d.get("paths", "/plants", "post", "responses", status).(map[string]any)
		return d.shape(r["content"].(map[string]any)["application/json"].(map[string]any)["schema"])
	}
	t.Run("200", func(t *testing.T) {
		want, got := response(seed, "200").(map[string]any), response(ours, "200").(map[string]any)
		// The one addition: an id property on Plant, required (every response
		// carries it; the seed's Plant allows it).
		props := got["properties"].(map[string]any)
		if diff := cmp.Diff(map[string]any{"type": "integer", "format": "int64"}, props["id"]); diff != "" {
			t.Errorf("Plant.id:\n%s", diff)
		}
		delete(props, "id")
		dropServerTimes(t, got)
		if req, _ := got["required"].([]string); !slices.Contains(req, "id") {
			t.Errorf("Plant.required = %v, want id in it", req)
		} else {
			got["required"] = slices.DeleteFunc(slices.Clone(req), func(s string) bool { return s == "id" })
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Plant (-seed +ours):\n%s", diff)
		}
	})
	t.Run("400", func(t *testing.T) {
		if diff := cmp.Diff(response(seed, "400"), response(ours, "400")); diff != "" {
			t.Errorf("Error (-seed +ours):\n%s", diff)
		}
	})
	t.Run("Security", func(t *testing.T) {
		for _, path := range [][]string{{"security"}, {"components", "securitySchemes", "bearerAuth"}} {
			if diff := cmp.Diff(seed.get(path...), ours.get(path...)); diff != "" {
				t.Errorf("%v (-seed +ours):\n%s", path, diff)
			}
		}
	})
}

// TestContract_PublicOperations: every operation and status of the public
// document is in ours (ours may add more).
func TestContract_PublicOperations(t *testing.T) {
	t.Parallel()
	seedData, err := os.ReadFile("testdata/public-plant-store-openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	seed, ours := loadDocument(t, seedData), loadDocument(t, api.JSON)
	for path, item := range seed.get("paths").(map[string]any) {
		for method, o := range item.(map[string]any) {
			for status := range o.(map[string]any)["responses"].(map[string]any) {
				if ours.get("paths", path, method, "responses", status) == nil {
					t.Errorf("%s %s %s is missing", method, path, status)
				}
			}
		}
	}
	var limit map[string]any
	for _, p := range ours.get("paths", "/plants", "get", "parameters").([]any) {
		p := p.(map[string]any)
		if ref, ok := p["$ref"].(string); ok {
			p = ours.get(strings.Split(strings.TrimPrefix(ref, "#/"), "/")...).(map[string]any)
		}
		if p["name"] == "limit" {
			limit = p
		}
	}
	if limit == nil || limit["in"] != "query" || ours.shape(limit["schema"]).(map[string]any)["format"] != "int32" {
		t.Errorf("limit parameter = %v", limit)
	}
}

// dropServerTimes removes from a Plant's (or NewPlant's) shape the two
// members the service adds to every plant it answers: created_at and
// updated_at, optional date-time strings the server sets (readOnly: a
// request's are ignored). It fails the test when they are not that.
func dropServerTimes(t *testing.T, shape map[string]any) {
	t.Helper()
	props := shape["properties"].(map[string]any)
	for _, name := range []string{"created_at", "updated_at"} {
		if diff := cmp.Diff(map[string]any{"type": "string", "format": "date-time"}, props[name]); diff != "" {
			t.Errorf("Plant.%s:\n%s", name, diff)
		}
		if req, _ := shape["required"].([]string); slices.Contains(req, name) {
			t.Errorf("Plant.%s is required", name)
		}
		delete(props, name)
	}
}

// TestContract_ErrorCodes: every error code is documented, and every
// documented code exists.
func TestContract_ErrorCodes(t *testing.T) {
	t.Parallel()
	doc := string(api.YAML)
	for _, code := range plantstore.Codes {
		if !strings.Contains(doc, fmt.Sprintf("| %d | %d |", code, code/100)) {
			t.Errorf("code %d is not in the document's error table", code)
		}
	}
	if got, want := strings.Count(doc, "\n    | 4")+strings.Count(doc, "\n    | 5"), len(plantstore.Codes); got != want {
		t.Errorf("the document's table has %d codes, the code has %d", got, want)
	}
}

// TestContract_OperationScopes: every operation of the document declares
// its scope as the role of its bearerAuth security requirement, by the rule
// the document's introduction states (GET /me and HEAD /me keep the global
// requirement: any valid token); the generated code gives the server the
// same roles.
func TestContract_OperationScopes(t *testing.T) {
	t.Parallel()
	ours := loadDocument(t, api.JSON)
	wantScope := func(method, path string) string {
		switch {
		case path == "/me":
			return ""
		case strings.HasPrefix(path, "/webhooks"):
			return plantstore.ScopeWebhooksManage
		case strings.HasPrefix(path, "/tokens"):
			return plantstore.ScopeTokensManage
		case method == "get" || method == "head":
			return plantstore.ScopePlantsRead
		}
		return plantstore.ScopePlantsWrite
	}
	n := 0
	for path, item := range ours.get("paths").(map[string]any) {
		for method, o := range item.(map[string]any) {
			m, ok := o.(map[string]any)
			if !ok || m["operationId"] == nil {
				continue
			}
			n++
			id := m["operationId"].(string)
			want := []any{map[string]any{"bearerAuth": []any{}}}
			if scope := wantScope(method, path); scope != "" {
				want = []any{map[string]any{"bearerAuth": []any{scope}}}
			}
			got, ok := m["security"]
			if !ok {
				got = ours.get("security")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s %s (%s) security (-want +got):\n%s", method, path, id, diff)
			}
			found := false
			for name, scope := range plantstorehttp.OperationScopes {
				if strings.EqualFold(name, id) {
					found = true
					if scope != wantScope(method, path) {
						t.Errorf("%s: the generated roles say %q, want %q", id, scope, wantScope(method, path))
					}
				}
			}
			if !found {
				t.Errorf("operation %s has no generated roles", id)
			}
		}
	}
	if n != len(plantstorehttp.OperationScopes) {
		t.Fatalf("document has %d operations, the server knows %d", n, len(plantstorehttp.OperationScopes))
	}
}

// TestContract_ForIntegrators: what generated clients and Redoc rely on.
// Every schema and every error response has an example (Spectral's
// spectral:oas ruleset, run by .ci/lint-openapi.sh, checks that each is
// valid for its schema); every operation has a declared tag; info.contact
// is there; servers is relative; Plant.id is required and documents the
// JavaScript 2^53 caveat.
func TestContract_ForIntegrators(t *testing.T) {
	t.Parallel()
	ours := loadDocument(t, api.JSON)
	resolve := func(v any) map[string]any {
		m, _ := v.(map[string]any)
		for m != nil {
			ref, ok := m["$ref"].(string)
			if !ok {
				break
			}
			m, _ = ours.get(strings.Split(strings.TrimPrefix(ref, "#/"), "/")...).(map[string]any)
		}
		return m
	}
	hasExample := func(m map[string]any) bool {
		_, one := m["example"]
		many, _ := m["examples"].([]any)
		named, _ := m["examples"].(map[string]any)
		return one || len(many) > 0 || len(named) > 0
	}
	for name, s := range ours.get("components", "schemas").(map[string]any) {
		if !hasExample(s.(map[string]any)) {
			t.Errorf("schema %s has no example", name)
		}
	}
	tags := map[string]bool{}
	for _, tag := range asSlice(ours.get("tags")) {
		tag := tag.(map[string]any)
		if d, _ := tag["description"].(string); d == "" {
			t.Errorf("tag %v has no description", tag["name"])
		}
		tags[tag["name"].(string)] = true
	}
	if !tags["plants"] || !tags["webhooks"] || !tags["events"] || !tags["tokens"] || len(tags) != 4 {
		t.Errorf("tags = %v, want plants, webhooks, events and tokens", tags)
	}
	for _, section := range []string{"paths", "webhooks"} {
		for path, item := range ours.get(section).(map[string]any) {
			for method, o := range item.(map[string]any) {
				op, ok := o.(map[string]any)
				if !ok || op["responses"] == nil {
					continue
				}
				if opTags := asSlice(op["tags"]); len(opTags) != 1 || !tags[opTags[0].(string)] {
					t.Errorf("%s %s: tags %v, want one declared tag", method, path, opTags)
				}
				for status, r := range op["responses"].(map[string]any) {
					if status < "400" {
						continue
					}
					content, _ := resolve(r)["content"].(map[string]any) // HEAD answers have none
					for ctype, media := range content {
						if !hasExample(media.(map[string]any)) {
							t.Errorf("%s %s %s %s: no example", method, path, status, ctype)
						}
					}
				}
			}
		}
	}
	contact, _ := ours.get("info", "contact").(map[string]any)
	if contact["name"] == nil || contact["url"] == nil {
		t.Errorf("info.contact = %v, want name and url", contact)
	}
	if diff := cmp.Diff([]any{"/"}, func() (urls []any) {
		for _, s := range asSlice(ours.get("servers")) {
			urls = append(urls, s.(map[string]any)["url"])
		}
		return urls
	}()); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	if req := asSlice(ours.get("components", "schemas", "Plant", "required")); !slices.Contains(req, any("id")) {
		t.Errorf("Plant.required = %v, want id", req)
	}
	for _, path := range [][]string{
		{"components", "schemas", "Plant", "properties", "id", "description"},
		{"components", "schemas", "NewPlant", "allOf"},
	} {
		text, _ := json.Marshal(ours.get(path...))
		if !strings.Contains(string(text), "2^53") || !strings.Contains(string(text), "BigInt") {
			t.Errorf("%v lacks the 2^53 caveat for JavaScript clients", path)
		}
	}
}
