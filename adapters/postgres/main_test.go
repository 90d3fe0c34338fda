package postgres_test

import (
	"testing"

	"github.com/docketgo/docket/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
