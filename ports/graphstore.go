package ports

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/value"
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

// Validate reports a limit out of range, or an incomplete cursor or one
// whose Hash is not TextID, as an *InvalidArgumentError.
func (p ListGraphVersionsParams) Validate() error {
	if p.Limit < 1 || p.Limit > MaxPageLimit {
		return invalidLimit()
	}
	if p.Before != nil && (p.Before.PublishedAt.IsZero() || p.Before.Hash == "") {
		return &InvalidArgumentError{Field: "Before", Reason: "needs PublishedAt and Hash"}
	}
	if p.Before != nil && !TextID(p.Before.Hash) {
		// No page returns such a key, and stores could not compare it alike.
		return &InvalidArgumentError{Field: "Before", Reason: "Hash is not a text id"}
	}
	return nil
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

// Validate reports the first count below 1 or above math.MaxInt32 (stores
// bind both as 32-bit integers) as an *InvalidArgumentError.
func (p PruneGraphsParams) Validate() error {
	switch {
	case p.Keep < 1:
		return &InvalidArgumentError{Field: "Keep", Reason: "must be at least 1"}
	case p.BatchSize < 1:
		return &InvalidArgumentError{Field: "BatchSize", Reason: "must be at least 1"}
	case p.Keep > math.MaxInt32:
		return tooLarge("Keep")
	case p.BatchSize > math.MaxInt32:
		return tooLarge("BatchSize")
	}
	return nil
}

// EncodeGraph returns the bytes a GraphStore keeps for p: the canonical
// JSON of the document's wire map, the exact bytes its hash covers. A
// document that cannot be encoded is ErrInvalidGraph; a p.Hash that is not
// the document's hash is ErrInvalidGraphHash.
func EncodeGraph(p SaveGraphParams) ([]byte, error) {
	if p.Graph == nil {
		return nil, fmt.Errorf("%w: nil graph", ErrInvalidGraph)
	}
	if p.Graph.ID == "" {
		return nil, fmt.Errorf("%w: empty graph id", ErrInvalidGraph)
	}
	if !TextID(p.Graph.ID) {
		// No store could key the version by it (PostgreSQL text cannot,
		// nor its indexes beyond MaxIDBytes). The id is not quoted: it
		// may be any length.
		return nil, fmt.Errorf("%w: the graph id is not UTF-8 text without NUL of at most %d bytes", ErrInvalidGraph, MaxIDBytes)
	}
	wire, err := p.Graph.ToMap()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidGraph, err)
	}
	doc, err := value.Canonical(wire)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidGraph, err)
	}
	hash, err := graph.Hash(p.Graph)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidGraph, err)
	}
	if hash != p.Hash {
		return nil, fmt.Errorf("%w: graph %q hashes to %s, not %s", ErrInvalidGraphHash, p.Graph.ID, hash, p.Hash)
	}
	return doc, nil
}

// DecodeGraph decodes bytes stored by EncodeGraph under ref and verifies
// them against it: bytes that do not decode, name another id or do not
// hash to ref.Hash are a *CorruptError (ErrCorruptGraph), never absent.
func DecodeGraph(ref GraphRef, doc []byte) (*graph.Graph, error) {
	corrupt := func(err error) error {
		return &CorruptError{Kind: CorruptGraph, ID: ref.GraphID, Hash: ref.Hash, Err: err}
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
	// The hash covers the canonical bytes, so other bytes of the same
	// document (spacing, key order, number spelling) do not hash to the key
	// either, and a re-save would find them a content conflict.
	if wire, err := g.ToMap(); err != nil {
		return nil, corrupt(err)
	} else if canonical, err := value.Canonical(wire); err != nil || !bytes.Equal(canonical, doc) {
		return nil, corrupt(errors.New("stored bytes are not the document's canonical encoding"))
	}
	return g, nil
}
