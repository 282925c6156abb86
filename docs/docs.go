// Package docs carries rushline's OpenAPI 3 description of its HTTP API, the
// published twin of shared/API.md, so the server can serve it (for example at
// /openapi.yaml). openapi_test.go keeps the two documents in step.
package docs

import _ "embed"

// OpenAPI is the OpenAPI 3.0.3 document (YAML) for the rushline HTTP API,
// version 1. It is read-only: callers must not modify the slice.
//
//go:embed openapi.yaml
var OpenAPI []byte
