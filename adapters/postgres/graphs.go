package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/value"
	"github.com/docketgo/docket/ports"
	"github.com/jackc/pgx/v5"
)

// SaveGraph stores an immutable, content-addressed graph version (see
// ports.GraphStore and sqlSaveGraph). The stored bytes are the canonical
// JSON of the document's wire map, the exact bytes its hash covers.
func (s *Store) SaveGraph(ctx context.Context, owner ports.OwnerScope, p ports.SaveGraphParams) (*ports.GraphVersion, error) {
	if err := owner.ValidateOwner(); err != nil {
		return nil, err
	}
	doc, err := encodeGraph(p)
	if err != nil {
		return nil, err
	}
	var (
		stored      []byte
		publishedAt time.Time
	)
	err = s.pool.QueryRow(ctx, s.stmt.saveGraph, tenantArg(owner), owner.Key(), p.Graph.ID, p.Hash, doc, s.storeNow()).
		Scan(&stored, &publishedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		// A concurrent first save committed after this statement's
		// snapshot was taken: its row is visible to a new statement.
		err = s.pool.QueryRow(ctx, s.stmt.readGraph, owner.Key(), p.Graph.ID, p.Hash).Scan(&stored, &publishedAt)
	}
	if err != nil {
		return nil, dbError("save graph", err)
	}
	if !bytes.Equal(stored, doc) {
		return nil, fmt.Errorf("%w: graph %q hash %s", ports.ErrGraphContentConflict, p.Graph.ID, p.Hash)
	}
	return &ports.GraphVersion{Ref: ports.GraphRef{GraphID: p.Graph.ID, Hash: p.Hash}, PublishedAt: ports.Micros(publishedAt)}, nil
}

func encodeGraph(p ports.SaveGraphParams) ([]byte, error) {
	if p.Graph == nil {
		return nil, fmt.Errorf("%w: nil graph", ports.ErrInvalidGraph)
	}
	if p.Graph.ID == "" {
		return nil, fmt.Errorf("%w: empty graph id", ports.ErrInvalidGraph)
	}
	wire, err := p.Graph.ToMap()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ports.ErrInvalidGraph, err)
	}
	doc, err := value.Canonical(wire)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ports.ErrInvalidGraph, err)
	}
	hash, err := graph.Hash(p.Graph)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ports.ErrInvalidGraph, err)
	}
	if hash != p.Hash {
		return nil, fmt.Errorf("%w: graph %q hashes to %s, not %s", ports.ErrInvalidGraphHash, p.Graph.ID, hash, p.Hash)
	}
	return doc, nil
}

// FetchGraph returns a stored document, verified against its hash (see
// ports.GraphStore).
func (s *Store) FetchGraph(ctx context.Context, owner ports.OwnerScope, ref ports.GraphRef) (*graph.Graph, error) {
	if err := owner.ValidateOwner(); err != nil {
		return nil, err
	}
	var doc []byte
	err := s.pool.QueryRow(ctx, s.stmt.fetchGraph, owner.Key(), ref.GraphID, ref.Hash).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &notFoundError{what: "graph version", id: ref.GraphID + "@" + ref.Hash}
	}
	if err != nil {
		return nil, dbError("fetch graph", err)
	}
	return decodeGraph(ref, doc)
}

// decodeGraph decodes stored bytes and verifies them against their key:
// a row that does not decode, names another id or does not hash to its
// key is corrupt, never absent.
func decodeGraph(ref ports.GraphRef, doc []byte) (*graph.Graph, error) {
	corrupt := func(err error) error {
		return &ports.CorruptError{Kind: ports.CorruptGraph, ID: ref.GraphID, Hash: ref.Hash, Err: err}
	}
	wire, err := value.DecodeJSON(doc)
	if err != nil {
		return nil, corrupt(err)
	}
	m, ok := wire.(map[string]any)
	if !ok {
		return nil, corrupt(errors.New("stored document is not an object"))
	}
	g, err := graph.FromMap(m)
	if err != nil {
		return nil, corrupt(err)
	}
	if g.ID != ref.GraphID {
		return nil, corrupt(fmt.Errorf("stored document has id %q", g.ID))
	}
	if hash, err := graph.Hash(g); err != nil || hash != ref.Hash {
		return nil, corrupt(errors.New("stored document does not hash to its key"))
	}
	return g, nil
}

// versionRow is the bun model of the version listings (metadata only;
// the document is never loaded).
type versionRow struct {
	GraphHash  string    `bun:"graph_hash"`
	InsertedAt time.Time `bun:"inserted_at"`
}

