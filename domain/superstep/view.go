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
	versions = maps.Clone(idx.unwrittenVersions)
	for i := range idx.slots {
		s := &idx.slots[i]
		if c, ok := channels[s.channelID]; ok {
			versions[s.publicID] = c.Version
		}
	}
	return idx.stateValues(channels), versions
}

// stateValues is the values half of stateView.
func (idx *index) stateValues(channels map[string]run.Channel) map[string]any {
	values := idx.freshValues(len(channels))
	for i := range idx.slots {
		s := &idx.slots[i]
		if c, ok := channels[s.channelID]; ok {
			values[s.publicID] = c.Value
		}
	}
	return values
}

// freshValues returns a fresh copy of the values of a run that wrote
// no channel: the non-null defaults. A view starts from it and overwrites
// the written slots; copying a built map costs less than inserting every
// key again. written (the run's channel count) bounds how many values the
// view will hold.
func (idx *index) freshValues(written int) map[string]any {
	if len(idx.unwrittenValues) == 0 {
		// No defaults: a map sized for what was written, which stays a
		// small single-group map while few fields are.
		return make(map[string]any, min(written, len(idx.slots)))
	}
	return maps.Clone(idx.unwrittenValues)
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
