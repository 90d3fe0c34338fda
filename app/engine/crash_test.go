package engine_test

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/ports"
)

// These tests run real worker processes (testdata/crashworker) against
// one PostgreSQL schema and kill or freeze them.

// buildWorker compiles the worker binary into a test directory.
func buildWorker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "crashworker")
	// go test puts its own toolchain first on PATH.
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	cmd := exec.Command(goBin, "build", "-o", bin, "./testdata/crashworker")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "build the worker: %s", out)
	return bin
}

// workerProc is one running worker process.
type workerProc struct {
	cmd    *exec.Cmd
	output string // stdout+stderr file
	done   chan struct{}
}

type workerSet struct {
	t      *testing.T
	bin    string
	args   []string
	mu     sync.Mutex
	active map[*workerProc]bool
}

func newWorkerSet(t *testing.T, bin string, s *pgSchema, extra ...string) *workerSet {
	ws := &workerSet{t: t, bin: bin, active: map[*workerProc]bool{},
		args: append([]string{"-url", s.db.URL, "-schema", s.schema}, extra...)}
	t.Cleanup(ws.killAll)
	return ws
}

func (ws *workerSet) start(name string) *workerProc {
	ws.t.Helper()
	out := filepath.Join(ws.t.TempDir(), name+".log")
	f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(ws.t, err)
	cmd := exec.Command(ws.bin, ws.args...)
	cmd.Stdout, cmd.Stderr = f, f
	require.NoError(ws.t, cmd.Start())
	p := &workerProc{cmd: cmd, output: out, done: make(chan struct{})}
	ws.mu.Lock()
	ws.active[p] = true
	ws.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		_ = f.Close()
		ws.mu.Lock()
		delete(ws.active, p)
		ws.mu.Unlock()
		close(p.done)
	}()
	return p
}

// kill sends sig and, for SIGKILL and SIGTERM, waits for the exit.
func (p *workerProc) kill(sig syscall.Signal) {
	_ = p.cmd.Process.Signal(sig)
	if sig == syscall.SIGKILL || sig == syscall.SIGTERM {
		<-p.done
	}
}

func (p *workerProc) log() string {
	b, _ := os.ReadFile(p.output)
	return string(b)
}

func (ws *workerSet) killAll() {
	ws.mu.Lock()
	procs := make([]*workerProc, 0, len(ws.active))
	for p := range ws.active {
		procs = append(procs, p)
	}
	ws.mu.Unlock()
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		p.kill(syscall.SIGKILL)
	}
}

// crashRegistry mirrors the worker's node references for publishing; the
// publishing process never runs them.
func crashRegistry() *node.Registry {
	noop := func(context.Context, node.Input) (node.Output, error) { return node.Update(nil), nil }
	return node.NewRegistry().
		MustRegister("crash.mark", node.New(nil, noop)).
		MustRegister("crash.slow", node.New(nil, noop))
}

// chainGraph is $start -> n1 -> n2 -> n3 -> n4 -> $finish: four
// supersteps, six checkpoints per run.
func chainGraph(t *testing.T) *graph.Graph {
	b := graph.New("crash-chain")
	prev := graph.Start
	for _, id := range []string{"n1", "n2", "n3", "n4"} {
		b = b.State(id+"_out", schema.String()).
			Node(id, "crash.mark", cfg("field", id+"_out")).
			Edge("edge_to_"+id, prev, id)
		prev = id
	}
	return build(t, b.Edge("edge_n4_finish", "n4", graph.Finish))
}

func table(s *pgSchema, name string) string { return pgx.Identifier{s.schema, name}.Sanitize() }

func queryInt(t *testing.T, conn *pgx.Conn, sql string) int {
	t.Helper()
	var n int
	require.NoError(t, conn.QueryRow(context.Background(), sql).Scan(&n), sql)
	return n
}

