package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/docketgo/docket/bench/dbbench"
)

// latency starts n runs one at a time and prints where the time goes.
func latency(ctx context.Context, d *dbbench.Docket, n int) error {
	if err := d.Engine.Start(ctx); err != nil {
		return err
	}
	var starts, waits []time.Duration
	for range n {
		t0 := time.Now()
		r, err := d.Engine.StartRun(ctx, d.Ref, map[string]any{"in": "x"})
		if err != nil {
			return err
		}
		t1 := time.Now()
		if _, err := d.Engine.AwaitRun(ctx, r.ID, 30*time.Second); err != nil {
			return err
		}
		starts, waits = append(starts, t1.Sub(t0)), append(waits, time.Since(t1))
	}
	p50 := func(xs []time.Duration) time.Duration {
		sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
		return xs[len(xs)/2]
	}
	fmt.Printf("StartRun p50 %s, start→done after StartRun p50 %s\n", p50(starts), p50(waits))
	return nil
}
