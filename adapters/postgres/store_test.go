package postgres_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/docketgo/docket/adapters/notify"
	"github.com/docketgo/docket/adapters/postgres"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/migrations"
	"github.com/docketgo/docket/pgtest"
	"github.com/docketgo/docket/ports"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawPool opens a pool on the shared database, with edit applied to its
// configuration.
func rawPool(t *testing.T, edit func(*pgxpool.Config)) (*pgtest.Database, *pgxpool.Pool) {
	t.Helper()
	db := pgtest.SharedDatabase(t)
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	cfg.MaxConns = 2
	if edit != nil {
		edit(cfg)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return db, pool
}

func TestNewRefusesASchemaAtAnotherVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, pool := rawPool(t, nil)

	empty := db.NewSchema(t)
	_, err := postgres.New(ctx, postgres.Config{Pool: pool, Schema: empty})
	require.ErrorIs(t, err, migrations.ErrSchemaVersion, "an unmigrated schema")
	assert.Contains(t, err.Error(), "docket migrate up", "the error says what to run")

	old := db.NewSchema(t)
	_, err = migrations.Up(ctx, pool, migrations.Options{Schema: old, Target: 1})
	require.NoError(t, err)
	_, err = postgres.New(ctx, postgres.Config{Pool: pool, Schema: old})
	var version *migrations.VersionError
	require.ErrorAs(t, err, &version, "a version 1 schema")
	assert.Equal(t, 1, version.Found)
	assert.Equal(t, migrations.CurrentVersion, version.Want)

	_, err = migrations.Up(ctx, pool, migrations.Options{Schema: old})
	require.NoError(t, err)
	store, err := postgres.New(ctx, postgres.Config{Pool: pool, Schema: old})
	require.NoError(t, err, "the same schema once migrated")
	assert.Equal(t, old, store.Schema())
	require.NoError(t, store.Close())
}

func TestNewRejectsUnsafeSchemaNamesBeforeAnySQL(t *testing.T) {
	t.Parallel()
	_, pool := rawPool(t, nil)
	for _, name := range []string{`x"; drop table y; --`, "Upper", "1digit", "has-dash", strings.Repeat("a", 64)} {
		_, err := postgres.New(context.Background(), postgres.Config{Pool: pool, Schema: name})
		require.ErrorIs(t, err, postgres.ErrConfig, "schema %q", name)
		assert.ErrorIs(t, err, migrations.ErrInvalidSchema, "schema %q", name)
	}
}

func TestNewResolvesTheSchemaFromTheSearchPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.SharedDatabase(t)
	schema := db.NewSchema(t)
	_, err := migrations.Up(ctx, db.Connect(t), migrations.Options{Schema: schema})
	require.NoError(t, err)
	_, pool := rawPool(t, func(c *pgxpool.Config) { c.ConnConfig.RuntimeParams["search_path"] = schema })
	store, err := postgres.New(ctx, postgres.Config{Pool: pool})
	require.NoError(t, err)
	defer store.Close()
	assert.Equal(t, schema, store.Schema(), "the announcement payload is the physical schema")

	// A listener for another schema would never hear this store: every
	// wake would silently wait for the next poll.
	elsewhere, err := notify.NewListener(notify.ListenerConfig{ConnConfig: pool.Config().ConnConfig, Schema: "public"})
	require.NoError(t, err)
	_, err = postgres.New(ctx, postgres.Config{Pool: pool, Notifier: elsewhere})
	require.ErrorIs(t, err, postgres.ErrConfig)
	assert.ErrorContains(t, err, schema)
	here, err := notify.NewListener(notify.ListenerConfig{ConnConfig: pool.Config().ConnConfig, Schema: schema})
	require.NoError(t, err)
	listening, err := postgres.New(ctx, postgres.Config{Pool: pool, Notifier: here})
	require.NoError(t, err)
	listening.Close()
}

