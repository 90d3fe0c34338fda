package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docketgo/docket/bench/dbbench"
	"github.com/docketgo/docket/ports"
)

// spanLog records when each span started and ended, for one run at a time.
type spanLog struct {
	ports.NopTelemetry
	mu    sync.Mutex
	spans []*span
}

type span struct {
	name       string
	start, end time.Time
}

type spanEnd struct {
	l *spanLog
	s *span
}

func (l *spanLog) StartSpan(ctx context.Context, name string, _ ...ports.Label) (context.Context, ports.Span) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := &span{name: name, start: time.Now()}
	l.spans = append(l.spans, s)
	return ctx, spanEnd{l, s}
}

func (s spanEnd) End(string, ports.Measurements) {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	s.s.end = time.Now()
}

func (l *spanLog) take() []*span {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.spans
	l.spans = nil
	return out
}

// TraceQueryStart and TraceQueryEnd record each statement as a span named
// "sql <first words>#<occurrence in this run>".
func (l *spanLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	words := strings.Fields(data.SQL)
	name := "sql " + strings.Join(words[:min(len(words), 4)], " ")
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 1
	for _, s := range l.spans {
		if strings.HasPrefix(s.name, name+"#") {
			n++
		}
	}
	s := &span{name: fmt.Sprintf("%s#%d", name, n), start: time.Now()}
	l.spans = append(l.spans, s)
	return context.WithValue(ctx, sqlSpanKey{}, s)
}

func (l *spanLog) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if s, ok := ctx.Value(sqlSpanKey{}).(*span); ok {
		l.mu.Lock()
		defer l.mu.Unlock()
		s.end = time.Now()
	}
}

type sqlSpanKey struct{}

// latency starts n runs one at a time and prints where the time goes:
// each span's start and end as offsets from StartRun's call (p50 over the
// runs, first occurrence of each name per run).
func latency(ctx context.Context, d *dbbench.Docket, log *spanLog, n int) error {
	if err := d.Engine.Start(ctx); err != nil {
		return err
	}
	offsets := map[string][][2]time.Duration{}
	var order []string
	var starts, totals []time.Duration
	for range n {
		_ = log.take()
		t0 := time.Now()
		r, err := d.Engine.StartRun(ctx, d.Ref, map[string]any{"in": "x"})
		if err != nil {
			return err
		}
		t1 := time.Now()
		if _, err := d.Engine.AwaitRun(ctx, r.ID, 30*time.Second); err != nil {
			return err
		}
		starts, totals = append(starts, t1.Sub(t0)), append(totals, time.Since(t0))
		seen := map[string]bool{}
		for _, s := range log.take() {
			if seen[s.name] || s.end.IsZero() {
				continue
			}
			seen[s.name] = true
			if _, ok := offsets[s.name]; !ok {
				order = append(order, s.name)
			}
			offsets[s.name] = append(offsets[s.name], [2]time.Duration{s.start.Sub(t0), s.end.Sub(t0)})
		}
	}
	p50 := func(xs []time.Duration) time.Duration {
		sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
		return xs[len(xs)/2]
	}
	fmt.Printf("StartRun p50 %s, start→done p50 %s\n", p50(starts), p50(totals))
	for _, name := range order {
		var a, b []time.Duration
		for _, o := range offsets[name] {
			a, b = append(a, o[0]), append(b, o[1])
		}
		fmt.Printf("  %-32s start %8s  end %8s  (%d runs)\n", name, p50(a).Round(time.Microsecond), p50(b).Round(time.Microsecond), len(a))
	}
	return nil
}

// printSpanDurations prints, per span name, how many ended and their
// duration's mean, p50, p95 and total: where a drain's time goes.
func printSpanDurations(spans []*span) {
	byName := map[string][]time.Duration{}
	var order []string
	for _, s := range spans {
		if s.end.IsZero() {
			continue
		}
		if _, ok := byName[s.name]; !ok {
			order = append(order, s.name)
		}
		byName[s.name] = append(byName[s.name], s.end.Sub(s.start))
	}
	for _, name := range order {
		ds := byName[name]
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		var total time.Duration
		for _, d := range ds {
			total += d
		}
		fmt.Printf("  %-32s %7d  mean %9s  p50 %9s  p95 %9s  total %s\n", name, len(ds),
			(total / time.Duration(len(ds))).Round(time.Microsecond), ds[len(ds)/2].Round(time.Microsecond),
			ds[len(ds)*95/100].Round(time.Microsecond), total.Round(time.Millisecond))
	}
}
