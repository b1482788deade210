// Package api embeds the service's contract, api/openapi.yaml, and its JSON
// form, which the server serves at /openapi.json. openapi.json is generated:
// edit openapi.yaml and run `go generate ./...`.
package api

import _ "embed"

//go:generate go run ../internal/gen/yaml2json openapi.yaml openapi.json

// YAML is the OpenAPI 3.1 document as written.
//
//go:embed openapi.yaml
var YAML []byte

// JSON is the same document as JSON.
//
//go:embed openapi.json
var JSON []byte
