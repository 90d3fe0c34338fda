package graph

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/docketgo/docket/domain/value"
)

// hashDomain separates graph hashes from every other SHA-256 in the system
// and versions the canonical form.
const hashDomain = "docket.graph.v1\n"

// idHashPrefix is how many hex digits of the hash Compiled.ID shows.
const idHashPrefix = 12

// Hash is hex(sha256("docket.graph.v1\n" || value.Canonical(g.ToMap()))) of a
// document as given (Compile hashes the effective document). The hash covers
// every part of the wire document, labels, descriptions, handles, metadata
// and branches included, and does not depend on map order.
func Hash(g *Graph) (string, error) {
	if g == nil {
		return "", errors.New("graph: cannot hash a nil graph")
	}
	wire, err := g.ToMap()
	if err != nil {
		return "", fmt.Errorf("graph: hash: %w", err)
	}
	canonical, err := value.Canonical(wire)
	if err != nil {
		return "", fmt.Errorf("graph: hash: %w", err)
	}
	h := sha256.New()
	h.Write([]byte(hashDomain))
	h.Write(canonical)
	return hex.EncodeToString(h.Sum(nil)), nil
}
