package pgtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// pgLibGlob is where Debian-style packages install versioned binaries.
const pgLibGlob = "/usr/lib/postgresql/*/bin"

// dockerProbeTimeout bounds the whole Docker probe, so machines without an
// engine pay at most this once per test process.
const dockerProbeTimeout = time.Second

// environment is what discovery reads from the machine; tests substitute
// it to exercise the failure path.
type environment struct {
	getenv      func(string) string
	lookPath    func(string) (string, error)
	binGlob     string
	probeDocker func(getenv func(string) string) error
}

var machine = environment{
	getenv:      os.Getenv,
	lookPath:    exec.LookPath,
	binGlob:     pgLibGlob,
	probeDocker: probeDocker,
}

// registry holds one server per source for the whole test process.
var registry = struct {
	sync.Mutex
	slots   map[Source]*slot
	servers []*server
}{slots: map[Source]*slot{}}

type slot struct {
	once sync.Once
	srv  *server
	err  error
}

func sourceFromEnv() Source {
	value := strings.ToLower(strings.TrimSpace(os.Getenv(EnvSource)))
	if value == "" {
		return SourceAuto
	}
	return Source(value)
}

// serverFor finds or starts the process's server for source, once; a
// failure is remembered so every later test fails fast with the same
// message.
func serverFor(source Source) (*server, error) {
	switch source {
	case SourceAuto, SourceURL, SourceContainer, SourceLocal:
	default:
		return nil, fmt.Errorf("pgtest: %s=%q: want auto, url, container or local", EnvSource, string(source))
	}
	registry.Lock()
	s, ok := registry.slots[source]
	if !ok {
		s = &slot{}
		registry.slots[source] = s
	}
	registry.Unlock()

	s.once.Do(func() {
		if source == SourceAuto {
			s.srv, s.err = autoServer(machine)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		s.srv, s.err = startServer(ctx, source, machine)
		if s.err == nil {
			registry.Lock()
			registry.servers = append(registry.servers, s.srv)
			registry.Unlock()
		}
	})
	return s.srv, s.err
}

// startServer obtains a server from one concrete source.
func startServer(ctx context.Context, source Source, env environment) (*server, error) {
	switch source {
	case SourceURL:
		dsn := env.getenv(EnvURL)
		if dsn == "" {
			return nil, fmt.Errorf("pgtest: %s=url but %s is not set", EnvSource, EnvURL)
		}
		return openURL(ctx, dsn)
	case SourceContainer:
		if err := env.probeDocker(env.getenv); err != nil {
			return nil, fmt.Errorf("pgtest: no Docker engine for testcontainers: %w", err)
		}
		return startContainer(ctx)
	case SourceLocal:
		binDir, err := findBinaries(env)
		if err != nil {
			return nil, fmt.Errorf("pgtest: %w", err)
		}
		return startLocal(ctx, binDir)
	}
	return nil, fmt.Errorf("pgtest: unknown source %q", source)
}

// openURL uses a server given by URL.
func openURL(ctx context.Context, dsn string) (*server, error) {
	if _, err := withDatabase(dsn, "postgres"); err != nil {
		return nil, fmt.Errorf("pgtest: %s: %w", EnvURL, err)
	}
	srv, err := connectServer(ctx, SourceURL, "server "+redact(dsn), dsn, nil)
	if err != nil {
		return nil, fmt.Errorf("pgtest: connect to %s=%s: %w", EnvURL, redact(dsn), err)
	}
	return srv, nil
}

// autoServer walks the sources in order. A URL that is set is used or
// fails on its own; the container and local sources fall through to the
// next on failure, and when none works the error names all three.
func autoServer(env environment) (*server, error) {
	if env.getenv(EnvURL) != "" {
		return serverFor(SourceURL)
	}
	reasons := []string{fmt.Sprintf("%s=postgres://USER@HOST:PORT/DB, a role that may CREATE DATABASE (not set)", EnvURL)}

	if err := env.probeDocker(env.getenv); err != nil {
		reasons = append(reasons, fmt.Sprintf("a running Docker engine, for testcontainers-go (%v)", err))
	} else if srv, err := serverFor(SourceContainer); err != nil {
		reasons = append(reasons, fmt.Sprintf("a running Docker engine, for testcontainers-go (the engine answered but the container failed: %v)", err))
	} else {
		return srv, nil
	}

	if _, err := findBinaries(env); err != nil {
		reasons = append(reasons, fmt.Sprintf("the PostgreSQL server binaries initdb and postgres, on PATH or under %s (%v)", env.binGlob, err))
	} else if srv, err := serverFor(SourceLocal); err != nil {
		reasons = append(reasons, fmt.Sprintf("the PostgreSQL server binaries initdb and postgres, on PATH or under %s (found, but the cluster failed: %v)", env.binGlob, err))
	} else {
		return srv, nil
	}
	return nil, errors.New("pgtest: no PostgreSQL server for the tests; provide one of:\n  - " + strings.Join(reasons, "\n  - "))
}

// shutdown releases every server this process started.
func shutdown() error {
	registry.Lock()
	servers := registry.servers
	registry.servers = nil
	registry.Unlock()
	var errs []error
	for _, srv := range servers {
		if err := srv.close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// findBinaries returns a directory holding both initdb and postgres: the
// directory of the initdb on PATH (its symlink target first), else the
// highest version under binGlob.
func findBinaries(env environment) (string, error) {
	var dirs []string
	if initdb, err := env.lookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(initdb); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
		dirs = append(dirs, filepath.Dir(initdb))
	}
	versioned, _ := filepath.Glob(env.binGlob)
	sort.SliceStable(versioned, func(i, j int) bool {
		return versionLess(filepath.Base(filepath.Dir(versioned[j])), filepath.Base(filepath.Dir(versioned[i])))
	})
	dirs = append(dirs, versioned...)
	for _, dir := range dirs {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("no directory with both initdb and postgres on PATH or under %s", env.binGlob)
}

// versionLess orders "9.6" < "15" < "15.1" numerically, part by part.
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, errX := strconv.Atoi(as[i])
		y, errY := strconv.Atoi(bs[i])
		if errX != nil || errY != nil {
			if as[i] != bs[i] {
				return as[i] < bs[i]
			}
			continue
		}
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}

func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0
}

// probeDocker reports whether a Docker engine answers /_ping at DOCKER_HOST
// or, when that is unset, at one of the usual socket paths.
func probeDocker(getenv func(string) string) error {
	deadline := time.Now().Add(dockerProbeTimeout)
	if host := getenv("DOCKER_HOST"); host != "" {
		u, err := url.Parse(host)
		if err != nil {
			return fmt.Errorf("DOCKER_HOST=%q is not a URL", host)
		}
		switch u.Scheme {
		case "unix":
			return pingDocker("unix", u.Path, deadline)
		case "tcp":
			return pingDocker("tcp", u.Host, deadline)
		default:
			return fmt.Errorf("DOCKER_HOST=%q: only unix:// and tcp:// are probed", host)
		}
	}
	var candidates []string
	candidates = append(candidates, "/var/run/docker.sock")
	if home := getenv("HOME"); home != "" {
		candidates = append(candidates, filepath.Join(home, ".docker", "run", "docker.sock"),
			filepath.Join(home, ".docker", "desktop", "docker.sock"))
	}
	if runtimeDir := getenv("XDG_RUNTIME_DIR"); runtimeDir != "" {
		candidates = append(candidates, filepath.Join(runtimeDir, "docker.sock"))
	}
	var failures []string
	for _, socket := range candidates {
		if _, err := os.Stat(socket); err != nil {
			continue
		}
		err := pingDocker("unix", socket, deadline)
		if err == nil {
			return nil
		}
		failures = append(failures, err.Error())
	}
	if len(failures) == 0 {
		return fmt.Errorf("DOCKER_HOST is not set and no socket exists at %s", strings.Join(candidates, ", "))
	}
	return errors.New(strings.Join(failures, "; "))
}

// pingDocker sends GET /_ping and expects HTTP 200 before deadline.
func pingDocker(network, address string, deadline time.Time) error {
	conn, err := net.DialTimeout(network, address, time.Until(deadline))
	if err != nil {
		return fmt.Errorf("no Docker engine answered at %s: %v", address, err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(deadline)
	if _, err := fmt.Fprint(conn, "GET /_ping HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n"); err != nil {
		return fmt.Errorf("no Docker engine answered at %s: %v", address, err)
	}
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("no Docker engine answered at %s: %v", address, err)
	}
	if fields := strings.Fields(status); len(fields) < 2 || !strings.HasPrefix(fields[0], "HTTP/") || fields[1] != "200" {
		return fmt.Errorf("%s answered %q to /_ping, not a Docker engine", address, strings.TrimSpace(status))
	}
	return nil
}
