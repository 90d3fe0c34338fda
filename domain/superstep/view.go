package superstep

import (
	"maps"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/value"
)

// stateView builds the public view of channels: values hold the committed
// value, else a non-null channel default, and a key is absent when neither
// exists (a node sees a missing key, not null); versions hold every declared
// key, 0 when unwritten.
func (idx *index) stateView(channels run.Channels) (values map[string]any, versions map[string]int64) {
	return idx.stateValues(channels), run.ChannelVersions(idx.versionKeys, channels).Map()
}

// plannedView is the state view a superstep is planned with.
type plannedView struct {
	values   map[string]any
	versions run.Versions // read from the planned-from run's channels
	flat     bool         // no value is a list or a map
}

// plannedView builds the state view of a superstep to plan, or says why
// the committed state is not portable. Its input hash is not computed
// here: see Activation.InputHash.
func (idx *index) plannedView(channels run.Channels) (plannedView, error) {
	var writtenBuf [16]slotValue
	written := idx.appendWritten(writtenBuf[:0], channels)
	v := plannedView{values: idx.valuesOf(written), versions: run.ChannelVersions(idx.versionKeys, channels), flat: true}
	// With plain defaults only the written values can fail or be
	// containers: they are checked on the stack, not by a pass over the
	// view's map.
	if idx.plainDefaults {
		for i := range written {
			if err := checkViewValue(&v, written[i].value); err != nil {
				return plannedView{}, err
			}
		}
		return v, nil
	}
	for _, x := range v.values {
		if err := checkViewValue(&v, x); err != nil {
			return plannedView{}, err
		}
	}
	return v, nil
}

// checkViewValue checks one value of a planned view, noting in v when it
// is a container.
func checkViewValue(v *plannedView, x any) error {
	switch x.(type) {
	case nil, bool, string, int64:
		return nil // portable, and the common case: no call
	case []any, map[string]any:
		v.flat = false
	}
	return value.Check(x)
}

// slotValue is a slot's committed value, by public ID.
type slotValue struct {
	publicID string
	value    any
}

// stateValues is the values half of stateView.
func (idx *index) stateValues(channels run.Channels) map[string]any {
	var writtenBuf [16]slotValue
	return idx.valuesOf(idx.appendWritten(writtenBuf[:0], channels))
}

// appendWritten appends the committed value of every written slot.
func (idx *index) appendWritten(dst []slotValue, channels run.Channels) []slotValue {
	slots := idx.slotsByChannel
	if len(slots) == 0 {
		return dst
	}
	// Both lists are in channel ID order: one walk from the first slot's
	// place finds every written slot, with no lookup per slot.
	j, _ := channels.Index(slots[0].channelID)
	for _, s := range slots {
		for j < len(channels) && channels[j].ID < s.channelID {
			j++
		}
		if j == len(channels) {
			break
		}
		if channels[j].ID == s.channelID {
			dst = append(dst, slotValue{s.publicID, channels[j].Value})
			j++
		}
	}
	return dst
}

// valuesOf returns a new view holding the non-null defaults overwritten by
// written. Copying the defaults' built map costs less than inserting every
// default again; without defaults the map is made at its final size, so a
// view of eight values or fewer is a single group.
func (idx *index) valuesOf(written []slotValue) map[string]any {
	var values map[string]any
	if len(idx.unwrittenValues) == 0 {
		values = make(map[string]any, len(written))
	} else {
		values = maps.Clone(idx.unwrittenValues)
	}
	for _, w := range written {
		values[w.publicID] = w.value
	}
	return values
}

// guardView is the view guards read, with changed holding public IDs.
func (idx *index) guardView(channels run.Channels, changed map[string]bool) graph.View {
	values, versions := idx.stateView(channels)
	return graph.View{Values: values, Versions: versions, Changed: changed}
}

// currentValue is what a reducer folds onto: the committed value, else the
// channel default, else unset.
func currentValue(channels run.Channels, s *slot) (any, bool) {
	if c, ok := channels.Get(s.channelID); ok {
		return c.Value, true
	}
	if s.channel.Default != nil {
		return s.channel.Default, true
	}
	return nil, false
}
