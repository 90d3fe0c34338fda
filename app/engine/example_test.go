package engine_test

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docketgo/docket/adapters/notify"
	"github.com/docketgo/docket/adapters/postgres"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/app/prune"
)

// Example_wiring is the production wiring of docs/operations.md (compiled,
// not run: it needs a database): a pool, a LISTEN/NOTIFY wake listener on
// the store's schema, the PostgreSQL store, and an engine with a pruner.
func Example_wiring() {
	ctx := context.Background()
	dsn := os.Getenv("DATABASE_URL")
	registry := node.NewRegistry() // register every node the graphs use

	pool, err := pgxpool.New(ctx, dsn) // READ COMMITTED, read-write
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	listener, err := notify.NewListener(notify.ListenerConfig{
		ConnConfig: pool.Config().ConnConfig, Schema: "public",
	})
	if err != nil {
		log.Fatal(err)
	}
	store, err := postgres.New(ctx, postgres.Config{Pool: pool, Schema: "public", Notifier: listener})
	if err != nil {
		log.Fatal(err)
	}

	eng, err := engine.New(engine.Config{
		Backend: store,
		Nodes:   registry,
		Pruner: &prune.Config{
			Interval:       time.Minute,
			EventRetention: 7 * 24 * time.Hour,
			RunRetention:   30 * 24 * time.Hour,
			BatchSize:      500,
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := eng.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer eng.Stop(context.Background())
}
