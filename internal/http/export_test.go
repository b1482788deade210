package http

import (
	"context"

	"github.com/plantstore/plantstore/internal/http/oapi"
)

// contractOperations are the contract's operations as the server reads
// them (readOperations, with the generated router).
var contractOperations = func() map[oapi.OperationName]operation {
	router, err := oapi.NewServer(oapi.UnimplementedHandler{}, nopSecurity{})
	if err != nil {
		panic(err)
	}
	ops, err := readOperations(router)
	if err != nil {
		panic(err)
	}
	return ops
}()

type nopSecurity struct{}

func (nopSecurity) HandleBearerAuth(ctx context.Context, _ oapi.OperationName, _ oapi.BearerAuth) (context.Context, error) {
	return ctx, nil
}

// OperationScopes is the scope each operation of the contract needs, as
// the generated code gives it (GetRolesForBearerAuth); "" for none.
var OperationScopes = func() map[string]string {
	out := map[string]string{}
	for name := range contractOperations {
		out[name] = ""
		if roles := oapi.GetRolesForBearerAuth(name); len(roles) > 0 {
			out[name] = roles[0]
		}
	}
	return out
}()

// SecretOperations are the operations whose answers say no-store.
var SecretOperations = func() map[string]bool {
	out := map[string]bool{}
	for name, op := range contractOperations {
		if op.noStore {
			out[name] = true
		}
	}
	return out
}()

// OperationRoutes is the route label of each operation.
var OperationRoutes = func() map[string]string {
	out := map[string]string{}
	for name, op := range contractOperations {
		out[name] = op.route
	}
	return out
}()

// CheckBody exposes the request body checks to the benchmarks.
var CheckBody = checkBody

// MaxRetainedStreamBuffer exposes the bound on a waiting stream's buffer.
const MaxRetainedStreamBuffer = maxRetainedStreamBuffer

// OnStreamWait sets the hook a stream calls each time it waits for events,
// with the capacity of the buffer it keeps meanwhile.
func OnStreamWait(s *Server, fn func(retained int)) { s.onStreamWait = fn }
