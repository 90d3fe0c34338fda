package superstep

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/run"
)

// fieldWrite is one node's write to one field.
type fieldWrite struct {
	field  *slot
	nodeID string
	writer *nodeEntry // nil for a node the graph does not hold
	value  any
}

// barrier commits a settled superstep (spec 7.6): the parked and fresh
// results are folded into the state channels, the completed nodes' edges are
// evaluated against the post-write view, consumed activations are cleared,
// interrupts are registered, and the step advances.
func barrier(g *graph.Compiled, idx *index, r *run.Run, fresh []validated, env Env, now time.Time) (*run.Moment, error) {
	items := fresh
	if len(r.PendingWrites) > 0 {
		parked, failures := revalidatePending(idx, r)
		if len(failures) > 0 {
			return failSuperstep(r, nil, failures, now), nil
		}
		items = make([]validated, 0, len(parked)+len(fresh))
		items = append(items, parked...)
		items = append(items, fresh...)
		slices.SortStableFunc(items, func(a, b validated) int { return strings.Compare(a.nodeID, b.nodeID) })
	}
	if failures := duplicateInterruptIDs(items); len(failures) > 0 {
		return failSuperstep(r, nil, failures, now), nil
	}

	// 2. Writes: one fold per field, writers in node order. The working
	// lists live on the stack for the usual small superstep.
	// Fields and nodes are found in the index once, here: the writes carry
	// their slots and writers from validation to the events.
	var (
		writesBuf  [16]fieldWrite
		okBuf      [16]string
		okEntryBuf [16]*nodeEntry
		changedBuf [16]*slot
		writersBuf [16]span
	)
	writes, okNodes, okEntries := writesBuf[:0], okBuf[:0], okEntryBuf[:0]
	for i := range items {
		it := &items[i]
		if it.kind != run.WriteUpdate {
			continue
		}
		writer := idx.nodes[it.nodeID]
		okNodes = append(okNodes, it.nodeID)
		okEntries = append(okEntries, writer)
		if it.soleSet {
			// The usual one-field update, without starting a map iteration.
			writes = append(writes, fieldWrite{field: it.sole.slot, nodeID: it.nodeID, writer: writer, value: it.sole.value})
			continue
		}
		for f, v := range it.update {
			writes = append(writes, fieldWrite{field: idx.fields[f], nodeID: it.nodeID, writer: writer, value: v})
		}
	}
	// The committed list is never written: the barrier works on a copy,
	// with room for every channel the writes and the completed nodes'
	// edges could add, so no insert below grows it.
	room := len(r.Channels) + len(writes)
	for _, ne := range okEntries {
		if ne != nil {
			room += len(ne.outgoing)
		}
	}
	channels := make(run.Channels, len(r.Channels), room)
	copy(channels, r.Channels)
	clearConsumed(g, r.ChangedChannels, channels)

	slices.SortStableFunc(writes, func(a, b fieldWrite) int {
		if c := strings.Compare(a.field.publicID, b.field.publicID); c != 0 {
			return c
		}
		return strings.Compare(a.nodeID, b.nodeID)
	})
	changedFields, writerSpans := changedBuf[:0], writersBuf[:0]
	// Every field's writers are a window (writerSpans) of one array of
	// names; the fold's value lists are capped windows of another. Both
	// stay on the stack for small supersteps: a writer list is copied only
	// into a payload that is not shared (writersPayload).
	var (
		namesBuf  [16]any
		allNames  = namesBuf[:0]
		valuesBuf [16]any
		allValues = valuesBuf[:0]
	)
	if len(writes) > 0 {
		allNames = slices.Grow(allNames, len(writes))[:len(writes)]
		allValues = slices.Grow(allValues, len(writes))[:len(writes)]
	}
	for start := 0; start < len(writes); {
		end := start + 1
		for end < len(writes) && writes[end].field == writes[start].field {
			end++
		}
		s := writes[start].field
		values := allValues[start:end:end]
		names := allNames[start:end:end]
		for i := start; i < end; i++ {
			values[i-start] = writes[i].value
			names[i-start] = writes[i].writer.box(writes[i].nodeID)
		}
		fold(&channels, s, values)
		changedFields = append(changedFields, s)
		writerSpans = append(writerSpans, span{start, end})
		start = end
	}

	// 3. Edges of the nodes that completed with an update.
	var triggeredBuf, finishBuf [8]edgeEntry
	barrierSeen := barrierSets{m: r.BarrierSeen}
	completed := &nodeSet{list: okNodes}
	triggered, finish, gerr := fireEdges(triggeredBuf[:0], finishBuf[:0], idx, okEntries, &channels, &barrierSeen, completed, changedFields)
	if gerr != nil {
		return gerr.fail(r, now), nil
	}

	// 4. Clear the activations this superstep consumed. They were cleared
	// before the writes: only one that an edge fired again holds a value.
	for _, e := range triggered {
		if slices.Contains(r.ChangedChannels, e.edge.ChannelID) {
			clearConsumed(g, []string{e.edge.ChannelID}, channels)
		}
	}

	// 5. Register interrupts in node order.
	var newInterrupts []run.Interrupt
	var interruptWrites []int // indices into items
	interrupts := r.Interrupts
	pendingNodes := slices.DeleteFunc(slices.Clone(r.PendingNodes), completed.has)
	for i := range items {
		it := &items[i]
		if it.kind != run.WriteInterrupt {
			continue
		}
		id := it.intr.id
		if id == "" {
			if env.NewInterruptID == nil {
				return nil, &Error{Code: CodeInvalidRun, Phase: "settle", Message: "an interrupt needs an ID but Env.NewInterruptID is nil"}
			}
			id = env.NewInterruptID()
			if _, exists := interrupts[id]; exists || id == "" || suppliedInterruptID(items, id) {
				return nil, &Error{Code: CodeInvalidRun, Phase: "settle", Message: "Env.NewInterruptID returned an empty or already used ID " + strconv.Quote(id)}
			}
		}
		if len(newInterrupts) == 0 {
			interrupts = make(map[string]run.Interrupt, len(r.Interrupts)+1)
			maps.Copy(interrupts, r.Interrupts)
		}
		in := run.Interrupt{
			ID:            id,
			NodeID:        it.nodeID,
			Status:        run.InterruptOpen,
			ResumeChannel: it.intr.resumeChannel,
			Schema:        it.intr.schema,
			CreatedAt:     now,
			Metadata:      it.intr.metadata,
		}
		interrupts[id] = in
		newInterrupts = append(newInterrupts, in)
		interruptWrites = append(interruptWrites, i)
		pendingNodes = append(pendingNodes, it.nodeID)
	}
	if len(newInterrupts) > 0 {
		slices.Sort(pendingNodes)
		pendingNodes = slices.Compact(pendingNodes)
	}
	if len(pendingNodes) == 0 {
		pendingNodes = nil
	}

	// 6. The new run.
	changed := make([]string, 0, len(changedFields)+len(triggered))
	for _, s := range changedFields {
		changed = append(changed, s.channelID)
	}
	for _, e := range triggered {
		changed = append(changed, e.edge.ChannelID)
	}
	slices.Sort(changed)
	changed = slices.Compact(changed)

	next := *r
	next.Channels = slices.Clip(channels)
	next.BarrierSeen = barrierSeen.m
	next.ChangedChannels = changed
	next.PendingNodes = pendingNodes
	next.Interrupts = interrupts
	next.ActiveTasks = nil
	next.PendingWrites = nil
	next.Timers = nil
	next.Step = r.Step + 1
	next.Status = run.StatusRunning
	next.UpdatedAt = now

	// 7. Eager status: never commit running when nothing can proceed.
	disposition := run.Disposition{Kind: run.DispositionContinue}
	if open, interrupted := openInterrupts(&next); len(open) > 0 && len(appendCandidates(nil, idx, &next, interrupted, true)) == 0 {
		next.Status = run.StatusWaiting
		disposition = run.Disposition{Kind: run.DispositionExternal, Reason: run.ReasonAwaitingInterrupts}
	}
	ctype := run.CheckpointStepCommitted
	if len(newInterrupts) > 0 {
		ctype = run.CheckpointInterruptRequested
	}

	// 9. Events, at the pre-commit step.
	events := make([]run.Event, 0, len(okNodes)+len(changedFields)+len(triggered)+len(finish)+len(newInterrupts)+1)
	// Event payloads are read-only values, shared wherever they depend on
	// the graph alone (see sharedPayloads).
	for i := range items {
		it := &items[i]
		if it.kind == run.WriteUpdate {
			events = append(events, run.Event{
				Type: run.EventNodeCompleted, Step: r.Step, NodeID: it.nodeID, TaskID: it.taskID,
				Payload: idx.completedPayload(it.attempt),
			})
		}
	}
	for i, s := range changedFields {
		sp := writerSpans[i]
		payload := writes[sp.start].writer.soleWriterPayload(sp.end - sp.start)
		if payload == nil {
			payload = idx.writersPayload(allNames[sp.start:sp.end])
		}
		events = append(events, run.Event{
			Type: run.EventChannelUpdated, Step: r.Step, ChannelID: s.channelID,
			Payload: payload,
		})
	}
	for _, group := range [2][]edgeEntry{triggered, finish} {
		for _, e := range group {
			events = append(events, run.Event{
				Type: run.EventEdgeTriggered, Step: r.Step, ChannelID: e.edge.ChannelID,
				Payload: e.triggered,
			})
		}
	}
	if len(newInterrupts) > 1 {
		order := make([]int, len(newInterrupts))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return strings.Compare(newInterrupts[a].ID, newInterrupts[b].ID) })
		sortedIns := make([]run.Interrupt, len(order))
		sortedWrites := make([]int, len(order))
		for i, o := range order {
			sortedIns[i], sortedWrites[i] = newInterrupts[o], interruptWrites[o]
		}
		newInterrupts, interruptWrites = sortedIns, sortedWrites
	}
	for i, in := range newInterrupts {
		w := &items[interruptWrites[i]]
		events = append(events, run.Event{
			Type: run.EventInterruptRequested, Step: r.Step, NodeID: in.NodeID, TaskID: w.taskID,
			Payload: map[string]any{
				"attempt":        int64(w.attempt),
				"interrupt_id":   in.ID,
				"resume_channel": in.ResumeChannel,
			},
		})
	}
	return run.ProposeNext(r, next, events, ctype, disposition, now), nil
}

