package postgres

import (
	"database/sql/driver"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgtype"
)

// redactedToken is how a bound claim token renders anywhere but on the wire.
const redactedToken = "[redacted]"

// tokenParam is a claim token bound to a $n::uuid parameter. pgx sends the
// UUID (binary in the extended protocol, text in the simple one), but every
// rendering of the value itself prints "[redacted]": a pool tracer that
// logs bind arguments, such as pgx's tracelog (the ordinary query log),
// therefore never records the bearer capability of a refresh, release,
// abandon or claimed commit (spec §18).
type tokenParam struct{ uuid pgtype.UUID }

// UUIDValue is the binding used when the parameter's type is known (uuid).
func (p tokenParam) UUIDValue() (pgtype.UUID, error) { return p.uuid, nil }

// TextValue is the binding of the simple protocol, which inlines the text.
func (p tokenParam) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: p.uuid.String(), Valid: p.uuid.Valid}, nil
}

func (tokenParam) String() string               { return redactedToken }
func (tokenParam) GoString() string             { return redactedToken }
func (tokenParam) Format(f fmt.State, _ rune)   { _, _ = f.Write([]byte(redactedToken)) }
func (tokenParam) MarshalJSON() ([]byte, error) { return []byte(`"` + redactedToken + `"`), nil }
func (tokenParam) LogValue() slog.Value         { return slog.StringValue(redactedToken) }

// tokenArray is a batch of claim tokens bound to a $n::uuid[] parameter.
// The extended protocol encodes it element by element (binary uuids,
// through pgtype.ArrayGetter); the simple protocol, which knows no
// parameter types, takes the array literal from Value. Every rendering
// prints "[redacted]" per element, as tokenParam does.
type tokenArray []tokenParam

var _ pgtype.ArrayGetter = tokenArray(nil)

// Dimensions, Index and IndexType make the array codec encode the tokens
// directly; without them pgx would format Value's literal and parse it.
func (a tokenArray) Dimensions() []pgtype.ArrayDimension {
	return pgtype.FlatArray[tokenParam](a).Dimensions()
}
func (a tokenArray) Index(i int) any { return a[i] }
func (a tokenArray) IndexType() any  { return tokenParam{} }

// Value is the array literal of the simple protocol.
func (a tokenArray) Value() (driver.Value, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, t := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		if t.uuid.Valid {
			b.WriteString(t.uuid.String())
		} else {
			b.WriteString("NULL")
		}
	}
	b.WriteByte('}')
	return b.String(), nil
}

func (a tokenArray) String() string             { return fmt.Sprint([]tokenParam(a)) }
func (a tokenArray) GoString() string           { return a.String() }
func (a tokenArray) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(a.String())) }
func (a tokenArray) LogValue() slog.Value       { return slog.StringValue(a.String()) }
