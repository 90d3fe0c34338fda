package run

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestChannelsOfSortsByIDAndNamesEachChannel(t *testing.T) {
	t.Parallel()
	cs := ChannelsOf(map[string]Channel{
		"state:b": {Value: "b", Version: 2},
		"edge:e":  {Version: 1},
		"state:a": {Value: "a", Version: 1},
	})
	assert.Equal(t, Channels{
		{ID: "edge:e", Version: 1},
		{ID: "state:a", Value: "a", Version: 1},
		{ID: "state:b", Value: "b", Version: 2},
	}, cs)
	assert.Nil(t, ChannelsOf(nil))
	assert.Equal(t, Channels{}, ChannelsOf(map[string]Channel{}))
}

func TestChannelsLookUpByID(t *testing.T) {
	t.Parallel()
	cs := Channels{{ID: "edge:e", Version: 1}, {ID: "state:a", Value: "a", Version: 3}}

	c, ok := cs.Get("state:a")
	assert.True(t, ok)
	assert.Equal(t, Channel{ID: "state:a", Value: "a", Version: 3}, c)
	assert.Equal(t, "a", cs.Value("state:a"))
	assert.Equal(t, int64(3), cs.Version("state:a"))
	assert.True(t, cs.Has("edge:e"))

	for _, absent := range []string{"", "a", "edge:d", "edge:f", "state:b", "zzz"} {
		_, ok := cs.Get(absent)
		assert.False(t, ok, absent)
		assert.False(t, cs.Has(absent), absent)
		assert.Nil(t, cs.Value(absent), absent)
		assert.Zero(t, cs.Version(absent), absent)
	}
	assert.Equal(t, map[string]Channel{"edge:e": cs[0], "state:a": cs[1]}, cs.Map())
}

// Set keeps the list a sorted set whatever order channels are written in,
// and a later write of an ID replaces the earlier one: the list reads as a
// map of the last writes would.
func TestChannelsSetKeepsASortedSet(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		var cs Channels
		want := map[string]Channel{}
		for i := range rapid.IntRange(0, 30).Draw(t, "writes") {
			c := Channel{ID: rapid.StringMatching(`[a-e]{0,3}`).Draw(t, "id"), Version: int64(i)}
			cs.Set(c)
			want[c.ID] = c
		}
		require.True(t, slices.IsSortedFunc(cs, compareChannels))
		require.Len(t, cs, len(want))
		for id, c := range want {
			i, ok := cs.Index(id)
			require.True(t, ok, id)
			require.Equal(t, c, cs[i])
		}
		if len(want) > 0 {
			require.Equal(t, ChannelsOf(want), cs)
		}
	})
}