// clearConsumed clears the values of the ephemeral channels among
// consumed.
func clearConsumed(g *graph.Compiled, consumed []string, channels run.Channels) {
	for _, cid := range consumed {
		if ch := g.Channels[cid]; ch != nil && ch.Kind == graph.ChannelEphemeral {
			if i, ok := channels.Index(cid); ok {
				channels[i].Value = nil
			}
		}
	}
}

// fold writes the fold of values onto a field's current value (the
// committed value, else the channel default, else unset) to its channel,
// bumped as bump does. The working copy holds the committed state channels
// unchanged until their fold, so one lookup serves both.
func fold(channels *run.Channels, s *slot, values []any) {
	i, ok := channels.Index(s.channelID)
	if !ok {
		cur, has := s.channel.Default, s.channel.Default != nil
		*channels = slices.Insert(*channels, i, run.Channel{ID: s.channelID, Value: reducer.Fold(s.channel.Reducer, cur, has, values), Version: 1})
		return
	}
	c := &(*channels)[i]
	c.Value = reducer.Fold(s.channel.Reducer, c.Value, true, values)
	c.Version++
}

// bump writes v to a channel: a new channel gets version 1, an existing one
// version+1, even when the value is equal.
func bump(channels *run.Channels, id string, v any) {
	i, ok := channels.Index(id)
	if !ok {
		*channels = slices.Insert(*channels, i, run.Channel{ID: id, Value: v, Version: 1})
		return
	}
	c := &(*channels)[i]
	c.Value = v
	c.Version++
}

