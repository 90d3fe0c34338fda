package run

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// Versions read from a run's channels must be exactly the spec's
// source_versions map (every declared key, 0 when unwritten), whichever
// way they are read, and must agree with the same map held directly.
func TestChannelVersionsReadAsTheirMap(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		ids := rapid.SliceOfDistinct(rapid.StringMatching(`[a-z]{1,4}`), rapid.ID[string]).Draw(t, "ids")
		slices.Sort(ids)
		keys := make([]VersionKey, len(ids))
		channels := Channels{{ID: "edge:E", Value: true, Version: 7}}
		want := make(map[string]int64, len(ids))
		for i, id := range ids {
			keys[i] = VersionKey{PublicID: id, ChannelID: "state:" + id}
			want[id] = 0
			if rapid.Bool().Draw(t, "written "+id) {
				v := rapid.Int64Range(1, 1<<40).Draw(t, "version "+id)
				channels.Set(Channel{ID: "state:" + id, Value: "x", Version: v})
				want[id] = v
			}
		}
		lazy := ChannelVersions(keys, channels)
		fixed := VersionsOf(maps.Clone(want))

		for _, v := range []Versions{lazy, fixed} {
			assert.Equal(t, want, v.Map())
			assert.Equal(t, len(want), v.Len())
			for id, version := range want {
				assert.Equal(t, version, v.Get(id), id)
			}
			assert.Zero(t, v.Get("UNDECLARED"), "an undeclared key reads 0")
			assert.Zero(t, v.Get("E"), "an edge channel is not a field")
			var order []string
			for id, version := range v.All() {
				order = append(order, id)
				assert.Equal(t, want[id], version)
			}
			assert.True(t, slices.Equal(ids, order), "All yields in public ID order: %v", order)
			b, err := json.Marshal(v)
			require.NoError(t, err)
			var back Versions
			require.NoError(t, json.Unmarshal(b, &back))
			assert.True(t, back.Equal(v))
		}
		assert.True(t, lazy.Equal(fixed))
		assert.True(t, fixed.Equal(lazy))

		// Map is a copy: writing to it changes nothing the versions read.
		copied := lazy.Map()
		for id := range copied {
			copied[id] = -1
		}
		assert.Equal(t, want, lazy.Map())
	})
}

func TestVersionsEqualNeedsTheSameKeys(t *testing.T) {
	t.Parallel()
	a := VersionsOf(map[string]int64{"a": 1, "b": 0})
	assert.False(t, a.Equal(VersionsOf(map[string]int64{"a": 1, "c": 0})), "same length, another key")
	assert.False(t, a.Equal(VersionsOf(map[string]int64{"a": 1})))
	assert.False(t, a.Equal(VersionsOf(map[string]int64{"a": 2, "b": 0})))
	assert.True(t, a.Equal(ChannelVersions(
		[]VersionKey{{"a", "state:a"}, {"b", "state:b"}},
		Channels{{ID: "state:a", Version: 1}})))
}

func TestZeroVersions(t *testing.T) {
	t.Parallel()
	var v Versions
	assert.Equal(t, map[string]int64{}, v.Map(), "never a nil map")
	assert.Zero(t, v.Len())
	assert.Zero(t, v.Get("a"))
	assert.True(t, v.Equal(VersionsOf(nil)))
	b, err := json.Marshal(v)
	require.NoError(t, err)
	assert.JSONEq(t, `{}`, string(b))
}
