// Package oapi holds the server code that ogen generates from api/openapi.yaml.
// Never edit the *_gen.go files: edit the document and run `go generate ./...`.
package oapi

//go:generate go tool ogen --config ogen.yml --target . --package oapi --clean ../../../api/openapi.yaml