func TestKilledWorkersLoseNoRunAndCommitEachTransitionOnce(t *testing.T) {
	t.Parallel()
	const runs = 2000
	ctx := context.Background()
	bin := buildWorker(t)
	s := newPGSchema(t)
	store := s.store(t, nil, false, 8)
	publisher, err := engine.New(engine.Config{Backend: store, Nodes: crashRegistry(), Mode: engine.ModeManual})
	require.NoError(t, err)
	ref, err := publisher.SaveGraph(ctx, chainGraph(t))
	require.NoError(t, err)
	conn := s.db.Connect(t)
	runsTable, eventsTable := table(s, "docket_runs"), table(s, "docket_events")
	doneCount := func() int {
		return queryInt(t, conn, "SELECT count(*) FROM "+runsTable+" WHERE status = 'done'")
	}

	ws := newWorkerSet(t, bin, s)
	var slots [3]*workerProc
	for i := range slots {
		slots[i] = ws.start("w" + string(rune('0'+i)))
	}

	// The killer SIGKILLs a random worker at random moments and restarts
	// it, until told to stop.
	stopKilling := make(chan struct{})
	killerDone := make(chan struct{})
	var kills atomic.Int32
	go func() {
		defer close(killerDone)
		for n := 0; ; n++ {
			select {
			case <-stopKilling:
				return
			case <-time.After(time.Duration(150+rand.IntN(350)) * time.Millisecond):
			}
			i := rand.IntN(len(slots))
			slots[i].kill(syscall.SIGKILL)
			kills.Add(1)
			slots[i] = ws.start("w" + string(rune('0'+i)) + "-" + string(rune('a'+n%26)))
		}
	}()

	// Start the runs from four goroutines while the workers run and die.
	var starters sync.WaitGroup
	startErrs := make(chan error, runs)
	for g := range 4 {
		starters.Go(func() {
			for i := g; i < runs; i += 4 {
				if _, err := publisher.StartRun(ctx, ref, nil); err != nil {
					startErrs <- err
					return
				}
			}
		})
	}
	starters.Wait()
	close(startErrs)
	for err := range startErrs {
		require.NoError(t, err)
	}

	deadline := time.Now().Add(90 * time.Second)
	killing := true
	for doneCount() < runs {
		if killing && (kills.Load() >= 20 || doneCount() >= runs*9/10) {
			close(stopKilling)
			<-killerDone
			killing = false
		}
		require.True(t, time.Now().Before(deadline), "runs still unfinished: %d of %d done", doneCount(), runs)
		time.Sleep(100 * time.Millisecond)
	}
	if killing {
		close(stopKilling)
		<-killerDone
	}
	for _, p := range slots {
		p.kill(syscall.SIGTERM)
	}
	assert.GreaterOrEqual(t, kills.Load(), int32(3), "workers were killed while runs were in flight")
	t.Logf("%d runs done after %d worker kills", runs, kills.Load())

	assert.Equal(t, runs, queryInt(t, conn, "SELECT count(*) FROM "+runsTable), "every run exists")
	assert.Equal(t, runs, doneCount(), "every run is done")
	assert.Zero(t, queryInt(t, conn, "SELECT count(*) FROM "+runsTable+" WHERE claim_token IS NOT NULL OR claimed_at IS NOT NULL"),
		"no claim is left active")
	assert.Zero(t, queryInt(t, conn, `SELECT count(*) FROM (
		SELECT r.run_id FROM `+runsTable+` r LEFT JOIN `+eventsTable+` e
		  ON e.run_id = r.run_id AND e.type IN ('run_completed', 'run_failed', 'run_cancelled')
		GROUP BY r.run_id HAVING count(e.seq) <> 1) x`), "each run has exactly one terminal event")
	assert.Zero(t, queryInt(t, conn, `SELECT count(*) FROM (
		SELECT r.run_id FROM `+runsTable+` r JOIN `+eventsTable+` e ON e.run_id = r.run_id
		GROUP BY r.run_id, r.event_seq
		HAVING min(e.seq) <> 1 OR max(e.seq) <> r.event_seq OR count(*) <> r.event_seq) x`),
		"event seqs are contiguous per run")
	assert.Zero(t, queryInt(t, conn, `SELECT count(*) FROM (
		SELECT r.run_id FROM `+runsTable+` r JOIN `+eventsTable+` e
		  ON e.run_id = r.run_id AND e.type = 'checkpoint_committed'
		GROUP BY r.run_id, r.checkpoint_seq HAVING count(*) <> r.checkpoint_seq OR r.checkpoint_seq <> 6) x`),
		"one checkpoint event per committed checkpoint, six per run")

	// The checkpoint metadata itself: every run's checkpoint seqs are
	// 1..6, each committed once.
	var before *ports.RunCursor
	checked := 0
	for {
		page, err := publisher.ListRuns(ctx, ports.ListRunsParams{Limit: ports.MaxPageLimit, Before: before})
		require.NoError(t, err)
		for _, sum := range page.Runs {
			r, err := publisher.FetchRun(ctx, sum.RunID)
			require.NoError(t, err)
			events := allEvents(t, publisher.Client, sum.RunID)
			requireHistory(t, r, events)
			assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointStepCommitted,
				run.CheckpointStepCommitted, run.CheckpointStepCommitted, run.CheckpointStepCommitted,
				run.CheckpointRunCompleted}, checkpointTypes(events))
			checked++
		}
		if !page.HasMore {
			break
		}
		before = page.NextBefore
	}
	assert.Equal(t, runs, checked)
}

func TestAStoppedWorkerPastTheOrphanTTLLosesItsCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin := buildWorker(t)
	s := newPGSchema(t)
	store := s.store(t, nil, false, 4)
	publisher, err := engine.New(engine.Config{Backend: store, Nodes: crashRegistry(), Mode: engine.ModeManual})
	require.NoError(t, err)
	ref, err := publisher.SaveGraph(ctx, build(t, single("slow", "crash.slow", cfg("field", "out", "sleep_ms", 1000))))
	require.NoError(t, err)
	conn := s.db.Connect(t)

	ws := newWorkerSet(t, bin, s, "-orphan-ttl", "3s", "-drain-elapsed", "2s", "-attempt-max", "1500ms")
	stale := ws.start("stale")
	r, err := publisher.StartRun(ctx, ref, nil)
	require.NoError(t, err)
	eventually(t, "the first worker to claim the run", func() bool {
		return queryInt(t, conn, "SELECT count(*) FROM "+table(s, "docket_runs")+" WHERE claim_token IS NOT NULL") == 1
	})
	stale.kill(syscall.SIGSTOP) // frozen inside the one-second node

	thief := ws.start("thief")
	done, err := publisher.AwaitRun(ctx, r.ID, 30*time.Second)
	require.NoError(t, err)
	require.Equal(t, run.StatusDone, done.Status, "the worker that stole the expired claim finished the run")

	stale.kill(syscall.SIGCONT)
	eventually(t, "the stale worker to report its lost fence", func() bool {
		return strings.Contains(stale.log(), "drain fence_lost")
	})
	final, err := publisher.FetchRun(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, done.CheckpointSeq, final.CheckpointSeq, "the stale commit changed nothing")
	events := allEvents(t, publisher.Client, r.ID)
	requireHistory(t, final, events)
	assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointStepCommitted, run.CheckpointRunCompleted},
		checkpointTypes(events), "the run completed once")
	assert.NotContains(t, thief.log(), "fence_lost")
	stale.kill(syscall.SIGTERM)
	thief.kill(syscall.SIGTERM)
}
