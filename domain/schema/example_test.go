package schema_test

import (
	"fmt"

	"github.com/docketgo/docket/domain/schema"
)

// A schema accepts null unless it is required: an interrupt that must be
// answered with one of its choices needs AsRequired.
func ExampleSchema_AsRequired() {
	choice := schema.Enum("approve", "revise")
	fmt.Println(choice.Validate(nil))
	fmt.Println(choice.AsRequired().Validate(nil))
	fmt.Println(choice.AsRequired().Validate("approve"))
	// Output:
	// []
	// [value is required but was nil]
	// []
}
