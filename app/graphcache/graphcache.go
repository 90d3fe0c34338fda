// Package graphcache is the node-local cache of compiled graph versions:
// one compilation per (owner scope, graph id, graph hash) instead of one
// per claimed run. It also remembers versions this host found unusable
// (negative entries), so a run of such a version is handed back without
// fetching and compiling it again.
//
// Losing the cache only costs latency: entries are derived from immutable
// stored versions. Entries carry a generation (a fingerprint of the node
// implementations the host has registered); a lookup under another
// generation evicts the entry, so registering a missing node type heals a
// negative entry. Negative entries for undecodable documents also expire
// after a TTL. It is not a store and never writes anything durable.
package graphcache

import (
	"context"
	"sync"
	"time"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/ports"
)

// Defaults.
const (
	DefaultUndecodableTTL = 30 * time.Second
	DefaultMaxEntries     = 1024
)

// Key identifies one stored graph version. Owner-scoped, so one tenant's
// corrupt row never shadows another tenant's version.
type Key struct {
	Owner   ports.OwnerScope
	GraphID string
	Hash    string
}

// Result classifies a lookup (bounded telemetry label values).
type Result string

// Lookup results.
const (
	Hit                   Result = "hit"
	Miss                  Result = "miss"
	Incompatible          Result = "incompatible"
	GenerationInvalidated Result = "generation_invalidated"
)

// Entry is what a lookup found: a compiled graph, or the bounded reason
// the version is unusable on this host.
type Entry struct {
	Compiled *graph.Compiled
	Reason   string // set for negative entries
}

// Options configure a Cache. The zero value means the defaults.
type Options struct {
	// UndecodableTTL is how long an "undecodable document" negative entry
	// lives (default 30s).
	UndecodableTTL time.Duration
	// Generation fingerprints the host's node implementations; nil means a
	// constant generation.
	Generation func() string
	// MaxEntries bounds the cache; an insert beyond it evicts an arbitrary
	// entry (default 1024).
	MaxEntries int
	// Now is the monotonic clock for TTLs (default time.Now).
	Now func() time.Time
}

// Cache is safe for concurrent use.
type Cache struct {
	opts    Options
	mu      sync.Mutex
	entries map[Key]entry
}

type entry struct {
	Entry
	generation string
	expiresAt  time.Time // zero: no expiry
}

// New returns an empty cache.
func New(opts Options) *Cache {
	if opts.UndecodableTTL <= 0 {
		opts.UndecodableTTL = DefaultUndecodableTTL
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	if opts.Generation == nil {
		opts.Generation = func() string { return "" }
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Cache{opts: opts, entries: map[Key]entry{}}
}

// Lookup is Get reported as one graph_cache.fetch fact (its result and
// duration), as every runtime lookup is.
func (c *Cache) Lookup(ctx context.Context, tel ports.Telemetry, k Key) (Entry, Result) {
	if ports.Discards(tel) {
		return c.Get(k)
	}
	began := time.Now()
	e, result := c.Get(k)
	tel.Emit(ctx, ports.FactGraphCacheFetch, ports.Measurements{"count": 1, "duration": float64(time.Since(began))},
		ports.Label{Key: ports.LabelResult, Value: string(result)})
	return e, result
}

// Get looks k up. A hit returns the compiled graph; Incompatible returns
// the negative entry's reason; Miss and GenerationInvalidated return
// nothing (the latter also evicted a stale entry).
func (c *Cache) Get(k Key) (Entry, Result) {
	gen := c.opts.Generation()
	now := c.opts.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	switch {
	case !ok:
		return Entry{}, Miss
	case e.generation != gen:
		delete(c.entries, k)
		return Entry{}, GenerationInvalidated
	case !e.expiresAt.IsZero() && !now.Before(e.expiresAt):
		delete(c.entries, k)
		return Entry{}, Miss
	case e.Compiled == nil:
		return e.Entry, Incompatible
	}
	return e.Entry, Hit
}

// Generation is the host's current generation. Take it before fetching
// and compiling a version, and store the outcome under it: a node
// registered meanwhile then invalidates the entry instead of being
// shadowed by a "does not compile" made without it.
func (c *Cache) Generation() string { return c.opts.Generation() }

// PutCompiled stores a version compiled under generation.
func (c *Cache) PutCompiled(k Key, generation string, g *graph.Compiled) {
	c.put(k, entry{Entry: Entry{Compiled: g}, generation: generation})
}

// PutIncompatible stores a negative entry with a bounded reason, found
// under generation. Undecodable entries expire after UndecodableTTL.
func (c *Cache) PutIncompatible(k Key, generation, reason string, undecodable bool) {
	e := entry{Entry: Entry{Reason: reason}, generation: generation}
	if undecodable {
		e.expiresAt = c.opts.Now().Add(c.opts.UndecodableTTL)
	}
	c.put(k, e)
}

func (c *Cache) put(k Key, e entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, exists := c.entries[k]; !exists && len(c.entries) >= c.opts.MaxEntries {
		for victim := range c.entries {
			delete(c.entries, victim)
			break
		}
	}
	c.entries[k] = e
}

// Clear removes every entry.
func (c *Cache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
}

// Len reports the number of entries.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
