package pgtest

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// bareMachine has no URL, no Docker engine and no PostgreSQL binaries.
func bareMachine(t *testing.T) environment {
	return environment{
		getenv:      func(string) string { return "" },
		lookPath:    func(string) (string, error) { return "", errors.New("not on PATH") },
		binGlob:     filepath.Join(t.TempDir(), "*", "bin"),
		probeDocker: func(func(string) string) error { return errors.New("no engine answered") },
	}
}

func TestDiscoveryWithoutAnyServerFailsNamingAllThreeOptions(t *testing.T) {
	t.Parallel()
	_, err := autoServer(bareMachine(t))
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, EnvURL)
	assert.Contains(t, msg, "Docker engine")
	assert.Contains(t, msg, "initdb and postgres")
	assert.Contains(t, msg, "no engine answered", "the reason each option failed is kept")
}

func TestForcedSourcesFailWithTheirOwnReason(t *testing.T) {
	t.Parallel()
	cases := []struct {
		source Source
		want   string
	}{
		{SourceURL, EnvURL + " is not set"},
		{SourceContainer, "no Docker engine"},
		{SourceLocal, "no directory with both initdb and postgres"},
	}
	for _, tc := range cases {
		t.Run(string(tc.source), func(t *testing.T) {
			t.Parallel()
			_, err := startServer(context.Background(), tc.source, bareMachine(t))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestUnknownSourceIsRejected(t *testing.T) {
	t.Parallel()
	_, err := serverFor(Source("docker"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "want auto, url, container or local")
}

func TestURLSourceRejectsNonPostgresURLs(t *testing.T) {
	t.Parallel()
	_, err := openURL(context.Background(), "mysql://root:secret@localhost/db")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a postgres:// URL")
	assert.NotContains(t, err.Error(), "secret", "passwords never reach test output")
}

// fakeEngine serves one canned reply per connection on a unix socket.
func fakeEngine(t *testing.T, reply string) string {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "docker.sock")
	listener, err := net.Listen("unix", socket)
	require.NoError(t, err)
	t.Cleanup(func() { _ = listener.Close() })
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = conn.Close() }()
				_, _ = conn.Read(make([]byte, 1024))
				if reply == "" {
					time.Sleep(5 * time.Second) // an engine that never answers
					return
				}
				_, _ = conn.Write([]byte(reply))
			}()
		}
	}()
	return socket
}

func TestDockerProbe(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		dockerHost func(t *testing.T) string
		wantErr    string
	}{
		{"answers ping", func(t *testing.T) string {
			return "unix://" + fakeEngine(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK")
		}, ""},
		{"missing socket", func(t *testing.T) string {
			return "unix://" + filepath.Join(t.TempDir(), "absent.sock")
		}, "no Docker engine answered"},
		{"not an engine", func(t *testing.T) string {
			return "unix://" + fakeEngine(t, "SSH-2.0-OpenSSH\r\n")
		}, "not a Docker engine"},
		{"silent engine times out", func(t *testing.T) string {
			return "unix://" + fakeEngine(t, "")
		}, "no Docker engine answered"},
		{"refused tcp port", func(*testing.T) string { return "tcp://127.0.0.1:1" }, "no Docker engine answered"},
		{"unsupported scheme", func(*testing.T) string { return "npipe:////./pipe/docker_engine" }, "only unix:// and tcp://"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			host := tc.dockerHost(t)
			started := time.Now()
			err := probeDocker(func(key string) string {
				if key == "DOCKER_HOST" {
					return host
				}
				return ""
			})
			assert.Less(t, time.Since(started), 2*dockerProbeTimeout, "the probe must give up quickly")
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestDockerProbeWithoutDockerHostLooksForSockets(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	err := probeDocker(func(key string) string {
		if key == "HOME" {
			return home
		}
		return ""
	})
	if _, statErr := os.Stat("/var/run/docker.sock"); statErr == nil {
		return // this machine has a real engine socket; the error text differs
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(home, ".docker", "run", "docker.sock"))
}

// fakeBinDir creates dir with executable stand-ins for the given tools.
func fakeBinDir(t *testing.T, dir string, tools ...string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, tool := range tools {
		require.NoError(t, os.WriteFile(filepath.Join(dir, tool), []byte("#!/bin/sh\n"), 0o755))
	}
	return dir
}

func TestFindBinaries(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	glob := filepath.Join(root, "lib", "*", "bin")
	for _, version := range []string{"9.6", "15", "12"} {
		fakeBinDir(t, filepath.Join(root, "lib", version, "bin"), "initdb", "postgres")
	}
	fakeBinDir(t, filepath.Join(root, "lib", "16", "bin"), "initdb") // no server binary
	onPath := fakeBinDir(t, filepath.Join(root, "path"), "initdb", "postgres")
	initdbOnly := fakeBinDir(t, filepath.Join(root, "client"), "initdb")

	cases := []struct {
		name   string
		initdb string
		want   string
	}{
		{"PATH wins", filepath.Join(onPath, "initdb"), onPath},
		{"highest complete version when PATH has none", "", filepath.Join(root, "lib", "15", "bin")},
		{"PATH initdb without postgres falls back", filepath.Join(initdbOnly, "initdb"), filepath.Join(root, "lib", "15", "bin")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := bareMachine(t)
			env.binGlob = glob
			env.lookPath = func(string) (string, error) {
				if tc.initdb == "" {
					return "", errors.New("not on PATH")
				}
				return tc.initdb, nil
			}
			got, err := findBinaries(env)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestVersionLessOrdersNumerically(t *testing.T) {
	t.Parallel()
	ordered := []string{"9.6", "10", "12", "15", "15.1", "16"}
	for i := range ordered {
		for j := range ordered {
			assert.Equal(t, i < j, versionLess(ordered[i], ordered[j]), "%s < %s", ordered[i], ordered[j])
		}
	}
}

func TestSweepRemovesOnlyDirectoriesOfDeadOwners(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	mk := func(name string) string {
		dir := filepath.Join(base, localDirPrefix+name)
		require.NoError(t, os.Mkdir(dir, 0o700))
		return dir
	}
	dead := mk("dead")
	require.NoError(t, os.WriteFile(filepath.Join(dead, ownerLockName), nil, 0o600))
	alive := mk("alive")
	lock, err := lockOwner(alive)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lock.Close() })
	settingUp := mk("setting_up")
	abandoned := mk("abandoned")
	old := time.Now().Add(-2 * staleUnlockedAge)
	require.NoError(t, os.Chtimes(abandoned, old, old))
	unrelated := filepath.Join(base, "something-else")
	require.NoError(t, os.Mkdir(unrelated, 0o700))

	sweepStale(base)

	for dir, keep := range map[string]bool{dead: false, alive: true, settingUp: true, abandoned: false, unrelated: true} {
		_, err := os.Stat(dir)
		assert.Equal(t, keep, err == nil, "%s kept=%v", filepath.Base(dir), err == nil)
	}
}

func TestUniqueNamesAreDistinctValidIdentifiers(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		testName := rapid.String().Draw(t, "testName")
		a, b := uniqueName("docket", testName), uniqueName("docket", testName)
		if a == b {
			t.Fatalf("two names for %q collide: %s", testName, a)
		}
		for _, name := range []string{a, b} {
			if len(name) > 63 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" || name[0] >= '0' && name[0] <= '9' {
				t.Fatalf("%q is not a lower-case identifier of at most 63 bytes", name)
			}
		}
	})
}
