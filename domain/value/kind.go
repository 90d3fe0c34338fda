package value

import "fmt"

// KindName names the portable kind of v ("null", "boolean", "string",
// "integer", "float", "list", "map") for error messages; other Go types
// are named by their type.
func KindName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case int64, int:
		return "integer"
	case float64:
		return "float"
	case []any:
		return "list"
	case map[string]any:
		return "map"
	}
	return fmt.Sprintf("%T", v)
}