// barrierSets is the barrier sets a superstep works on: the committed
// run's map until the first change, then a copy, so a superstep that fires
// no barrier edge copies nothing.
type barrierSets struct {
	m      map[string][]string
	copied bool
}

// set records a barrier channel's seen sources.
func (b *barrierSets) set(channelID string, seen []string) {
	if !b.copied {
		m := make(map[string][]string, len(b.m)+1)
		maps.Copy(m, b.m)
		b.m, b.copied = m, true
	}
	b.m[channelID] = seen
}

// guardFailure is a guard that failed to evaluate; it fails the run.
type guardFailure struct {
	edgeID  string
	reasons []string
}

func (gf *guardFailure) fail(r *run.Run, now time.Time) *run.Moment {
	return planFailure(r, CodeGuardEvaluationFailed, "edge "+gf.edgeID+" guard evaluation failed", "",
		map[string]any{"edge_id": gf.edgeID, "reasons": stringList(gf.reasons)}, now)
}

func guardReasons(err error) []string {
	var ge *graph.GuardError
	if errors.As(err, &ge) && len(ge.Reasons) > 0 {
		return ge.Reasons
	}
	return []string{err.Error()}
}

// fireEdges evaluates the outgoing edges of the nodes that completed with an
// update, appending the fired ones to triggered and finish (the caller's
// buffers). A barrier edge records its completed sources and becomes a
// candidate (with its seen set reset) once every source has been seen; the
// guard is checked after the reset. Passing $finish edges go to finish
// without a channel bump; other passing edges bump their channel.
func fireEdges(triggered, finish []edgeEntry, idx *index, okEntries []*nodeEntry, channels *run.Channels, barrierSeen *barrierSets, completed *nodeSet, changedFields []*slot) (_, _ []edgeEntry, gf *guardFailure) {
	var edges []edgeEntry
	switch len(okEntries) {
	case 0:
	case 1:
		// Already sorted: no copy needed.
		if ne := okEntries[0]; ne != nil {
			edges = ne.outgoing
		}
	default:
		for _, ne := range okEntries {
			if ne != nil {
				edges = append(edges, ne.outgoing...)
			}
		}
		slices.SortFunc(edges, compareEdgeEntries)
		edges = slices.CompactFunc(edges, func(a, b edgeEntry) bool { return a.edge.ID == b.edge.ID })
	}
	var view *graph.View
	for _, ee := range edges {
		e := ee.edge
		if e.Barrier {
			if i, ok := channels.Index(e.ChannelID); !ok {
				// The barrier set's channel, version 0 until it fires.
				*channels = slices.Insert(*channels, i, run.Channel{ID: e.ChannelID})
			}
			// Sorted sets and binary searches: a join of thousands of
			// branches stays O(n log n) a superstep.
			committed := barrierSeen.m[e.ChannelID]
			seen := slices.Clone(committed)
			slices.Sort(seen)
			for _, src := range e.From {
				if completed.has(src) && !sortedHas(seen[:len(committed)], src) {
					seen = append(seen, src)
				}
			}
			slices.Sort(seen)
			complete := true
			for _, src := range e.From {
				if !sortedHas(seen, src) {
					complete = false
					break
				}
			}
			if !complete {
				barrierSeen.set(e.ChannelID, seen)
				continue
			}
			barrierSeen.set(e.ChannelID, []string{})
		}
		if e.Guard != nil {
			if view == nil {
				changed := make(map[string]bool, len(changedFields))
				for _, s := range changedFields {
					changed[s.publicID] = true
				}
				v := idx.guardView(*channels, changed)
				view = &v
			}
			pass, err := e.Guard.Eval(*view)
			if err != nil {
				return nil, nil, &guardFailure{edgeID: e.ID, reasons: guardReasons(err)}
			}
			if !pass {
				continue
			}
		}
		if e.To == graph.Finish {
			finish = append(finish, ee)
			continue
		}
		bump(channels, e.ChannelID, true)
		triggered = append(triggered, ee)
	}
	return triggered, finish, nil
}

