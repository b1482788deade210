package http

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/plantstore/plantstore/api"
	"github.com/plantstore/plantstore/internal/http/oapi"
)

// operation is what the server needs to know of an operation of the
// contract beyond what the generated code does with it.
type operation struct {
	// route is its path pattern ("/plants/{id}"): the route label of its
	// requests in metrics and logs, known when the generated server calls
	// HandleBearerAuth, without routing again.
	route string
	// noStore: its answers carry a secret, so every one of them, errors
	// included, says Cache-Control: no-store (the operation's
	// x-cache-control: no-store in the contract).
	noStore bool
}

// pathParam is a path parameter in a path pattern.
var pathParam = regexp.MustCompile(`\{[^}/]+\}`)

// readOperations reads every operation of the served contract (api.JSON), by
// the name the generated router gives it: the router finds each
// operation's path (its parameters filled in) and says which operation
// it is and under which path pattern, so that the table is the router's.
func readOperations(router *oapi.Server) (map[oapi.OperationName]operation, error) {
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(api.JSON, &d); err != nil {
		return nil, fmt.Errorf("http: read the contract: %w", err)
	}
	out := map[oapi.OperationName]operation{}
	for path, item := range d.Paths {
		for method, raw := range item {
			var op struct {
				OperationID  string `json:"operationId"`
				CacheControl string `json:"x-cache-control"`
			}
			if method == "parameters" || json.Unmarshal(raw, &op) != nil || op.OperationID == "" {
				continue
			}
			route, ok := router.FindRoute(strings.ToUpper(method), pathParam.ReplaceAllString(path, "x"))
			if !ok || route.OperationID() != op.OperationID {
				return nil, fmt.Errorf("http: contract: the router does not route %s %s to %s", method, path, op.OperationID)
			}
			switch op.CacheControl {
			case "", "no-store":
			default:
				return nil, fmt.Errorf("http: contract: %s: x-cache-control %q is not no-store", op.OperationID, op.CacheControl)
			}
			out[route.Name()] = operation{route: route.PathPattern(), noStore: op.CacheControl == "no-store"}
		}
	}
	return out, nil
}
