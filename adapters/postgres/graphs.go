package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docketgo/docket/domain/graph"
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
	doc, err := ports.EncodeGraph(p)
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

// FetchGraph returns a stored document, verified against its hash (see
// ports.GraphStore).
func (s *Store) FetchGraph(ctx context.Context, owner ports.OwnerScope, ref ports.GraphRef) (*graph.Graph, error) {
	if err := owner.ValidateOwner(); err != nil {
		return nil, err
	}
	if !ports.TextID(ref.GraphID) || !ports.TextID(ref.Hash) {
		return nil, &notFoundError{what: "graph version", id: ref.GraphID + "@" + ref.Hash}
	}
	var doc []byte
	err := s.pool.QueryRow(ctx, s.stmt.fetchGraph, owner.Key(), ref.GraphID, ref.Hash).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &notFoundError{what: "graph version", id: ref.GraphID + "@" + ref.Hash}
	}
	if err != nil {
		return nil, dbError("fetch graph", err)
	}
	// A row that does not decode, names another id or does not hash to
	// its key is corrupt, never absent.
	return ports.DecodeGraph(ref, doc)
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
	if err := p.Validate(); err != nil {
		return nil, err
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
// by (inserted_at, graph_hash), strictly older than before when given. A
// graph id no text can hold has no versions (bun would otherwise inline it
// as a broken literal or with its invalid bytes replaced).
func (s *Store) listVersions(ctx context.Context, owner ports.OwnerScope, graphID string, before *ports.GraphCursor, limit int) ([]versionRow, error) {
	if !ports.TextID(graphID) {
		return nil, nil
	}
	q := s.bun.NewSelect().
		TableExpr(s.stmt.graphsTable+" AS g").
		ColumnExpr("g.graph_hash, g.inserted_at").
		Where("g.scope_key = ?", owner.Key()).
		Where("g.graph_id = ?", graphID)
	if before != nil {
		q = olderThan(q, "g.inserted_at", "g.graph_hash", before.PublishedAt, before.Hash)
	}
	q = q.OrderExpr(`g.inserted_at DESC, g.graph_hash COLLATE "C" DESC`).Limit(int64(limit))
	var rows []versionRow
	if err := q.Scan(ctx, &rows); err != nil {
		return nil, dbError("list graph versions", err)
	}
	return rows, nil
}

// PruneGraphVersions deletes unreferenced versions beyond the newest
// p.Keep per (owner, graph id), oldest first, in one transaction (see
// ports.GraphStore, sqlPruneGraphs and sqlDeleteGraphs).
func (s *Store) PruneGraphVersions(ctx context.Context, p ports.PruneGraphsParams) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	var n int
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if n, err = s.pruneGraphs(ctx, tx, p.Keep, p.BatchSize); err != nil {
			return keep(err)
		}
		return nil
	})
	if err != nil {
		return 0, unkept("prune graph versions", err)
	}
	return n, nil
}

// pruneGraphs locks the batch's versions, then deletes those no run
// references, in two statements of tx: the deletion's snapshot is taken
// after the locks, so it sees every run that could reference them.
func (s *Store) pruneGraphs(ctx context.Context, tx pgx.Tx, keep, batch int) (int, error) {
	rows, err := tx.Query(ctx, s.stmt.pruneGraphs, keep, batch)
	if err != nil {
		return 0, dbError("prune graph versions", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, dbError("prune graph versions", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	var n int64
	if err := tx.QueryRow(ctx, s.stmt.deleteGraphs, ids).Scan(&n); err != nil {
		return 0, dbError("prune graph versions", err)
	}
	return int(n), nil
}
