package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/ports"
)

// graphKey is the unique key of a stored version: owner, id and hash.
type graphKey struct {
	owner ports.OwnerScope
	id    string
	hash  string
}

// graphRow keeps the canonical encoding, the bytes the hash covers, so a
// fetch decodes and re-verifies exactly what was saved.
type graphRow struct {
	rowID       int64
	key         graphKey
	doc         []byte
	publishedAt time.Time
}

func (r *graphRow) version() *ports.GraphVersion {
	return &ports.GraphVersion{Ref: ports.GraphRef{GraphID: r.key.id, Hash: r.key.hash}, PublishedAt: r.publishedAt}
}

// SaveGraph stores an immutable graph version (see ports.GraphStore).
func (s *Store) SaveGraph(ctx context.Context, owner ports.OwnerScope, p ports.SaveGraphParams) (*ports.GraphVersion, error) {
	if err := owner.ValidateOwner(); err != nil {
		return nil, err
	}
	doc, err := ports.EncodeGraph(p)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key := graphKey{owner: owner, id: p.Graph.ID, hash: p.Hash}
	s.mu.Lock()
	defer s.mu.Unlock()
	if existing := s.graphs[key]; existing != nil {
		if !bytes.Equal(existing.doc, doc) {
			return nil, fmt.Errorf("%w: graph %q hash %s", ports.ErrGraphContentConflict, key.id, key.hash)
		}
		return existing.version(), nil
	}
	s.nextRowID++
	row := &graphRow{rowID: s.nextRowID, key: key, doc: doc, publishedAt: s.now()}
	s.graphs[key] = row
	return row.version(), nil
}

// FetchGraph returns a stored document, verified (see ports.GraphStore).
func (s *Store) FetchGraph(ctx context.Context, owner ports.OwnerScope, ref ports.GraphRef) (*graph.Graph, error) {
	if err := owner.ValidateOwner(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	row := s.graphs[graphKey{owner: owner, id: ref.GraphID, hash: ref.Hash}]
	s.mu.RUnlock()
	if row == nil {
		return nil, &notFoundError{what: "graph version", id: ref.GraphID + "@" + ref.Hash}
	}
	return ports.DecodeGraph(ref, row.doc) // the row is keyed by ref
}

// FetchLatestGraphRef returns the newest version of graphID (see
// ports.GraphStore).
func (s *Store) FetchLatestGraphRef(ctx context.Context, owner ports.OwnerScope, graphID string) (*ports.GraphVersion, error) {
	if err := owner.ValidateOwner(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	versions := s.versionsOf(owner, graphID)
	if len(versions) == 0 {
		return nil, &notFoundError{what: "graph", id: graphID}
	}
	return versions[0].version(), nil
}

// ListGraphVersions pages versions newest first (see ports.GraphStore).
func (s *Store) ListGraphVersions(ctx context.Context, owner ports.OwnerScope, graphID string, p ports.ListGraphVersionsParams) (*ports.GraphVersionPage, error) {
	if err := owner.ValidateOwner(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	versions := s.versionsOf(owner, graphID)
	s.mu.RUnlock()
	if p.Before != nil {
		// The cursor's exact time, as in ListRuns.
		versions = slices.DeleteFunc(versions, func(r *graphRow) bool {
			return cmp.Or(r.publishedAt.Compare(p.Before.PublishedAt), strings.Compare(r.key.hash, p.Before.Hash)) >= 0
		})
	}
	page := &ports.GraphVersionPage{Versions: []ports.GraphVersion{}, NextBefore: p.Before}
	if len(versions) > p.Limit {
		versions, page.HasMore = versions[:p.Limit], true
	}
	for _, r := range versions {
		page.Versions = append(page.Versions, *r.version())
	}
	if n := len(versions); n > 0 {
		page.NextBefore = &ports.GraphCursor{PublishedAt: versions[n-1].publishedAt, Hash: versions[n-1].key.hash}
	}
	return page, nil
}

// versionsOf returns graphID's versions of owner newest first by
// (published_at, hash). Callers hold mu.
func (s *Store) versionsOf(owner ports.OwnerScope, graphID string) []*graphRow {
	var out []*graphRow
	for k, row := range s.graphs {
		if k.owner == owner && k.id == graphID {
			out = append(out, row)
		}
	}
	slices.SortFunc(out, newestFirst)
	return out
}

func newestFirst(a, b *graphRow) int {
	return cmp.Or(b.publishedAt.Compare(a.publishedAt), strings.Compare(b.key.hash, a.key.hash))
}

// PruneGraphVersions deletes unreferenced versions beyond the newest Keep
// per (owner, graph id), oldest first (see ports.GraphStore).
func (s *Store) PruneGraphVersions(ctx context.Context, p ports.PruneGraphsParams) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	referenced := map[graphKey]bool{}
	for _, row := range s.runs {
		referenced[graphKey{owner: row.owner, id: row.doc.GraphID, hash: row.doc.GraphHash}] = true
	}
	type family struct {
		owner ports.OwnerScope
		id    string
	}
	families := map[family][]*graphRow{}
	for k, row := range s.graphs {
		f := family{k.owner, k.id}
		families[f] = append(families[f], row)
	}
	var victims []*graphRow
	for _, rows := range families {
		slices.SortFunc(rows, newestFirst)
		for _, row := range rows[min(len(rows), p.Keep):] {
			if !referenced[row.key] {
				victims = append(victims, row)
			}
		}
	}
	slices.SortFunc(victims, func(a, b *graphRow) int {
		return cmp.Or(a.publishedAt.Compare(b.publishedAt), cmp.Compare(a.rowID, b.rowID))
	})
	victims = victims[:min(len(victims), p.BatchSize)]
	for _, row := range victims {
		delete(s.graphs, row.key)
	}
	return len(victims), nil
}
