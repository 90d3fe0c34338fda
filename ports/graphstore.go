package ports

import (
	"context"
	"time"

	"github.com/docketgo/docket/domain/graph"
)

// GraphStore keeps immutable, content-addressed graph versions per owner
// scope. Every method takes an OwnerScope and rejects System with
// ErrInvalidScope. The same content saved by two owners is two independent
// versions.
type GraphStore interface {
	// SaveGraph stores the effective document p.Graph under p.Hash, which
	// must equal graph.Hash(p.Graph) (else ErrInvalidGraphHash). Saving is
	// idempotent: a re-save keeps the original PublishedAt and does not
	// reorder versions. Stored bytes that differ under the same key are
	// ErrGraphContentConflict.
	SaveGraph(ctx context.Context, owner OwnerScope, p SaveGraphParams) (*GraphVersion, error)

	// FetchGraph returns the stored document, verified against its hash.
	// ErrNotFound when absent or out of scope; ErrCorruptGraph when the
	// stored bytes do not decode or verify.
	FetchGraph(ctx context.Context, owner OwnerScope, ref GraphRef) (*graph.Graph, error)

	// FetchLatestGraphRef returns the newest version of graphID by
	// (PublishedAt, Hash), or ErrNotFound.
	FetchLatestGraphRef(ctx context.Context, owner OwnerScope, graphID string) (*GraphVersion, error)

	// ListGraphVersions pages graphID's versions newest first by
	// (PublishedAt, Hash). An unknown graph id is an empty page.
	ListGraphVersions(ctx context.Context, owner OwnerScope, graphID string, p ListGraphVersionsParams) (*GraphVersionPage, error)

	// PruneGraphVersions deletes up to p.BatchSize versions, oldest first,
	// that are beyond the newest p.Keep of their (owner, graph id) and that
	// no run of the same owner references.
	PruneGraphVersions(ctx context.Context, p PruneGraphsParams) (int, error)
}

// DefaultKeptGraphVersions is the number of newest versions per graph the
// pruner keeps.
const DefaultKeptGraphVersions = 10

// GraphRef identifies one graph version within an owner scope.
type GraphRef struct {
	GraphID string
	Hash    string
}

// SaveGraphParams is the input of SaveGraph.
type SaveGraphParams struct {
	Graph *graph.Graph // the effective document
	Hash  string       // lowercase hex graph.Hash of Graph
}

// GraphVersion is a stored version's metadata.
type GraphVersion struct {
	Ref         GraphRef
	PublishedAt time.Time
}

// GraphCursor is the exclusive pagination key of ListGraphVersions.
type GraphCursor struct {
	PublishedAt time.Time
	Hash        string
}

// ListGraphVersionsParams pages ListGraphVersions; Limit in 1..MaxPageLimit.
type ListGraphVersionsParams struct {
	Limit  int
	Before *GraphCursor
}

// GraphVersionPage is one page of versions; cursor semantics match RunPage.
type GraphVersionPage struct {
	Versions   []GraphVersion
	NextBefore *GraphCursor
	HasMore    bool
}

// PruneGraphsParams bounds one graph prune batch.
type PruneGraphsParams struct {
	Keep      int // >= 1, usually DefaultKeptGraphVersions
	BatchSize int // >= 1
}
