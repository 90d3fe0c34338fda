package ports

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// scopeKind is unexported so the zero Scope is invalid: forgetting to pass
// a scope is caught as ErrInvalidScope instead of widening a query.
type scopeKind uint8

const (
	scopeInvalid scopeKind = iota
	scopeSystem
	scopeTenantless
	scopeTenant
)

// Scope says whose rows a storage call may see. Scopes are comparable
// values usable as map keys.
//
//   - System: the trusted dispatcher, vehicle and recovery paths. Sees every
//     row. Never accepted from the public facade; rejected by graph
//     operations and run insertion (it owns nothing).
//   - Tenantless: rows with no tenant (not "unscoped").
//   - Tenant(id): rows of one non-empty tenant id.
type Scope struct {
	kind   scopeKind
	tenant string
}

// OwnerScope is a Scope that owns rows: Tenantless or Tenant(id). It is
// required by run insertion and every graph operation, which reject System
// and invalid scopes with ErrInvalidScope.
type OwnerScope = Scope

// System is the trusted scope that sees every row.
func System() Scope { return Scope{kind: scopeSystem} }

// Tenantless is the scope of rows that have no tenant.
func Tenantless() Scope { return Scope{kind: scopeTenantless} }

// Tenant is the scope of one tenant's rows. An empty id, or one that is
// not TextID, yields an invalid scope.
func Tenant(id string) Scope {
	if id == "" || !TextID(id) {
		return Scope{}
	}
	return Scope{kind: scopeTenant, tenant: id}
}

// OwnerOf returns the owner scope of a row: Tenant(id), or Tenantless when
// tenantID is empty.
func OwnerOf(tenantID string) OwnerScope {
	if tenantID == "" {
		return Tenantless()
	}
	return Tenant(tenantID)
}

// IsSystem reports whether s is the system scope.
func (s Scope) IsSystem() bool { return s.kind == scopeSystem }

// IsTenantless reports whether s is the tenantless scope.
func (s Scope) IsTenantless() bool { return s.kind == scopeTenantless }

// TenantID returns the tenant id of a Tenant scope and "" otherwise.
func (s Scope) TenantID() string { return s.tenant }

// Key is the owner's scope_key: the tenant id, or "" for tenantless. It is
// meaningful only for owner scopes.
func (s Scope) Key() string { return s.tenant }

// Validate reports ErrInvalidScope for the zero Scope.
func (s Scope) Validate() error {
	if s.kind == scopeInvalid {
		return fmt.Errorf("%w: the zero Scope (use System, Tenantless or Tenant with a non-empty id)", ErrInvalidScope)
	}
	return nil
}

// ValidateOwner reports ErrInvalidScope unless s is Tenantless or a Tenant.
func (s Scope) ValidateOwner() error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.kind == scopeSystem {
		return fmt.Errorf("%w: system is not an owner scope", ErrInvalidScope)
	}
	return nil
}

// Sees reports whether a call in scope s may see a row owned by owner
// (an owner scope). System sees everything; an owner scope sees only its
// own rows.
func (s Scope) Sees(owner OwnerScope) bool {
	switch s.kind {
	case scopeSystem:
		return true
	case scopeTenantless, scopeTenant:
		return s == owner
	default:
		return false
	}
}

// String renders "system", "tenantless" or "tenant(<id>)". Tenant ids are
// identities: never use this as a telemetry label.
func (s Scope) String() string {
	switch s.kind {
	case scopeSystem:
		return "system"
	case scopeTenantless:
		return "tenantless"
	case scopeTenant:
		return "tenant(" + s.tenant + ")"
	default:
		return "invalid"
	}
}

// MaxIDBytes is the longest identifier, in bytes, that can name a row:
// a run id, tenant id, graph id or graph hash. PostgreSQL refuses a btree
// index entry above about 2700 bytes, and its widest key holds three of
// these ids (tenant, graph id and hash); at 512 bytes each such a key
// stays near 1.6 KB, while ids people choose (UUIDs, ULIDs, e-mail
// addresses, DNS names, URL slugs) stay well below the limit. Every store
// applies the same limit, so a run or graph that one accepts fits every
// other.
const MaxIDBytes = 512

// TextID reports whether id can name a row: UTF-8 text without NUL, as
// PostgreSQL text holds it, of at most MaxIDBytes bytes. Any other id
// names no row: reads find nothing, and writes reject it as invalid
// input.
func TextID(id string) bool {
	return len(id) <= MaxIDBytes && textColumn(id)
}

// textColumn reports whether s can be held by a text column: UTF-8
// without NUL. Ids that no index covers (an event's node, channel and
// task) need nothing more.
func textColumn(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}
