// Package wiring holds the google/wire providers that assemble a Docket
// engine from its parts: a PostgreSQL pool and store (or the in-memory
// store), a wake notifier, telemetry, the node registry and the engine
// itself. The docket CLI is built from these sets, and so can a custom
// worker binary: pick one provider per slot and let wire generate the
// constructor.
//
//	wire.Build(
//		wiring.PostgresSet,      // or wiring.MemorySet, without ListenSet, "DatabaseURL" and "Schema"
//		wiring.ListenSet,        // or wiring.PollOnlySet (PgBouncer transaction pooling)
//		wiring.NoTelemetrySet,   // or SettingsTelemetrySet, or a provider of ports.Telemetry (e.g. adapters/otel)
//		wiring.EngineSet,
//		myNodes,                 // func() *node.Registry
//		wire.FieldsOf(new(wiring.Settings), "DatabaseURL", "Schema", "Engine", "Logger"),
//	)
//
// WorkerFlags gives such a binary the engine flags of `docket worker`
// (--concurrency, --orphan-ttl, --event-retention and the rest) with the
// same names, defaults and checks, for Settings.Engine.
//
// The package chooses adapters; it is not imported by app or the
// adapters, which keeps the dependency rule (cmd chooses, app never
// imports an adapter).
package wiring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/google/wire"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/adapters/notify"
	"github.com/docketgo/docket/adapters/postgres"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/migrations"
	"github.com/docketgo/docket/ports"
)

// DatabaseURL is a PostgreSQL connection string (URL or key=value). Empty
// means "from the libpq environment" (PGHOST, PGPORT, PGUSER, PGDATABASE,
// PGPASSWORD, PGSSLMODE, ...).
type DatabaseURL string

// SchemaName is the configured Docket schema; empty means the schema in
// which the connection's search_path finds docket_runs.
type SchemaName string

// Schema is the resolved Docket schema the store and listener use.
type Schema string

// DefaultConnectTimeout bounds connecting when the connection string sets
// no connect_timeout.
const DefaultConnectTimeout = 10 * time.Second

// DefaultPoolSize is the pool's size when the connection string sets no
// pool_max_conns (pgx would open at most max(4, CPUs)): an engine on
// PostgreSQL keeps up to two statements in flight for each of its three
// batched writes (mid-run commits, finishing commits, insertions), and
// its claim poll, signals, reads and the pruner need connections beside
// them.
const DefaultPoolSize = 12

// Settings are the plain inputs of an injector. Pass the fields an
// injector needs with wire.FieldsOf.
type Settings struct {
	DatabaseURL DatabaseURL
	Schema      SchemaName
	// Engine is the engine configuration; NewEngine fills in its Backend,
	// Nodes, Telemetry and Logger from the other providers.
	Engine engine.Config
	Logger *slog.Logger
	// Admission is how the store takes part in claim admission (the
	// Admitting sets only).
	Admission Admission
	// Telemetry receives the engine's, the store's and the listener's
	// signals (SettingsTelemetrySet only; nil: none).
	Telemetry ports.Telemetry
}

// Admission chooses a store's claim policy and whether opening the store
// makes that policy the schema's admission authority.
type Admission struct {
	// Policy is the claim policy the store admits with (nil:
	// claim.Legacy). An engine in TenantRequired mode needs
	// claim.WindowedInterleave (engine.ClaimPolicyTenantFair.Policy()).
	Policy claim.Policy
	// Passive leaves a PostgreSQL schema's admission mode as it is (see
	// postgres.Config.KeepAdmissionMode): for processes that never claim,
	// so that running one cannot stop a fleet of another policy.
	Passive bool
}

// Runtime is an assembled engine with the store it runs on.
type Runtime struct {
	Engine  *engine.Engine
	Backend ports.Backend
	// Postgres and Pool are set on PostgreSQL; Memory on the in-memory
	// store.
	Postgres *postgres.Store
	Pool     *pgxpool.Pool
	Memory   *memory.Store
	// Schema is the PostgreSQL schema in use ("" on memory).
	Schema Schema
}

// PostgresSet provides a PostgreSQL-backed ports.Backend and a Runtime.
// It needs a ports.Notifier (ListenSet or PollOnlySet), a ports.Telemetry,
// a context, DatabaseURL, SchemaName and a *slog.Logger.
var PostgresSet = wire.NewSet(
	NewPool,
	ResolveSchema,
	NewPostgresStore,
	wire.Bind(new(ports.Backend), new(*postgres.Store)),
	NewPostgresRuntime,
)