func TestNewRefusesSessionsThatAdmissionCannotUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.SharedDatabase(t)
	schema := db.NewSchema(t)
	_, err := migrations.Up(ctx, db.Connect(t), migrations.Options{Schema: schema})
	require.NoError(t, err)
	for name, params := range map[string]map[string]string{
		"repeatable read": {"default_transaction_isolation": "repeatable read"},
		"serializable":    {"default_transaction_isolation": "serializable"},
		"read only":       {"default_transaction_read_only": "on"},
	} {
		_, pool := rawPool(t, func(c *pgxpool.Config) {
			for k, v := range params {
				c.ConnConfig.RuntimeParams[k] = v
			}
		})
		_, err := postgres.New(ctx, postgres.Config{Pool: pool, Schema: schema})
		assert.ErrorIs(t, err, postgres.ErrConfig, name)
	}
}

// The read models inline their filters as SQL literals, quoted for
// standard_conforming_strings: on a session where a backslash
// escapes a quote, a graph id filter could end the literal and widen a
// tenant's list to every tenant's runs. New refuses such sessions.
func TestNewRefusesSessionsWhereABackslashEscapesAQuote(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := newEnv(t, envOptions{})
	env.insertRun(t, ports.OwnerOf("tenant-a"), t0, t0)
	_, pool := rawPool(t, func(c *pgxpool.Config) {
		c.ConnConfig.RuntimeParams["standard_conforming_strings"] = "off"
	})
	store, err := postgres.New(ctx, postgres.Config{Pool: pool, Schema: env.schema, KeepAdmissionMode: true})
	if err == nil {
		page, err := store.ListRuns(ctx, ports.Tenant("tenant-b"), ports.ListRunsParams{GraphID: `x\') OR true --`, Limit: 10})
		if err == nil {
			assert.Empty(t, page.Runs, "tenant-b's filter lists another tenant's runs")
		}
		_ = store.Close()
	}
	assert.ErrorIs(t, err, postgres.ErrConfig)
}

// fairish is a claim policy the SQL adapter does not implement.
type fairish struct{}

func (fairish) Name() string                                            { return "fairish" }
func (fairish) Select(claim.Request, []claim.Candidate) claim.Selection { return claim.Selection{} }
func (fairish) MarksAdmission() bool                                    { return true }

func TestNewValidatesItsConfig(t *testing.T) {
	t.Parallel()
	_, pool := rawPool(t, nil)
	_, err := postgres.New(context.Background(), postgres.Config{})
	assert.ErrorIs(t, err, postgres.ErrConfig, "no pool")
	_, err = postgres.New(context.Background(), postgres.Config{Pool: pool, Policy: fairish{}})
	assert.ErrorIs(t, err, postgres.ErrConfig, "an unsupported claim policy")
}

func TestCapabilitiesFollowTheNotifier(t *testing.T) {
	t.Parallel()
	pollOnly := newEnv(t, envOptions{simple: true})
	assert.False(t, pollOnly.store.Capabilities().Listen)
	assert.Nil(t, pollOnly.store.Notifier())
	listening := newEnv(t, envOptions{listen: true})
	assert.True(t, listening.store.Capabilities().Listen)
	assert.NotNil(t, listening.store.Notifier())
	assert.False(t, listening.store.Capabilities().TenantFair, "the legacy policy is not tenant-fair")
}

func TestDatabaseClockStampsStoreClockColumns(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{}) // no clock override: PostgreSQL's clock
	ctx := context.Background()
	before := time.Now().Add(-time.Second)
	r := env.insertRun(t, ports.Tenantless(), t0, t0)
	batch, err := env.store.ClaimDue(ctx, claim.Request{Now: t0, Limit: 1, OrphanTTL: time.Hour, MaxClaimAttempts: 5})
	require.NoError(t, err)
	require.Len(t, batch.Leases, 1)
	assert.Equal(t, t0, batch.Leases[0].ClaimedAt, "a lease is stamped with the caller's now")
	_, err = env.store.Commit(ctx, ports.Tenantless(), ports.CommitParams{
		Moment: nextMoment(r, "retain", continueDisposition, t0), ClaimToken: batch.Leases[0].Token})
	require.NoError(t, err)
	info, err := env.store.InspectRun(ctx, ports.System(), r.ID)
	require.NoError(t, err)
	assert.True(t, info.ClaimedAt.After(before) && info.ClaimedAt.Before(time.Now().Add(time.Second)),
		"a retained claim is stamped with the database clock, got %s", info.ClaimedAt)
	assert.Equal(t, time.UTC, info.ClaimedAt.Location())
	assert.Equal(t, info.ClaimedAt, info.ClaimedAt.Truncate(time.Microsecond))
}

