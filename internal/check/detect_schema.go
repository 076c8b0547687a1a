package check

// detSchema is the [schema] row of the table of detectors.
var detSchema = detector{ID: Schema, Gate: Substitution, Advisory: true,
	Short:   "Flux object the API server refuses (or whose field it drops) under the Flux release's CRDs",
	Rule:    "the Flux release's CRD OpenAPI schemas (structural pruning and validation as kube-apiserver applies them)",
	Emitted: "schemaCheck (schema.go)",
}
