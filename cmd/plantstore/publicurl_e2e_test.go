package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestServePublicURL: the served /openapi.json names no fixed address by
// default (servers "/"), and --public-url (or PLANTSTORE_PUBLIC_URL) puts
// the deployment's URL there.
func TestServePublicURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"Relative", nil, "/"},
		{"PublicURL", []string{"--public-url", "https://plants.example.com/api/"}, "https://plants.example.com/api"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "plantstore.db")
			s := startServer(t, db, append([]string{"--create-db", "--no-bootstrap-admin"}, tt.args...)...)
			status, _, body := do(t, testClient, "GET", s.url+"/openapi.json", "", "")
			if status != 200 {
				t.Fatalf("GET /openapi.json: %d %s", status, body)
			}
			var doc struct {
				Servers []struct{ URL string } `json:"servers"`
			}
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]struct{ URL string }{{tt.want}}, doc.Servers); diff != "" {
				t.Errorf("servers (-want +got):\n%s", diff)
			}
		})
	}
}