// AdmittingPostgresSet is PostgresSet with the store's claim policy and
// gate handling taken from an Admission (see Settings.Admission).
var AdmittingPostgresSet = wire.NewSet(
	NewPool,
	ResolveSchema,
	NewAdmittingPostgresStore,
	wire.Bind(new(ports.Backend), new(*postgres.Store)),
	NewPostgresRuntime,
)

// AdmittingMemorySet is MemorySet with the store's claim policy taken
// from an Admission.
var AdmittingMemorySet = wire.NewSet(
	NewAdmittingMemoryStore,
	wire.Bind(new(ports.Backend), new(*memory.Store)),
	NewMemoryRuntime,
)

// DatabaseSet provides only the pool, for commands that manage the schema
// (migrations) and need no store.
var DatabaseSet = wire.NewSet(NewPool)

// MemorySet provides the in-memory ports.Backend and a Runtime. Nothing
// it stores outlives the process.
var MemorySet = wire.NewSet(
	NewMemoryStore,
	wire.Bind(new(ports.Backend), new(*memory.Store)),
	NewMemoryRuntime,
)

// ListenSet provides the LISTEN/NOTIFY wake listener: dispatchers wake as
// soon as work is committed instead of at their next poll.
var ListenSet = wire.NewSet(NewListener, wire.Bind(new(ports.Notifier), new(*notify.Listener)))

// PollOnlySet provides no listener: dispatchers find work by polling
// alone. Use it where LISTEN is unavailable (PgBouncer in transaction
// pooling mode) or unwanted.
var PollOnlySet = wire.NewSet(PollOnly)

// NoTelemetrySet provides telemetry that records nothing.
var NoTelemetrySet = wire.NewSet(NoTelemetry)

// SettingsTelemetrySet provides Settings.Telemetry, so that one injector
// serves with and without telemetry. It needs the Settings.
var SettingsTelemetrySet = wire.NewSet(TelemetryOf)

// EngineSet provides the engine. It needs a ports.Backend, a
// *node.Registry, a ports.Telemetry, an engine.Config and a *slog.Logger.
var EngineSet = wire.NewSet(NewEngine)