// revalidatePending passes the run's parked results through the same
// validation as fresh ones; only corrupted storage fails here.
func revalidatePending(idx *index, r *run.Run) ([]validated, []attemptFailure) {
	out := make([]validated, 0, len(r.PendingWrites))
	var failures []attemptFailure
	for _, pw := range r.PendingWrites {
		switch pw.Kind {
		case run.WriteUpdate:
			upd, last, reasons := validateUpdateEntries(idx, pw.Value)
			if len(reasons) > 0 {
				failures = append(failures, attemptFailure{pw.NodeID, pw.TaskID, pw.Attempt, "invalid_state_update: " + strings.Join(reasons, "; ")})
				continue
			}
			out = append(out, validated{taskID: pw.TaskID, nodeID: pw.NodeID, attempt: pw.Attempt, kind: run.WriteUpdate, update: upd, sole: last, soleSet: len(upd) == 1, value: upd})
		case run.WriteInterrupt:
			req, reasons := decodeInterrupt(pw.Value)
			var in interruptRequest
			if len(reasons) == 0 {
				in, reasons = validateInterrupt(idx, r, req)
			}
			if len(reasons) > 0 {
				failures = append(failures, attemptFailure{pw.NodeID, pw.TaskID, pw.Attempt, "invalid_interrupt: " + strings.Join(reasons, "; ")})
				continue
			}
			out = append(out, validated{taskID: pw.TaskID, nodeID: pw.NodeID, attempt: pw.Attempt, kind: run.WriteInterrupt, intr: in, value: interruptValue(pw.NodeID, in)})
		default:
			failures = append(failures, attemptFailure{pw.NodeID, pw.TaskID, pw.Attempt, "invalid_pending_write: unknown kind " + strconv.Quote(pw.Kind)})
		}
	}
	return out, failures
}

