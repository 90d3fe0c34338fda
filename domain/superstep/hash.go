package superstep

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/value"
)

// plannedView is the state view of a planned superstep with its input hash.
type plannedView struct {
	values   map[string]any
	versions run.Versions // read from the planned-from run's channels
	// hash is the input hash in hex, held by value so the planner can
	// store it with the superstep's task identities; unset when the view
	// is not portable.
	hash     [2 * sha256.Size]byte
	portable bool
	flat     bool // no value is a list or a map
}

// plannedView builds the state view and its input hash together. The hash
// is run.InputHash(values): the canonical JSON of the view, whose keys are
// the slots' public IDs in UTF-16 order. The slots are already sorted by
// byte order, which is that order whenever canonicalOrder holds, so the
// encoding is written slot by slot instead of re-reading and re-sorting
// the map.
func (idx *index) plannedView(channels map[string]run.Channel) plannedView {
	if !idx.canonicalOrder {
		values := idx.stateValues(channels)
		v := plannedView{values: values, versions: run.ChannelVersions(idx.versionKeys, channels), flat: true}
		for _, x := range values {
			v.flat = v.flat && !isContainer(x)
		}
		hash := run.InputHash(values)
		v.portable = copy(v.hash[:], hash) == len(v.hash)
		return v
	}
	// The encoding is written in one pass over the slots, which gathers
	// the written values so the view's map is made at its final size.
	var writtenBuf [16]slotValue
	written := writtenBuf[:0]
	scratch := value.GetScratch()
	defer scratch.Release()
	buf := append(scratch.B, '{')
	portable, flat := true, true
	for i := range idx.slots {
		s := &idx.slots[i]
		var v any
		if c, ok := channels[s.channelID]; ok {
			v = c.Value
			written = append(written, slotValue{s.publicID, v})
		} else {
			if s.channel.Default == nil {
				continue
			}
			v = s.channel.Default
		}
		flat = flat && !isContainer(v)
		if !portable {
			continue
		}
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		buf = append(buf, s.keyJSON...)
		var err error
		if buf, err = value.AppendCanonical(buf, v); err != nil {
			portable = false
		}
	}
	if portable {
		buf = append(buf, '}')
	}
	scratch.B = buf
	values := idx.valuesOf(written)
	v := plannedView{values: values, versions: run.ChannelVersions(idx.versionKeys, channels), portable: portable, flat: flat}
	if portable {
		sum := sha256.Sum256(buf)
		hex.Encode(v.hash[:], sum[:])
	}
	return v
}

// inCanonicalOrder reports whether slots sorted by byte order of their
// public IDs are also in canonical (UTF-16) key order with no repeated key:
// true when no ID holds invalid UTF-8 or a four-byte (supplementary-plane)
// sequence, the only cases where the two orders differ.
func inCanonicalOrder(slots []slot) bool {
	for i := range slots {
		id := slots[i].publicID
		if i > 0 && slots[i-1].publicID >= id {
			return false
		}
		if !utf8.ValidString(id) {
			return false
		}
		for j := 0; j < len(id); j++ {
			if id[j] >= 0xF0 {
				return false
			}
		}
	}
	return true
}

// isContainer reports whether v is a list or a map.
func isContainer(v any) bool {
	switch v.(type) {
	case []any, map[string]any:
		return true
	}
	return false
}
