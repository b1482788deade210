package http

// OperationScopes exposes the scope table to the external tests.
var OperationScopes = operationScopes
