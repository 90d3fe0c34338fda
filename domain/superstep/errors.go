package superstep

import (
	"fmt"
	"strings"
)

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Code)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if reasons, ok := e.Details["reasons"].([]any); ok && len(reasons) > 0 {
		b.WriteString(" (")
		for i, r := range reasons {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprint(&b, r)
		}
		b.WriteString(")")
	}
	return b.String()
}

// Is matches another *Error with the same Code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinel errors for errors.Is checks; each matches any *Error with its code.
var (
	ErrInvalidInput                = &Error{Code: CodeInvalidInput}
	ErrInvalidRun                  = &Error{Code: CodeInvalidRun}
	ErrGraphMismatch               = &Error{Code: CodeGraphMismatch}
	ErrGuardEvaluationFailed       = &Error{Code: CodeGuardEvaluationFailed}
	ErrInactiveRun                 = &Error{Code: CodeInactiveRun}
	ErrAlreadyResolved             = &Error{Code: CodeAlreadyResolved}
	ErrNotFound                    = &Error{Code: CodeNotFound}
	ErrIncompatibleExecutionPolicy = &Error{Code: CodeIncompatibleExecutionPolicy}
)

func invalidInput(phase, message string, reasons []string) *Error {
	return &Error{
		Code:    CodeInvalidInput,
		Phase:   phase,
		Message: message,
		Details: map[string]any{"reasons": stringList(reasons)},
	}
}
