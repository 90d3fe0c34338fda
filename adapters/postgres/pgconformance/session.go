package pgconformance

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// SessionMode switches a pool's sessions to another transaction mode on
// demand, the way a misconfigured role or a standby would, so a Gate can
// close the admission gate. Install Prepare as the pool config's
// PrepareConn and pass Set to Gate; each connection is switched the next
// time it is acquired.
type SessionMode struct {
	mode    atomic.Value // string: "", "repeatable read", "read only"
	applied sync.Map     // *pgx.Conn -> string
}

// Set selects the mode: "" (the default), "repeatable read" or "read only".
func (s *SessionMode) Set(mode string) { s.mode.Store(mode) }

// Prepare applies the selected mode to conn if it is not already applied.
func (s *SessionMode) Prepare(ctx context.Context, conn *pgx.Conn) (bool, error) {
	want, _ := s.mode.Load().(string)
	have, _ := s.applied.Load(conn)
	if have == nil {
		have = ""
	}
	if have == want {
		return true, nil
	}
	sql := `RESET default_transaction_isolation; RESET default_transaction_read_only;`
	switch want {
	case "repeatable read":
		sql += `SET default_transaction_isolation = 'repeatable read';`
	case "read only":
		sql += `SET default_transaction_read_only = on;`
	}
	if _, err := conn.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol); err != nil {
		return false, err
	}
	s.applied.Store(conn, want)
	return true, nil
}
