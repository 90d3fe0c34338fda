package pgproc_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/pgtest/pgproc"
)

func TestStartReportsTheExitOfTheProcess(t *testing.T) {
	t.Parallel()
	ok, err := pgproc.Start(exec.Command("true"))
	require.NoError(t, err)
	<-ok.Exited()
	assert.NoError(t, ok.Err())

	failed, err := pgproc.Start(exec.Command("false"))
	require.NoError(t, err)
	<-failed.Exited()
	var exit *exec.ExitError
	assert.ErrorAs(t, failed.Err(), &exit)

	_, err = pgproc.Start(exec.Command("/nonexistent/postgres"))
	assert.Error(t, err, "a binary that cannot start is an error of Start")
}

func TestUnprivilegedIsNeverRoot(t *testing.T) {
	t.Parallel()
	u, err := pgproc.Unprivileged()
	if os.Geteuid() != 0 {
		require.NoError(t, err)
		assert.Nil(t, u, "a non-root process runs the server as itself")
		return
	}
	if err != nil {
		assert.Contains(t, err.Error(), "no unprivileged user")
		return
	}
	require.NotNil(t, u)
	assert.NotZero(t, u.Cred.Uid, "never root")
	assert.Contains(t, []string{"postgres", "nobody"}, u.Name)
}

func TestEnvKeepsNothingOfTheCallersButPath(t *testing.T) {
	t.Setenv("PGPORT", "1")
	env := pgproc.Env("/tmp/cluster")
	assert.Contains(t, env, "HOME=/tmp/cluster")
	assert.Contains(t, env, "PATH="+os.Getenv("PATH"))
	for _, kv := range env {
		assert.NotContains(t, kv, "PGPORT")
	}
}
