package run

import (
	"cmp"
	"slices"
)

// Channel is the committed state of one runtime channel. A value channel
// that was never written is absent from Run.Channels. A barrier channel's
// seen sources are kept beside the list, in Run.BarrierSeen, so the list
// that every barrier copies stays narrow.
type Channel struct {
	ID      string
	Value   any
	Version int64
}

// Channels is a run's committed channels, sorted by ID (byte order), each
// ID once; Run.Validate checks both.
//
// It is a sorted list rather than a map because every barrier copies it
// whole for its checkpoint: a list copies as one allocation and one move,
// grows by a sorted insert without a rehash, and is written to a document
// in order with nothing to sort.
type Channels []Channel

// ChannelsOf returns the channels of m, keyed by ID, as a sorted list; each
// channel's ID is set from its key. A nil map gives nil.
func ChannelsOf(m map[string]Channel) Channels {
	if m == nil {
		return nil
	}
	out := make(Channels, 0, len(m))
	for id, c := range m {
		c.ID = id
		out = append(out, c)
	}
	slices.SortFunc(out, compareChannels)
	return out
}

// Get returns the channel id and whether the list holds it.
func (cs Channels) Get(id string) (Channel, bool) {
	if i, ok := cs.Index(id); ok {
		return cs[i], true
	}
	return Channel{}, false
}

// Has reports whether the list holds the channel id.
func (cs Channels) Has(id string) bool {
	_, ok := cs.Index(id)
	return ok
}

// Index returns the position of the channel id, or where it would be
// inserted, and whether the list holds it.
func (cs Channels) Index(id string) (int, bool) {
	// By hand rather than slices.BinarySearchFunc: its comparison closure
	// is not inlined, and a lookup is on every superstep's path.
	lo, hi := 0, len(cs)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if cs[h].ID < id {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return lo, lo < len(cs) && cs[lo].ID == id
}

// Map returns the channels as a new map by ID, for callers that look many
// of them up at random.
func (cs Channels) Map() map[string]Channel {
	m := make(map[string]Channel, len(cs))
	for _, c := range cs {
		m[c.ID] = c
	}
	return m
}

// sorted reports whether the list is sorted by ID with each ID once.
func (cs Channels) sorted() bool {
	for i := 1; i < len(cs); i++ {
		if cs[i-1].ID >= cs[i].ID {
			return false
		}
	}
	return true
}

func compareChannels(a, b Channel) int { return cmp.Compare(a.ID, b.ID) }

// Value returns the value of the channel id, nil when the list does not
// hold it.
func (cs Channels) Value(id string) any {
	c, _ := cs.Get(id)
	return c.Value
}

// Version returns the version of the channel id, 0 when the list does not
// hold it.
func (cs Channels) Version(id string) int64 {
	c, _ := cs.Get(id)
	return c.Version
}

// Set writes c in place, inserted in ID order when the list does not hold
// its ID yet. The list must be the caller's own: a committed run's
// channels are never written.
func (cs *Channels) Set(c Channel) {
	i, ok := cs.Index(c.ID)
	if ok {
		(*cs)[i] = c
		return
	}
	*cs = slices.Insert(*cs, i, c)
}