// FetchLatestGraphRef returns the newest version of graphID (see
// ports.GraphStore).
func (s *Store) FetchLatestGraphRef(ctx context.Context, owner ports.OwnerScope, graphID string) (*ports.GraphVersion, error) {
	if err := owner.ValidateOwner(); err != nil {
		return nil, err
	}
	rows, err := s.listVersions(ctx, owner, graphID, nil, 1)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, &notFoundError{what: "graph", id: graphID}
	}
	return &ports.GraphVersion{Ref: ports.GraphRef{GraphID: graphID, Hash: rows[0].GraphHash}, PublishedAt: ports.Micros(rows[0].InsertedAt)}, nil
}

// ListGraphVersions pages versions newest first by (published_at, hash)
// (see ports.GraphStore).
func (s *Store) ListGraphVersions(ctx context.Context, owner ports.OwnerScope, graphID string, p ports.ListGraphVersionsParams) (*ports.GraphVersionPage, error) {
	if err := owner.ValidateOwner(); err != nil {
		return nil, err
	}
	if p.Limit < 1 || p.Limit > ports.MaxPageLimit {
		return nil, invalidArg("Limit", fmt.Sprintf("must be in 1..%d", ports.MaxPageLimit))
	}
	if p.Before != nil && (p.Before.PublishedAt.IsZero() || p.Before.Hash == "") {
		return nil, invalidArg("Before", "needs PublishedAt and Hash")
	}
	rows, err := s.listVersions(ctx, owner, graphID, p.Before, p.Limit+1)
	if err != nil {
		return nil, err
	}
	page := &ports.GraphVersionPage{Versions: make([]ports.GraphVersion, 0, min(len(rows), p.Limit))}
	if p.Before != nil {
		echo := *p.Before
		page.NextBefore = &echo
	}
	if len(rows) > p.Limit {
		rows, page.HasMore = rows[:p.Limit], true
	}
	for _, row := range rows {
		page.Versions = append(page.Versions, ports.GraphVersion{
			Ref: ports.GraphRef{GraphID: graphID, Hash: row.GraphHash}, PublishedAt: ports.Micros(row.InsertedAt)})
	}
	if n := len(page.Versions); n > 0 {
		last := page.Versions[n-1]
		page.NextBefore = &ports.GraphCursor{PublishedAt: last.PublishedAt, Hash: last.Ref.Hash}
	}
	return page, nil
}

// listVersions reads up to limit versions of (owner, graphID) newest first
// by (inserted_at, graph_hash), strictly older than before when given.
func (s *Store) listVersions(ctx context.Context, owner ports.OwnerScope, graphID string, before *ports.GraphCursor, limit int) ([]versionRow, error) {
	q := s.bun.NewSelect().
		TableExpr(s.stmt.graphsTable+" AS g").
		ColumnExpr("g.graph_hash, g.inserted_at").
		Where("g.scope_key = ?", owner.Key()).
		Where("g.graph_id = ?", graphID)
	if before != nil {
		at := ports.Micros(before.PublishedAt)
		q = q.Where(`(g.inserted_at < ? OR (g.inserted_at = ? AND g.graph_hash COLLATE "C" < ?))`, at, at, before.Hash)
	}
	q = q.OrderExpr(`g.inserted_at DESC, g.graph_hash COLLATE "C" DESC`).Limit(int64(limit))
	var rows []versionRow
	if err := q.Scan(ctx, &rows); err != nil {
		return nil, dbError("list graph versions", err)
	}
	return rows, nil
}

// PruneGraphVersions deletes unreferenced versions beyond the newest
// p.Keep per (owner, graph id), oldest first (see ports.GraphStore and
// sqlPruneGraphs).
func (s *Store) PruneGraphVersions(ctx context.Context, p ports.PruneGraphsParams) (int, error) {
	switch {
	case p.Keep < 1:
		return 0, invalidArg("Keep", "must be at least 1")
	case p.BatchSize < 1:
		return 0, invalidArg("BatchSize", "must be at least 1")
	}
	return s.pruneGraphs(ctx, s.pool, p.Keep, p.BatchSize)
}

func (s *Store) pruneGraphs(ctx context.Context, q querier, keep, batch int) (int, error) {
	var n int64
	if err := q.QueryRow(ctx, s.stmt.pruneGraphs, keep, batch).Scan(&n); err != nil {
		return 0, dbError("prune graph versions", err)
	}
	return int(n), nil
}
