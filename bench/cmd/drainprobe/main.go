// Command drainprobe drains one batch of pre-started runs on a fresh
// database and prints the rate: the quick loop for hot-path work.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/docketgo/docket/bench/dbbench"
)

func main() {
	runs := flag.Int("runs", 2000, "runs to drain")
	conc := flag.Int("c", 32, "dispatcher concurrency")
	starters := flag.Int("starters", 8, "concurrent StartRun callers before the drain")
	shape := flag.String("shape", dbbench.ShapeOneStep, "graph shape")
	cpu := flag.String("cpuprofile", "", "write a CPU profile of the drain (or of the -latency runs)")
	mem := flag.String("memprofile", "", "write a heap profile of the drain's allocations")
	keep := flag.Bool("keep", false, "keep the database")
	stacks := flag.String("goroutines", "", "write a goroutine profile three seconds into the drain")
	spanStats := flag.Bool("spans", false, "record engine spans during the drain and print their durations")
	sqlSpans := flag.Bool("sql", false, "with -latency, also break down the statements (adds tracing cost)")
	lat := flag.Int("latency", 0, "instead of a drain, start this many runs one at a time and break down their latency")
	tenants := flag.Int("tenants", 0, "spread the runs over this many tenants, in tenant-required mode with the tenant-fair claim policy (0: one tenantless FIFO drain)")
	plans := flag.Bool("plans", false, "after the drain (or the -latency runs), print how often each of the pool's prepared statements was planned generically and custom")
	schemaSQL := flag.String("schema-sql", "", "run this SQL file ({schema} is the engine's schema) after migrating: what-if storage shapes, never a supported schema")
	flag.Parse()
	ctx := context.Background()
	srv, err := dbbench.Open(ctx)
	if err != nil {
		log.Fatal(err)
	}
	db, err := srv.Fresh(ctx, "probe")
	if err != nil {
		log.Fatal(err)
	}
	if !*keep {
		defer db.Drop(ctx)
	}
	spans := &spanLog{}
	opts := dbbench.DocketOptions{Shape: *shape, Concurrency: *conc, Tenants: *tenants}
	if *lat > 0 || *spanStats {
		opts.Telemetry = spans
	}
	if *lat > 0 && *sqlSpans {
		opts.Tracer = spans
	}
	d, err := dbbench.OpenDocket(ctx, db, opts)
	if err != nil {
		log.Fatal(err)
	}
	if *schemaSQL != "" {
		sql, err := os.ReadFile(*schemaSQL)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := d.Pool.Exec(ctx, strings.ReplaceAll(string(sql), "{schema}", dbbench.DocketSchema)); err != nil {
			log.Fatal(err)
		}
	}
	if *lat > 0 {
		stop := startCPUProfile(*cpu)
		err := latency(ctx, d, spans, *lat)
		stop()
		if err != nil {
			log.Fatal(err)
		}
		if *plans {
			if err := printPlanCounts(ctx, d.Pool); err != nil {
				log.Fatal(err)
			}
		}
		d.Close(ctx)
		return
	}
	t0 := time.Now()
	if err := d.StartRunsWith(ctx, *runs, *starters); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("started %d runs in %s (%.0f/s)\n", *runs, time.Since(t0).Round(time.Millisecond), float64(*runs)/time.Since(t0).Seconds())
	defer startCPUProfile(*cpu)()
	if *stacks != "" {
		time.AfterFunc(3*time.Second, func() {
			f, _ := os.Create(*stacks)
			_ = pprof.Lookup("goroutine").WriteTo(f, 1)
			_ = f.Close()
		})
	}
	if *mem != "" {
		runtime.MemProfileRate = 64 << 10
		runtime.GC() // the profile then counts only the drain's allocations
	}
	_ = spans.take() // the start phase's spans
	before, cpuKnown := readCPU()
	res, err := d.Drain(ctx, *runs, 5*time.Minute)
	after, cpuStillKnown := readCPU()
	if *mem != "" {
		writeHeapProfile(*mem)
	}
	fmt.Printf("drained %d runs in %s: %.0f runs/s, %.0f step commits/s (err %v)\n", res.Jobs, res.Elapsed.Round(time.Millisecond),
		float64(res.Jobs)/res.Elapsed.Seconds(), float64(res.Jobs*d.Steps)/res.Elapsed.Seconds(), err)
	if cpuKnown && cpuStillKnown {
		fmt.Println(perStep(before, after, res.Jobs*d.Steps, res.Elapsed, runtime.NumCPU()))
	}
	if *spanStats {
		printSpanDurations(spans.take())
	}
	if *plans {
		if err := printPlanCounts(ctx, d.Pool); err != nil {
			log.Fatal(err)
		}
	}
	if err := dbbench.CheckGates(ctx, d.Pool, dbbench.DocketSchema, *runs); err != nil {
		fmt.Println("GATES FAILED:", err)
	}
	if *keep {
		fmt.Println("database", db.Name)
	}
	d.Close(ctx)
}

// startCPUProfile profiles the CPU into path until the returned stop is
// called; an empty path profiles nothing.
func startCPUProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// writeHeapProfile writes the allocations counted since the profile rate
// was set (view with -sample_index=alloc_space).
func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		log.Fatal(err)
	}
}
