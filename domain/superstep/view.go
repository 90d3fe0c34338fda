package superstep

import (
	"maps"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
)

// stateView builds the public view of channels: values hold the committed
// value, else a non-null channel default, and a key is absent when neither
// exists (a node sees a missing key, not null); versions hold every declared
// key, 0 when unwritten.
func (idx *index) stateView(channels map[string]run.Channel) (values map[string]any, versions map[string]int64) {
	values, versions = idx.unwrittenView(len(channels))
	for i := range idx.slots {
		s := &idx.slots[i]
		if c, ok := channels[s.channelID]; ok {
			values[s.publicID] = c.Value
			versions[s.publicID] = c.Version
		}
	}
	return values, versions
}

// unwrittenView returns fresh copies of the view of a run that wrote no
// channel: the non-null defaults, and version 0 for every slot. A view
// starts from it and overwrites the written slots; copying a built map
// costs less than inserting every key again. written (the run's channel
// count) bounds how many values the view will hold.
func (idx *index) unwrittenView(written int) (map[string]any, map[string]int64) {
	values := idx.unwrittenValues
	if len(values) == 0 {
		// No defaults: a map sized for what was written, which stays a
		// small single-group map while few fields are.
		values = make(map[string]any, min(written, len(idx.slots)))
	} else {
		values = maps.Clone(values)
	}
	return values, maps.Clone(idx.unwrittenVersions)
}

// guardView is the view guards read, with changed holding public IDs.
func (idx *index) guardView(channels map[string]run.Channel, changed map[string]bool) graph.View {
	values, versions := idx.stateView(channels)
	return graph.View{Values: values, Versions: versions, Changed: changed}
}

// currentValue is what a reducer folds onto: the committed value, else the
// channel default, else unset.
func currentValue(channels map[string]run.Channel, s *slot) (any, bool) {
	if c, ok := channels[s.channelID]; ok {
		return c.Value, true
	}
	if s.channel.Default != nil {
		return s.channel.Default, true
	}
	return nil, false
}
