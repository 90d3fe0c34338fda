package graph

// WireKeySets exposes the codec's allowed-key lists to the black-box tests
// that compare them with docs/graph.schema.json.
var WireKeySets = map[string][]string{
	"graph":                wireGraphKeys,
	"field":                wireFieldKeys,
	"output":               wireOutputKeys,
	"node":                 wireNodeKeys,
	"edge":                 wireEdgeKeys,
	"reducer":              wireReducerKeys,
	"guard":                wireGuardKeys,
	"moduleImplementation": wireModuleKeys,
	"wrappedGuard":         {wireGuardTag},
}
