package cli

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/demo"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/ports"
)

var metricsAddrLine = regexp.MustCompile(`metrics on http://(\S+)/metrics`)

// metricsWorker runs `docket worker --metrics-addr 127.0.0.1:0` in-process
// and returns the address its status line names, and a stop function
// that ends it and returns its result.
func (c *cli) metricsWorker() (string, func() result) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedBuffer
	opts := c.opts
	opts.Getenv = func(k string) string { return c.env[k] }
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"worker", "--poll-interval", "50ms", "--metrics-addr", "127.0.0.1:0"},
			IO{In: strings.NewReader(""), Out: &stdout, Err: &stderr}, opts)
	}()
	stop := func() result {
		cancel()
		return result{code: <-done, stdout: stdout.String(), stderr: stderr.String()}
	}
	var addr string
	eventually(c.t, "the worker's status line", func() bool {
		if m := metricsAddrLine.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
			return true
		}
		select {
		case code := <-done:
			c.t.Fatalf("the worker exited with %d: %s", code, stderr.String())
		default:
		}
		return false
	})
	var once sync.Once
	var res result
	c.t.Cleanup(func() { once.Do(func() { res = stop() }) })
	return addr, func() result { once.Do(func() { res = stop() }); return res }
}

// eventually polls cond until it holds, for at most a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// counterSum adds up a Prometheus counter's samples whose labels include
// every given name="value" pair.
func counterSum(exposition, name string, labels ...string) float64 {
	var sum float64
	for _, line := range strings.Split(exposition, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		matches := true
		for _, l := range labels {
			matches = matches && strings.Contains(line, l)
		}
		if !matches {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

func TestWorkerServesMetricsAndHealth(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	addr, stop := c.metricsWorker()

	code, body := httpGet(t, "http://"+addr+"/healthz")
	assert.Equal(t, http.StatusOK, code, body)
	var health healthJSON
	require.NoError(t, json.Unmarshal([]byte(body), &health), body)
	assert.Equal(t, "ok", health.Status)

	c.ok("graph", "publish", "--example")
	const runs = 3
	for range runs {
		var done runJSON
		c.okJSON(&done, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":250.0}`, "--await", "15s")
		require.Equal(t, "done", string(done.Status))
	}

	// The worker records a commit just after it is durable: by the next
	// scrape, if not by the first.
	var metrics string
	eventually(t, "the completed runs' commits", func() bool {
		_, metrics = httpGet(t, "http://"+addr+"/metrics")
		return counterSum(metrics, "docket_commits_total", `docket_checkpoint_type="run_completed"`) >= runs
	})
	assert.Equal(t, float64(runs), counterSum(metrics, "docket_commits_total", `docket_checkpoint_type="run_completed"`),
		"one run_completed commit per run:\n%s", metrics)
	assert.Positive(t, counterSum(metrics, "docket_commits_total", `docket_checkpoint_type="step_committed"`))
	assert.Zero(t, counterSum(metrics, "docket_commits_total", `docket_checkpoint_type="run_initialized"`),
		"runs start commits in its own process, not the worker's")
	assert.Contains(t, metrics, "docket_dispatcher_poll_duration_seconds")
	assert.Contains(t, metrics, "docket_dispatcher_concurrency")
	assert.Regexp(t, `target_info\{[^}]*service_name="docket-worker"`, metrics, "the worker names itself")

	code, body = httpGet(t, "http://"+addr+"/healthz")
	assert.Equal(t, http.StatusOK, code, body)
	require.NoError(t, json.Unmarshal([]byte(body), &health), body)
	assert.Equal(t, "ok", health.Status)
	assert.True(t, health.Listening, "the worker listens for wake-ups")
	require.NotNil(t, health.LastPollSecondsAgo, body)

	res := stop()
	assert.Equal(t, ExitOK, res.code, res.stderr)
	assert.Contains(t, res.stderr, "docket worker: stopped")
	_, err := http.Get("http://" + addr + "/healthz")
	assert.Error(t, err, "the endpoint closes with the worker")
}

// A worker whose claim policy a worker started since with the other one
// replaced as the schema's ("last boot wins") claims nothing: its /healthz
// says so (503, inactive_engine, not the store unanswered) and its log
// says it once, however many polls it makes. A worker started with its
// policy makes it the schema's again, and the first is healthy again.
func TestAWorkerOfTheReplacedClaimPolicyIsUnhealthyAsTheInactiveEngine(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	addr, stop := c.metricsWorker() // legacy, polling every 50ms
	healthz := func() (int, healthJSON) {
		t.Helper()
		code, body := httpGet(t, "http://"+addr+"/healthz")
		var health healthJSON
		require.NoError(t, json.Unmarshal([]byte(body), &health), body)
		return code, health
	}
	eventually(t, "the worker healthy", func() bool { code, _ := healthz(); return code == http.StatusOK })

	c.ok("worker", "--claim-policy", "tenant-fair", "--for", "10ms")
	var health healthJSON
	eventually(t, "the worker inactive", func() bool {
		var code int
		code, health = healthz()
		return code == http.StatusServiceUnavailable
	})
	assert.Equal(t, "inactive_engine", health.Status)
	require.NotNil(t, health.UnansweredSeconds, "its polls claim nothing")
	time.Sleep(20 * 50 * time.Millisecond) // twenty poll intervals
	code, health := healthz()
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "inactive_engine", health.Status)

	c.ok("worker", "--for", "10ms") // legacy again
	eventually(t, "the worker healthy again", func() bool { code, _ := healthz(); return code == http.StatusOK })

	res := stop()
	assert.Equal(t, ExitOK, res.code, res.stderr)
	assert.Equal(t, 1, strings.Count(res.stderr, "docket engine is inactive"), res.stderr)
	assert.Contains(t, res.stderr, "another engine made tenant_fair the schema's claim policy")
	assert.Contains(t, res.stderr, "restart it with the tenant_fair claim policy")
	assert.NotContains(t, res.stderr, "claim poll failed", res.stderr)
}

func TestWorkerRefusesAMetricsAddressInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	// Binding comes before connecting: no database is needed to fail.
	res := newCLI(t, nil).fails(ExitUsage, "worker", "--metrics-addr", ln.Addr().String())
	assert.Contains(t, res.stderr, "--metrics-addr")
	assert.Contains(t, res.stderr, ln.Addr().String())
}

func TestHealthRule(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	running := func(lastPoll, unanswered time.Duration) engine.Health {
		h := engine.Health{State: engine.HealthRunning, PollInterval: 5 * time.Second, Listening: true, LastPoll: now.Add(-lastPoll)}
		if unanswered > 0 {
			h.UnansweredSince = now.Add(-unanswered)
		}
		return h
	}
	refused := func(reason string, since time.Duration) engine.Health {
		h := running(since, since)
		h.ClaimPolicyUnavailable = reason
		return h
	}
	for _, tc := range []struct {
		name    string
		health  engine.Health
		status  string
		healthy bool
	}{
		{"running with its polls answered", running(time.Second, 0), "ok", true},
		{"busy: every place taken, no poll for long", running(time.Hour, 0), "ok", true},
		{"a poll unanswered for under three intervals", running(14*time.Second, 14*time.Second), "ok", true},
		{"polls unanswered for over three intervals", running(16*time.Second, 16*time.Second), "store_unanswered", false},
		{"short intervals: ten seconds at least", engine.Health{State: engine.HealthRunning, PollInterval: 50 * time.Millisecond,
			UnansweredSince: now.Add(-9 * time.Second)}, "ok", true},
		{"the inactive engine of its schema, at once", refused(ports.UnavailableInactiveEngine, time.Second), "inactive_engine", false},
		{"a locked admission gate for a moment", refused(ports.UnavailableLockContention, time.Second), "ok", true},
		{"admission refused for over three intervals, by its reason", refused(ports.UnavailableReadOnly, 16*time.Second),
			"read_only_transaction", false},
		{"not started yet", engine.Health{State: engine.HealthCreated}, "starting", false},
		{"draining", engine.Health{State: engine.HealthStopping, LastPoll: now}, "stopping", false},
		{"stopped", engine.Health{State: engine.HealthStopped}, "stopped", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, healthy := healthOf(tc.health, now)
			assert.Equal(t, tc.status, body.Status)
			assert.Equal(t, tc.healthy, healthy)
		})
	}
}