// NewPool opens a pgx pool and checks that the server answers.
func NewPool(ctx context.Context, url DatabaseURL) (*pgxpool.Pool, func(), error) {
	cfg, err := pgxpool.ParseConfig(string(url))
	if err != nil {
		// pgx quotes the connection string (its password redacted, as
		// well as it can) before its reason: only the reason is said, and
		// not even that if it holds the password.
		reason := "check its syntax"
		if r := parseReason(err, string(url)); r != "" {
			reason = r
		}
		if url == "" {
			// No string was given: what does not parse is the PG* variables.
			return nil, nil, fmt.Errorf("%w: the PG* variables do not parse (%s)", ErrDatabaseURL, reason)
		}
		return nil, nil, fmt.Errorf("%w: the database URL does not parse (%s)", ErrDatabaseURL, reason)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	if !strings.Contains(string(url), "pool_max_conns") {
		cfg.MaxConns = max(cfg.MaxConns, DefaultPoolSize)
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "docket"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("open a connection pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("connect to PostgreSQL at %s: %w", describe(cfg), err)
	}
	return pool, pool.Close, nil
}

// parseReason is what pgx says is wrong with the connection string url,
// without the string itself; "" when that cannot be told apart from the
// string or would repeat its password.
func parseReason(err error, url string) string {
	msg := err.Error()
	i := strings.LastIndex(msg, "`: ")
	if i < 0 {
		return ""
	}
	reason := msg[i+len("`: "):]
	if reason == "" || url != "" && strings.Contains(reason, url) {
		return ""
	}
	// The variables fill in what the string leaves out: PGPASSWORD too.
	for _, secret := range append(passwordCandidates(url), os.Getenv("PGPASSWORD")) {
		if secret == "" {
			continue
		}
		if strings.Contains(reason, secret) {
			return ""
		}
	}
	return reason
}

// passwordCandidates are the parts of a connection string that may be its
// password: a URL's userinfo after its first colon, and keyword/value
// password values.
func passwordCandidates(url string) []string {
	var out []string
	if _, rest, ok := strings.Cut(url, "://"); ok {
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if _, pw, ok := strings.Cut(rest[:at], ":"); ok && pw != "" {
				out = append(out, pw)
			}
		}
	}
	for _, m := range keywordPassword.FindAllStringSubmatch(url, -1) {
		if pw := strings.Trim(m[1], "'"); pw != "" {
			out = append(out, pw)
		}
	}
	return out
}

var keywordPassword = regexp.MustCompile(`password\s*=\s*('[^']*'|\S+)`)

// ErrDatabaseURL reports a connection string that does not parse.
var ErrDatabaseURL = errors.New("invalid database URL")

// describe names the server of a pool config without credentials.
func describe(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return fmt.Sprintf("%s:%d/%s", c.Host, c.Port, c.Database)
}

// ResolveSchema validates the configured schema, or finds the schema of
// docket_runs on the search path when none is configured.
func ResolveSchema(ctx context.Context, pool *pgxpool.Pool, name SchemaName) (Schema, error) {
	s, err := migrations.ResolveSchema(ctx, pool, string(name))
	return Schema(s), err
}

// NewListener returns the LISTEN/NOTIFY listener of schema. It connects
// only when a dispatcher starts listening.
// Its session carries the pool's application_name with "-wake-listener"
// appended, so that pg_stat_activity tells it from the pool's sessions.
func NewListener(pool *pgxpool.Pool, schema Schema, logger *slog.Logger, telemetry ports.Telemetry) (*notify.Listener, error) {
	cfg := pool.Config().ConnConfig // a copy
	cfg.RuntimeParams = maps.Clone(cfg.RuntimeParams)
	if name := cfg.RuntimeParams["application_name"]; name != "" {
		cfg.RuntimeParams["application_name"] = name + "-wake-listener"
	}
	return notify.NewListener(notify.ListenerConfig{
		ConnConfig: cfg,
		Schema:     string(schema),
		Logger:     logger,
		Telemetry:  telemetry,
	})
}

// PollOnly provides no notifier: the store then reports no listener and
// dispatchers rely on polling.
func PollOnly() ports.Notifier { return nil }

// NoTelemetry provides ports.NopTelemetry.
func NoTelemetry() ports.Telemetry { return ports.NopTelemetry{} }

// TelemetryOf provides s.Telemetry, or ports.NopTelemetry when it is nil.
func TelemetryOf(s Settings) ports.Telemetry {
	if s.Telemetry == nil {
		return ports.NopTelemetry{}
	}
	return s.Telemetry
}

// NewPostgresStore opens the PostgreSQL store on schema, refusing a schema
// that is not at the version this build needs. It admits with claim.Legacy.
func NewPostgresStore(ctx context.Context, pool *pgxpool.Pool, schema Schema, notifier ports.Notifier,
	telemetry ports.Telemetry) (*postgres.Store, func(), error) {
	return NewAdmittingPostgresStore(ctx, pool, schema, notifier, telemetry, Admission{})
}

// NewAdmittingPostgresStore is NewPostgresStore with the claim policy and
// gate handling of adm.
func NewAdmittingPostgresStore(ctx context.Context, pool *pgxpool.Pool, schema Schema, notifier ports.Notifier,
	telemetry ports.Telemetry, adm Admission) (*postgres.Store, func(), error) {
	store, err := postgres.New(ctx, postgres.Config{
		Pool:              pool,
		Schema:            string(schema),
		Notifier:          notifier,
		Telemetry:         telemetry,
		Policy:            adm.Policy,
		KeepAdmissionMode: adm.Passive,
	})
	if err != nil {
		return nil, nil, err
	}
	return store, func() { _ = store.Close() }, nil
}

// NewMemoryStore returns an empty in-memory store.
func NewMemoryStore() *memory.Store { return memory.New(memory.Options{}) }

// NewAdmittingMemoryStore returns an empty in-memory store admitting with
// adm's policy.
func NewAdmittingMemoryStore(adm Admission) *memory.Store {
	return memory.New(memory.Options{Policy: adm.Policy})
}

// NewEngine completes cfg with the other providers and builds the engine.
// The engine is not started.
func NewEngine(cfg engine.Config, backend ports.Backend, nodes *node.Registry, telemetry ports.Telemetry,
	logger *slog.Logger) (*engine.Engine, error) {
	cfg.Backend = backend
	cfg.Nodes = nodes
	cfg.Telemetry = telemetry
	cfg.Logger = logger
	return engine.New(cfg)
}

// NewPostgresRuntime gathers a PostgreSQL runtime.
func NewPostgresRuntime(e *engine.Engine, store *postgres.Store, pool *pgxpool.Pool, schema Schema) *Runtime {
	return &Runtime{Engine: e, Backend: store, Postgres: store, Pool: pool, Schema: schema}
}

// NewMemoryRuntime gathers an in-memory runtime.
func NewMemoryRuntime(e *engine.Engine, store *memory.Store) *Runtime {
	return &Runtime{Engine: e, Backend: store, Memory: store}
}
