package cli

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A demo interrupted (Ctrl-C) while it is still starting its runs, some of
// which have already finished, says how many runs it leaves unfinished: as
// many as the store holds once its worker has stopped.
func TestAnInterruptedDemoCountsTheRunsItLeavesUnfinished(t *testing.T) {
	t.Parallel()
	c, db, schema := onDatabase(t)
	pool := db.Pool(t)
	runs := pgx.Identifier{schema, "docket_runs"}.Sanitize()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			var done, started int
			err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'done'), count(*) FROM `+runs).Scan(&done, &started)
			if err == nil && done >= 3 && started < 1000 {
				cancel() // Ctrl-C
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	res := c.runContext(ctx, "demo", "--runs", "1000")
	require.Equal(t, ExitInterrupted, res.code, res.stderr)

	m := regexp.MustCompile(`interrupted: (\d+) unfinished run\(s\) are kept`).FindStringSubmatch(res.stderr)
	require.NotNil(t, m, res.stderr)
	said, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	var unfinished int
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT count(*) FROM `+runs+` WHERE status IN ('running', 'waiting')`).Scan(&unfinished))
	assert.Equal(t, unfinished, said, res.stderr)
}
