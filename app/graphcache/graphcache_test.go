package graphcache_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/docketgo/docket/app/graphcache"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/ports"
)

func key(owner ports.OwnerScope, hash string) graphcache.Key {
	return graphcache.Key{Owner: owner, GraphID: "g", Hash: hash}
}

func TestLookupsReportHitsMissesAndNegativeEntries(t *testing.T) {
	t.Parallel()
	c := graphcache.New(graphcache.Options{})
	compiled := &graph.Compiled{GraphID: "g", Hash: "h1"}
	_, result := c.Get(key(ports.Tenantless(), "h1"))
	assert.Equal(t, graphcache.Miss, result)

	c.PutCompiled(key(ports.Tenantless(), "h1"), c.Generation(), compiled)
	e, result := c.Get(key(ports.Tenantless(), "h1"))
	assert.Equal(t, graphcache.Hit, result)
	assert.Same(t, compiled, e.Compiled)

	c.PutIncompatible(key(ports.Tenantless(), "h2"), c.Generation(), "graph_compilation_failed", false)
	e, result = c.Get(key(ports.Tenantless(), "h2"))
	assert.Equal(t, graphcache.Incompatible, result)
	assert.Equal(t, "graph_compilation_failed", e.Reason)
	assert.Nil(t, e.Compiled)

	_, result = c.Get(key(ports.Tenant("acme"), "h1"))
	assert.Equal(t, graphcache.Miss, result, "entries are owner-scoped")
	assert.Equal(t, 2, c.Len())
	c.Clear()
	assert.Zero(t, c.Len())
}

func TestANewGenerationInvalidatesEntries(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	gen := "a"
	c := graphcache.New(graphcache.Options{Generation: func() string { mu.Lock(); defer mu.Unlock(); return gen }})
	c.PutIncompatible(key(ports.Tenantless(), "h"), c.Generation(), "graph_compilation_failed", false)
	mu.Lock()
	gen = "a+new-node"
	mu.Unlock()
	_, result := c.Get(key(ports.Tenantless(), "h"))
	assert.Equal(t, graphcache.GenerationInvalidated, result)
	_, result = c.Get(key(ports.Tenantless(), "h"))
	assert.Equal(t, graphcache.Miss, result, "the stale entry was evicted")
}

func TestUndecodableEntriesExpire(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	c := graphcache.New(graphcache.Options{UndecodableTTL: time.Minute, Now: func() time.Time { return now }})
	c.PutIncompatible(key(ports.Tenantless(), "corrupt"), c.Generation(), "corrupt_graph", true)
	c.PutIncompatible(key(ports.Tenantless(), "broken"), c.Generation(), "graph_compilation_failed", false)
	now = now.Add(59 * time.Second)
	_, result := c.Get(key(ports.Tenantless(), "corrupt"))
	assert.Equal(t, graphcache.Incompatible, result)
	now = now.Add(time.Second)
	_, result = c.Get(key(ports.Tenantless(), "corrupt"))
	assert.Equal(t, graphcache.Miss, result, "an undecodable entry lives for its TTL")
	_, result = c.Get(key(ports.Tenantless(), "broken"))
	assert.Equal(t, graphcache.Incompatible, result, "other negative entries wait for a new generation")
}

func TestTheCacheStaysWithinItsBound(t *testing.T) {
	t.Parallel()
	c := graphcache.New(graphcache.Options{MaxEntries: 3})
	for _, h := range []string{"a", "b", "c", "d", "e"} {
		c.PutCompiled(key(ports.Tenantless(), h), c.Generation(), &graph.Compiled{})
		assert.LessOrEqual(t, c.Len(), 3)
	}
	c.PutCompiled(key(ports.Tenantless(), "e"), c.Generation(), &graph.Compiled{})
	assert.Equal(t, 3, c.Len(), "replacing an entry evicts nothing")
}
