package run

import "github.com/docketgo/docket/domain/value"

// Equal reports whether e and o record the same fact: every field matches,
// timestamps as instants, payloads as portable values (strictly: 1 and 1.0
// differ; a nil map equals an empty one), metadata as checkpoint metadata. Stores use it to accept
// a re-appended event and to reject a different one under the same
// (run_id, seq).
func (e Event) Equal(o Event) bool {
	return e.RunID == o.RunID &&
		e.Seq == o.Seq &&
		e.Type == o.Type &&
		e.Step == o.Step &&
		e.NodeID == o.NodeID &&
		e.ChannelID == o.ChannelID &&
		e.TaskID == o.TaskID &&
		e.Timestamp.Equal(o.Timestamp) &&
		value.Equal(e.Payload, o.Payload) &&
		e.Metadata.Equal(o.Metadata)
}
