package http

// OperationScopes exposes the scope table to the external tests.
var OperationScopes = operationScopes

// OperationRoutes exposes the route label table to the external tests.
var OperationRoutes = operationRoutes

// CheckBody exposes the request body checks to the benchmarks.
var CheckBody = checkBody
