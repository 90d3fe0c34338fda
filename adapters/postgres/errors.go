package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/docketgo/docket/ports"
	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATEs the adapter maps to port outcomes.
const (
	codeUniqueViolation     = "23505"
	codeForeignKeyViolation = "23503"
	codeReadOnlyTransaction = "25006"
	codeLockNotAvailable    = "55P03"
)

// DatabaseError is an unexpected database error, scrubbed at the adapter
// boundary: it keeps the SQLSTATE, the constraint and the server's message
// but drops the detail, hint and context, because PostgreSQL's detail of a
// constraint violation can quote a whole row (claim token included).
// Expected outcomes never arrive as a DatabaseError; they are mapped to the
// ports' sentinel errors.
type DatabaseError struct {
	Op         string // the store operation, e.g. "commit"
	Code       string // SQLSTATE
	Constraint string
	Message    string
}

func (e *DatabaseError) Error() string {
	msg := fmt.Sprintf("docket postgres: %s: %s (SQLSTATE %s", e.Op, e.Message, e.Code)
	if e.Constraint != "" {
		msg += ", constraint " + e.Constraint
	}
	return msg + ")"
}

// pgError returns the PostgreSQL error inside err, if any.
func pgError(err error) (*pgconn.PgError, bool) {
	if err == nil {
		return nil, false // errors.As would still allocate pgErr on the heap
	}
	var pgErr *pgconn.PgError
	ok := errors.As(err, &pgErr)
	return pgErr, ok
}

// sessionLost reports whether err says the session a statement was sent
// on had been closed by the server (SQLSTATE class 57P, operator
// intervention, or 08, connection exception, or a broken socket), not
// that the statement failed or that no connection could be opened.
func sessionLost(err error) bool {
	var connect *pgconn.ConnectError
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case errors.As(err, &connect):
		return false // a fresh connection failed: the next would too
	}
	if pgErr, ok := pgError(err); ok {
		return strings.HasPrefix(pgErr.Code, "57P") || strings.HasPrefix(pgErr.Code, "08")
	}
	return true
}

// isViolation reports whether err is SQLSTATE code on constraint.
func isViolation(err error, code, constraint string) bool {
	pgErr, ok := pgError(err)
	return ok && pgErr.Code == code && (constraint == "" || pgErr.ConstraintName == constraint)
}

// dbError wraps an unexpected error of op for the caller. Database errors
// are scrubbed (see DatabaseError); context and connection errors keep
// their chain so errors.Is(err, context.Canceled) still works.
func dbError(op string, err error) error {
	if err == nil {
		return nil
	}
	if pgErr, ok := pgError(err); ok {
		return &DatabaseError{Op: op, Code: pgErr.Code, Constraint: pgErr.ConstraintName, Message: pgErr.Message}
	}
	return fmt.Errorf("docket postgres: %s: %w", op, err)
}

// notFoundError wraps ports.ErrNotFound with the looked-up identity.
type notFoundError struct {
	what string
	id   string
}

func (e *notFoundError) Error() string { return fmt.Sprintf("%s %q: not found", e.what, e.id) }
func (e *notFoundError) Unwrap() error { return ports.ErrNotFound }

func runNotFound(runID string) error { return &notFoundError{what: "run", id: runID} }

func invalidArg(field, reason string) error {
	return &ports.InvalidArgumentError{Field: field, Reason: reason}
}
