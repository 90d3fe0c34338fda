package run

import (
	"encoding/json"
	"iter"
	"maps"
	"slices"
	"strings"
)

// Versions is the committed version of every state value an attempt sees
// (the spec's source_versions): one per declared input and state field, 0
// for a field never written, and 0 for any other key.
//
// It is read-only. An attempt planned from a committed run reads the
// versions from that run's channels when asked, so planning a superstep
// builds no map for them, and no attempt can change what a sibling or a
// retry sees. Map returns a copy the caller owns.
type Versions struct {
	// src is a pointer so Versions is one word: it rides in every
	// node.Task, which is copied down each attempt's call path.
	src *versionSource
}

// versionSource holds stored versions (a parked task's), or keys read
// through a committed run's channels. Neither is ever written.
type versionSource struct {
	fixed    map[string]int64
	keys     []VersionKey // sorted by PublicID
	channels Channels
}

// VersionKey names one declared field: its public ID and the channel that
// holds its value.
type VersionKey struct {
	PublicID  string
	ChannelID string
}

// VersionsOf returns the versions m holds. m must not change afterwards.
func VersionsOf(m map[string]int64) Versions {
	return Versions{src: &versionSource{fixed: m}}
}

// ChannelVersions returns the versions of keys (sorted by PublicID, no
// repeats) as channels holds them. Neither may change afterwards: a
// committed run's channels never do.
func ChannelVersions(keys []VersionKey, channels Channels) Versions {
	return Versions{src: &versionSource{keys: keys, channels: channels}}
}

// noVersions is the source of the zero Versions.
var noVersions versionSource

func (v Versions) source() *versionSource {
	if v.src == nil {
		return &noVersions
	}
	return v.src
}

// Get returns the version of the field id, 0 when it was never written or
// is not declared.
func (v Versions) Get(id string) int64 {
	version, _ := v.source().lookup(id)
	return version
}

// Len is the number of declared fields.
func (v Versions) Len() int {
	s := v.source()
	if s.keys == nil {
		return len(s.fixed)
	}
	return len(s.keys)
}

// All yields every declared field and its version in public ID order.
func (v Versions) All() iter.Seq2[string, int64] {
	s := v.source()
	return func(yield func(string, int64) bool) {
		if s.keys == nil {
			for _, id := range slices.Sorted(maps.Keys(s.fixed)) {
				if !yield(id, s.fixed[id]) {
					return
				}
			}
			return
		}
		for _, k := range s.keys {
			if !yield(k.PublicID, s.channels.Version(k.ChannelID)) {
				return
			}
		}
	}
}

// Map returns the versions as a new map (never nil) the caller owns.
func (v Versions) Map() map[string]int64 {
	s := v.source()
	if s.keys == nil {
		if s.fixed == nil {
			return map[string]int64{}
		}
		return maps.Clone(s.fixed)
	}
	m := make(map[string]int64, len(s.keys))
	for _, k := range s.keys {
		m[k.PublicID] = s.channels.Version(k.ChannelID)
	}
	return m
}

// Equal reports whether v and o hold the same fields at the same versions,
// however each was built.
func (v Versions) Equal(o Versions) bool {
	if v.Len() != o.Len() {
		return false
	}
	other := o.source()
	for id, version := range v.All() {
		if got, declared := other.lookup(id); !declared || got != version {
			return false
		}
	}
	return true
}

// lookup returns the version of id and whether id is a declared field.
func (s *versionSource) lookup(id string) (int64, bool) {
	if s.keys == nil {
		version, ok := s.fixed[id]
		return version, ok
	}
	i, found := slices.BinarySearchFunc(s.keys, id, func(k VersionKey, id string) int {
		return strings.Compare(k.PublicID, id)
	})
	if !found {
		return 0, false
	}
	return s.channels.Version(s.keys[i].ChannelID), true
}

// MarshalJSON writes the versions as a JSON object.
func (v Versions) MarshalJSON() ([]byte, error) { return json.Marshal(v.Map()) }

// UnmarshalJSON reads a JSON object of versions.
func (v *Versions) UnmarshalJSON(b []byte) error {
	var m map[string]int64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*v = VersionsOf(m)
	return nil
}