func TestTokensNeverReachDatabaseErrors(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	ctx := context.Background()
	r := env.insertRun(t, ports.Tenantless(), t0, t0)
	batch, err := env.store.ClaimDue(ctx, claim.Request{Now: t0, Limit: 1, OrphanTTL: time.Hour, MaxClaimAttempts: 5})
	require.NoError(t, err)
	token := batch.Leases[0].Token.Reveal()

	// A constraint violation's detail quotes the whole row, token included.
	_, err = env.pool.Exec(ctx, "UPDATE "+env.table("docket_runs")+" SET wake_at = now() WHERE run_id = $1", r.ID)
	require.Error(t, err)
	require.Contains(t, err.Error()+detailOf(err), token, "PostgreSQL itself would leak the token")

	// The store's boundary keeps the code and constraint and drops the row.
	scrubbed := postgres.ScrubForTest("commit", err)
	var dbErr *postgres.DatabaseError
	require.ErrorAs(t, scrubbed, &dbErr)
	assert.Equal(t, "23514", dbErr.Code)
	assert.Equal(t, "docket_runs_running_schedule_check", dbErr.Constraint)
	assert.NotContains(t, scrubbed.Error(), token)
}

func detailOf(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Detail
	}
	return ""
}

func TestNewMakesTheLegacyEngineTheGateAuthority(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	ctx := context.Background()
	policy := env.table("docket_claim_policy")
	_, err := env.pool.Exec(ctx, "UPDATE "+policy+" SET admission_mode = 'windowed'")
	require.NoError(t, err)
	_, err = env.store.ClaimDue(ctx, claim.Request{Now: t0, Limit: 1, MaxClaimAttempts: 1})
	var unavailable *ports.ClaimPolicyUnavailableError
	require.ErrorAs(t, err, &unavailable, "another engine holds the gate")
	assert.Equal(t, ports.UnavailableInactiveEngine, unavailable.Reason)

	_, err = postgres.New(ctx, postgres.Config{Pool: env.pool, Schema: env.schema, MaxCommitBatch: -1})
	require.ErrorIs(t, err, postgres.ErrConfig)
	var kept string
	require.NoError(t, env.pool.QueryRow(ctx, "SELECT admission_mode FROM "+policy).Scan(&kept))
	assert.Equal(t, "windowed", kept, "a store refused for its configuration takes no authority")

	again, err := postgres.New(ctx, postgres.Config{Pool: env.pool, Schema: env.schema})
	require.NoError(t, err)
	defer again.Close()
	var mode string
	require.NoError(t, env.pool.QueryRow(ctx, "SELECT admission_mode FROM "+policy).Scan(&mode))
	assert.Equal(t, "legacy", mode, "the last store to start wins")
	_, err = env.store.ClaimDue(ctx, claim.Request{Now: t0, Limit: 1, MaxClaimAttempts: 1})
	assert.NoError(t, err)
}

// claim_abandons is a 32-bit column: a larger maximum is refused as an
// invalid argument before any SQL, and the claim stays with its holder.
func TestAbandonRefusesAMaximumBeyondTheColumn(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	ctx := context.Background()
	r := env.insertRun(t, ports.Tenantless(), t0, t0)
	batch, err := env.store.ClaimDue(ctx, claimNow(t0, r))
	require.NoError(t, err)
	require.Len(t, batch.Leases, 1)
	_, err = env.store.AbandonClaim(ctx, r.ID, batch.Leases[0].Token, claim.AbandonParams{
		ExpectedSeq: r.CheckpointSeq, Now: t0, RetryAt: t0, MaxClaimAbandons: math.MaxInt32 + 1})
	require.ErrorIs(t, err, ports.ErrInvalidArgument)
	require.NoError(t, env.store.RefreshClaim(ctx, r.ID, batch.Leases[0].Token, t0), "the holder keeps the claim")
}
