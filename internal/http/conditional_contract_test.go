package http_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/api"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
)

// resolve follows a $ref (to components) once.
func (d document) resolve(v any) map[string]any {
	m, _ := v.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		m, _ = d.get(strings.Split(strings.TrimPrefix(ref, "#/"), "/")...).(map[string]any)
	}
	return m
}

// paramNames lists the names of an operation's parameters and its path's.
func (d document) paramNames(path, method string) []string {
	var names []string
	for _, where := range [][]string{{"paths", path, "parameters"}, {"paths", path, method, "parameters"}} {
		for _, p := range asSlice(d.get(where...)) {
			names = append(names, d.resolve(p)["name"].(string))
		}
	}
	slices.Sort(names)
	return names
}

// headerNames lists the headers a response declares.
func (d document) headerNames(response any) []string {
	var names []string
	headers, _ := d.resolve(response)["headers"].(map[string]any)
	for name := range headers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// scopeOf is the scope table's entry of an operationId ("" for none, or
// for an operation that needs no scope: see hasScopeEntry).
func scopeOf(op string) string {
	for name, scope := range plantstorehttp.OperationScopes {
		if strings.EqualFold(name, op) {
			return scope
		}
	}
	return ""
}

// hasScopeEntry reports whether the scope table has an entry for an
// operationId (GET /me's is "": any valid token).
func hasScopeEntry(op string) bool {
	for name := range plantstorehttp.OperationScopes {
		if strings.EqualFold(name, op) {
			return true
		}
	}
	return false
}

// TestContract_HeadWhereGet: every path with a GET has a HEAD with the same
// parameters and scope, whose 200 declares every header of the GET's 200
// and no response has a body.
func TestContract_HeadWhereGet(t *testing.T) {
	t.Parallel()
	doc := loadDocument(t, api.JSON)
	n := 0
	for path, item := range doc.get("paths").(map[string]any) {
		get, ok := item.(map[string]any)["get"].(map[string]any)
		if !ok {
			continue
		}
		n++
		head, ok := item.(map[string]any)["head"].(map[string]any)
		if !ok {
			t.Errorf("%s has GET but no HEAD", path)
			continue
		}
		if got, want := doc.paramNames(path, "head"), doc.paramNames(path, "get"); !slices.Equal(got, want) {
			t.Errorf("HEAD %s parameters %v, GET's %v", path, got, want)
		}
		if got, want := scopeOf(head["operationId"].(string)), scopeOf(get["operationId"].(string)); !hasScopeEntry(head["operationId"].(string)) || got != want {
			t.Errorf("HEAD %s scope %q, GET's %q", path, got, want)
		}
		getOK := doc.headerNames(get["responses"].(map[string]any)["200"])
		headOK := doc.headerNames(head["responses"].(map[string]any)["200"])
		if !slices.Equal(getOK, headOK) {
			t.Errorf("HEAD %s 200 headers %v, GET's %v", path, headOK, getOK)
		}
		for status, r := range head["responses"].(map[string]any) {
			if doc.resolve(r)["content"] != nil {
				t.Errorf("HEAD %s %s declares a body", path, status)
			}
		}
		if get["responses"].(map[string]any)["304"] != nil && head["responses"].(map[string]any)["304"] == nil {
			t.Errorf("HEAD %s lacks the GET's 304", path)
		}
	}
	if n < 5 {
		t.Fatalf("only %d paths with GET", n)
	}
}

// TestContract_ConditionalRequests: the plant's ETag, If-None-Match and 304
// on GET/HEAD, If-Match and 412 on PATCH and DELETE, and PATCH's merge patch.
func TestContract_ConditionalRequests(t *testing.T) {
	t.Parallel()
	doc := loadDocument(t, api.JSON)
	op := func(method string) map[string]any {
		return doc.get("paths", "/plants/{id}", method).(map[string]any)
	}
	for _, method := range []string{"get", "head"} {
		if !slices.Contains(doc.paramNames("/plants/{id}", method), "If-None-Match") {
			t.Errorf("%s /plants/{id} lacks If-None-Match", method)
		}
		res := op(method)["responses"].(map[string]any)
		for _, status := range []string{"200", "304"} {
			if !slices.Contains(doc.headerNames(res[status]), "ETag") {
				t.Errorf("%s /plants/{id} %s lacks ETag", method, status)
			}
		}
	}
	for _, method := range []string{"patch", "delete"} {
		if !slices.Contains(doc.paramNames("/plants/{id}", method), "If-Match") {
			t.Errorf("%s /plants/{id} lacks If-Match", method)
		}
		res := doc.resolve(op(method)["responses"].(map[string]any)["412"])
		if res == nil || !strings.Contains(res["description"].(string), "41201") {
			t.Errorf("%s /plants/{id} lacks the 412 of error 41201", method)
		}
	}
	if !slices.Contains(doc.headerNames(op("patch")["responses"].(map[string]any)["200"]), "ETag") {
		t.Error("PATCH /plants/{id} 200 lacks ETag")
	}
	content := op("patch")["requestBody"].(map[string]any)["content"].(map[string]any)
	for _, media := range []string{"application/merge-patch+json", "application/json"} {
		schema := doc.resolve(content[media].(map[string]any)["schema"])
		if schema == nil || schema["additionalProperties"] != false {
			t.Errorf("PATCH %s: schema %v, want a closed PlantPatch", media, schema)
			continue
		}
		props := schema["properties"].(map[string]any)
		if len(props) != 2 || props["name"] == nil || props["tag"] == nil {
			t.Errorf("PATCH %s: members %v, want name and tag", media, props)
		}
	}
}

// TestContract_RateLimitHeaders: every success answer of every operation,
// the 304, and the 403, 412 and 429 answers declare RateLimit-Policy and
// RateLimit.
func TestContract_RateLimitHeaders(t *testing.T) {
	t.Parallel()
	doc := loadDocument(t, api.JSON)
	for path, item := range doc.get("paths").(map[string]any) {
		for method, o := range item.(map[string]any) {
			m, ok := o.(map[string]any)
			if !ok || m["operationId"] == nil {
				continue
			}
			for status, r := range m["responses"].(map[string]any) {
				if !strings.HasPrefix(status, "2") && !slices.Contains([]string{"304", "403", "412", "429"}, status) {
					continue
				}
				names := doc.headerNames(r)
				if !slices.Contains(names, "RateLimit") || !slices.Contains(names, "RateLimit-Policy") {
					t.Errorf("%s %s %s declares headers %v, want RateLimit and RateLimit-Policy", method, path, status, names)
				}
			}
		}
	}
}