// duplicateInterruptIDs rejects two interrupts of one superstep that supply
// the same ID; the later node's request fails.
func duplicateInterruptIDs(items []validated) []attemptFailure {
	var seen []string
	var failures []attemptFailure
	for i := range items {
		it := &items[i]
		if it.kind != run.WriteInterrupt || it.intr.id == "" {
			continue
		}
		if slices.Contains(seen, it.intr.id) {
			failures = append(failures, attemptFailure{it.nodeID, it.taskID, it.attempt,
				"invalid_interrupt: interrupt id " + strconv.Quote(it.intr.id) + " is requested by more than one node"})
			continue
		}
		seen = append(seen, it.intr.id)
	}
	return failures
}

// suppliedInterruptID reports whether a node of this superstep asked for id
// itself, so a generated ID can never take it.
func suppliedInterruptID(items []validated, id string) bool {
	for i := range items {
		if items[i].kind == run.WriteInterrupt && items[i].intr.id == id {
			return true
		}
	}
	return false
}

// nodeSet is the set of a superstep's completed nodes: a scan of the list
// for the usual few, a map once a wide fan-out makes scans quadratic.
type nodeSet struct {
	list []string
	m    map[string]struct{}
}

func (s *nodeSet) has(id string) bool {
	if len(s.list) <= 16 {
		return slices.Contains(s.list, id)
	}
	if s.m == nil {
		s.m = make(map[string]struct{}, len(s.list))
		for _, n := range s.list {
			s.m[n] = struct{}{}
		}
	}
	_, ok := s.m[id]
	return ok
}

// sortedHas reports whether a sorted list holds x.
func sortedHas(sorted []string, x string) bool {
	_, ok := slices.BinarySearch(sorted, x)
	return ok
}

// span is a window [start, end) of a list.
type span struct{ start, end int }
