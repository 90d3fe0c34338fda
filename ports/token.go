package ports

import (
	"fmt"
	"log/slog"
)

// redacted is what every rendering of a ClaimToken prints.
const redacted = "[redacted]"

// ClaimToken is the opaque commit authority of one claim. It is a bearer
// capability: every rendering (String, GoString, any fmt verb, JSON, text,
// slog) prints "[redacted]", so it cannot leak into logs, errors or
// telemetry by accident. Only adapters call Reveal, to store or compare it.
//
// Tokens are comparable with ==. The zero token is no token.
type ClaimToken struct {
	raw string
}

// NewClaimToken wraps a raw token. Adapters call it when issuing a claim;
// conformance suites call it to forge foreign or malformed tokens.
func NewClaimToken(raw string) ClaimToken { return ClaimToken{raw: raw} }

// Reveal returns the raw token. Only adapters may call it, and never to
// format a message.
func (t ClaimToken) Reveal() string { return t.raw }

// IsZero reports whether t carries no token.
func (t ClaimToken) IsZero() bool { return t.raw == "" }

// String returns "[redacted]".
func (t ClaimToken) String() string { return redacted }

// GoString returns "[redacted]" (the %#v verb).
func (t ClaimToken) GoString() string { return redacted }

// Format prints "[redacted]" for every verb, so %v, %+v, %#v, %s, %q and %x
// on a token or on a struct holding one in an exported field never reveal it.
func (t ClaimToken) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redacted)) }

// MarshalText returns "[redacted]".
func (t ClaimToken) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// MarshalJSON returns the JSON string "[redacted]".
func (t ClaimToken) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// LogValue makes slog print "[redacted]".
func (t ClaimToken) LogValue() slog.Value { return slog.StringValue(redacted) }
