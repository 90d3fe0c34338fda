package cli

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/cmd/wiring"
)

// settings are the wire injectors' inputs from the global flags.
func (a *app) settings(cfg engine.Config) (wiring.Settings, error) {
	logger, err := a.logger()
	if err != nil {
		return wiring.Settings{}, err
	}
	if a.tenant != "" {
		cfg.TenantMode = engine.TenantRequired
	}
	policy, err := a.claimPolicy()
	if err != nil {
		return wiring.Settings{}, err
	}
	cfg.ClaimPolicy = policy
	return wiring.Settings{
		DatabaseURL: wiring.DatabaseURL(a.databaseURL),
		Schema:      wiring.SchemaName(a.schema),
		Engine:      cfg,
		Logger:      logger,
		// Commands that never claim leave the schema's admission mode
		// alone: a one-off command must not stop a running fleet.
		Admission: wiring.Admission{Policy: policy.Policy(), Passive: !a.admits},
		Telemetry: a.telemetry,
	}, nil
}

// openEngine assembles an engine on PostgreSQL (not started).
func (a *app) openEngine(ctx context.Context, cfg engine.Config) (*wiring.Runtime, func(), error) {
	s, err := a.settings(cfg)
	if err != nil {
		return nil, nil, err
	}
	rt, cleanup, err := openPostgres(ctx, s)
	if err != nil {
		return nil, nil, a.withDatabaseHint(err)
	}
	return rt, cleanup, nil
}

// openPool connects without checking the schema (migrations, conformance).
func (a *app) openPool(ctx context.Context) (*pgxpool.Pool, func(), error) {
	s, err := a.settings(engine.Config{})
	if err != nil {
		return nil, nil, err
	}
	pool, cleanup, err := openDatabase(ctx, s)
	if err != nil {
		return nil, nil, a.withDatabaseHint(err)
	}
	return pool, cleanup, nil
}

// client is the facade of the configured scope: the tenant's with
// --tenant, else the tenantless one.
func (a *app) client(rt *wiring.Runtime) *engine.Client {
	if a.tenant != "" {
		return rt.Engine.Tenant(a.tenant)
	}
	return rt.Engine.Client
}

// withDatabaseHint adds where the database comes from when nothing was
// configured and connecting failed.
func (a *app) withDatabaseHint(err error) error {
	if a.databaseURL != "" {
		return err
	}
	for _, v := range []string{"PGHOST", "PGDATABASE", "PGSERVICE", "PGPORT", "PGUSER"} {
		if a.opts.Getenv(v) != "" {
			return err
		}
	}
	return fmt.Errorf("%w (no database configured: set --database-url, DOCKET_DATABASE_URL, DATABASE_URL or the PG* variables)", err)
}
