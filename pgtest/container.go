package pgtest

import (
	"context"
	"fmt"
	"os"

	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
)

// defaultImage is the container image; DOCKET_TEST_POSTGRES_IMAGE overrides it.
const defaultImage = "postgres:17-alpine"

// startContainer starts a PostgreSQL container (fsync off, as the module
// configures it) and returns it as a server.
func startContainer(ctx context.Context) (*server, error) {
	image := os.Getenv("DOCKET_TEST_POSTGRES_IMAGE")
	if image == "" {
		image = defaultImage
	}
	container, err := tcpostgres.Run(ctx, image,
		tcpostgres.WithDatabase("postgres"),
		tcpostgres.WithUsername("postgres"),
		tcpostgres.WithPassword("postgres"),
		tcpostgres.BasicWaitStrategies(),
	)
	if err != nil {
		if container != nil {
			_ = testcontainers.TerminateContainer(container)
		}
		return nil, fmt.Errorf("start container %s: %w", image, err)
	}
	stop := func() error { return testcontainers.TerminateContainer(container) }
	dsn, err := container.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		_ = stop()
		return nil, fmt.Errorf("container %s: %w", image, err)
	}
	srv, err := connectServer(ctx, SourceContainer, "container "+image, dsn, stop)
	if err != nil {
		_ = stop()
		return nil, fmt.Errorf("container %s: %w", image, err)
	}
	return srv, nil
}
