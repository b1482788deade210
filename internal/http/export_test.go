package http

// OperationScopes exposes the scope table to the external tests.
var OperationScopes = operationScopes

// SecretOperations exposes the operations whose answers carry a secret.
var SecretOperations = secretOperations

// OperationRoutes exposes the route label table to the external tests.
var OperationRoutes = operationRoutes

// CheckBody exposes the request body checks to the benchmarks.
var CheckBody = checkBody

// MaxRetainedStreamBuffer exposes the bound on a waiting stream's buffer.
const MaxRetainedStreamBuffer = maxRetainedStreamBuffer

// OnStreamWait sets the hook a stream calls each time it waits for events,
// with the capacity of the buffer it keeps meanwhile.
func OnStreamWait(s *Server, fn func(retained int)) { s.onStreamWait = fn }
