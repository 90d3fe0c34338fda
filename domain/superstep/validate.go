package superstep

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/value"
)

// validated is an attempt result that passed validation and waits for the
// barrier: a state update or an interrupt request. value is what a retry
// park stores as the pending write's Value.
type validated struct {
	taskID  string
	nodeID  string
	attempt int
	kind    string // run.WriteUpdate or run.WriteInterrupt
	update  map[string]any
	// sole is the update's only entry when it has exactly one (soleSet),
	// taken in validation's pass so the barrier need not iterate the map
	// again.
	sole    fieldValue
	soleSet bool
	intr    interruptRequest
	value   any
}

// interruptRequest is a validated interrupt in its durable form.
type interruptRequest struct {
	id            string
	resumeChannel string
	schema        map[string]any // wire form; nil when none
	metadata      map[string]any
}

func (v *validated) pendingWrite() run.PendingWrite {
	return run.PendingWrite{TaskID: v.taskID, NodeID: v.nodeID, Attempt: v.attempt, Kind: v.kind, Value: v.value}
}

// keyedReason sorts reasons by the update key they concern.
type keyedReason struct {
	key    string
	reason string
}

// fieldValue is one entry of a state update, by the field's slot (nil for
// an undeclared field, which fails validation).
type fieldValue struct {
	slot  *slot
	value any
}

// validateUpdate checks one node's state update (spec 7.5): a map of
// portable values whose keys are declared state fields and whose values
// satisfy the field's write schema. The returned map is the update in
// portable form.
func validateUpdate(idx *index, v any) (map[string]any, []string) {
	m, _, reasons := validateUpdateEntries(idx, v)
	return m, reasons
}

// validateUpdateEntries is validateUpdate, and the entry of the returned
// map visited last: its only entry when it has one.
func validateUpdateEntries(idx *index, v any) (map[string]any, fieldValue, []string) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fieldValue{}, []string{fmt.Sprintf("must return a state update map, got %s", value.KindName(v))}
	}
	if m == nil {
		// A node that writes nothing may return a nil map; store it as {} so
		// the parked write reads back as a map.
		m = map[string]any{}
	}
	problems, portable, last := updateProblems(idx, m)
	if !portable {
		n, err := value.Normalize(m)
		if err != nil {
			return nil, fieldValue{}, []string{"returned a non-durable update: " + err.Error()}
		}
		m = n.(map[string]any)
		problems, _, last = updateProblems(idx, m)
	}
	if len(problems) == 0 {
		return m, last, nil
	}
	slices.SortStableFunc(problems, func(a, b keyedReason) int { return strings.Compare(a.key, b.key) })
	reasons := make([]string, len(problems))
	for i, p := range problems {
		reasons[i] = p.reason
	}
	return nil, fieldValue{}, reasons
}

// updateProblems checks each entry of an update against its field, in the
// same pass as its portability (a map's iteration is most of the cost of
// checking a small update); it stops at the first entry that is not in
// portable form. last is the entry it visited last.
func updateProblems(idx *index, m map[string]any) (problems []keyedReason, portable bool, last fieldValue) {
	for k, w := range m {
		if value.CheckEntry(k, w) != nil {
			return nil, false, fieldValue{}
		}
		s := idx.fields[k]
		last = fieldValue{s, w}
		if s != nil {
			ws := reducer.WriteSchema(s.channel.Reducer, s.channel.Schema, w)
			if ws == nil {
				continue
			}
			for _, reason := range ws.Validate(w) {
				problems = append(problems, keyedReason{k, "wrote invalid value to " + strconv.Quote(k) + ": " + reason})
			}
			continue
		}
		if idx.inputs[k] != nil {
			problems = append(problems, keyedReason{k, "wrote " + strconv.Quote(k) + ", which is an input and read-only"})
			continue
		}
		problems = append(problems, keyedReason{k, "wrote unknown field " + strconv.Quote(k)})
	}
	return problems, true, last
}

// validateInterrupt checks a node's interrupt request (spec 7.5): the
// resume channel is a declared state field, the schema (if any) is valid, a
// supplied ID is not already used on the run, and the metadata is portable.
func validateInterrupt(idx *index, r *run.Run, req *InterruptRequest) (interruptRequest, []string) {
	if req == nil {
		return interruptRequest{}, []string{"interrupt request is missing"}
	}
	out := interruptRequest{id: req.ID, resumeChannel: req.ResumeChannel}
	var reasons []string
	if idx.fields[req.ResumeChannel] == nil {
		reasons = append(reasons, "interrupt resume_channel "+strconv.Quote(req.ResumeChannel)+" is not a declared state field")
	}
	if req.Schema != nil {
		if problems := schema.Check(req.Schema); len(problems) > 0 {
			reasons = append(reasons, "interrupt schema is invalid: "+strings.Join(problems, "; "))
		} else if m := req.Schema.ToMap(); value.Check(m) != nil {
			// Its wire form nests deeper than a run may hold.
			reasons = append(reasons, "interrupt schema is not portable: "+value.Check(m).Error())
		} else {
			out.schema = m
		}
	}
	if req.ID != "" {
		// Portable text only, as for every value: PostgreSQL would replace
		// invalid UTF-8, and the id the node chose could never be resolved.
		if !utf8.ValidString(req.ID) {
			reasons = append(reasons, "interrupt id "+strconv.Quote(req.ID)+" must be UTF-8 text")
		} else if _, exists := r.Interrupts[req.ID]; exists {
			reasons = append(reasons, "interrupt id "+strconv.Quote(req.ID)+" already exists on this run")
		}
	}
	out.metadata = map[string]any{}
	if len(req.Metadata) > 0 {
		n, err := value.Normalize(req.Metadata)
		if err != nil {
			reasons = append(reasons, "interrupt metadata is not portable: "+err.Error())
		} else {
			out.metadata = n.(map[string]any)
		}
	}
	return out, reasons
}

// interruptValue is the durable pending-write form of a validated interrupt.
func interruptValue(nodeID string, in interruptRequest) map[string]any {
	m := map[string]any{
		"node_id":        nodeID,
		"resume_channel": in.resumeChannel,
		"metadata":       in.metadata,
	}
	if in.id != "" {
		m["id"] = in.id
	}
	if in.schema != nil {
		m["schema"] = in.schema
	}
	return m
}

// decodeInterrupt reads a parked interrupt pending write back into a
// request so it passes through the same validation as a fresh one.
func decodeInterrupt(v any) (*InterruptRequest, []string) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, []string{"interrupt pending write must be a map, got " + value.KindName(v)}
	}
	req := &InterruptRequest{}
	var reasons []string
	for k, f := range m {
		switch k {
		case "node_id":
		case "id":
			s, ok := f.(string)
			if !ok {
				reasons = append(reasons, "interrupt id must be a string, got "+value.KindName(f))
			}
			req.ID = s
		case "resume_channel":
			s, ok := f.(string)
			if !ok {
				reasons = append(reasons, "interrupt resume_channel must be a string, got "+value.KindName(f))
			}
			req.ResumeChannel = s
		case "schema":
			if f == nil {
				continue
			}
			sm, ok := f.(map[string]any)
			if !ok {
				reasons = append(reasons, "interrupt schema must be a schema map, got "+value.KindName(f))
				continue
			}
			s, err := schema.FromMap(sm)
			if err != nil {
				reasons = append(reasons, "interrupt schema is invalid: "+err.Error())
				continue
			}
			req.Schema = s
		case "metadata":
			if f == nil {
				continue
			}
			mm, ok := f.(map[string]any)
			if !ok {
				reasons = append(reasons, "interrupt metadata must be a map, got "+value.KindName(f))
			}
			req.Metadata = mm
		default:
			reasons = append(reasons, "interrupt pending write has unknown key "+strconv.Quote(k))
		}
	}
	if len(reasons) > 0 {
		slices.Sort(reasons)
		return nil, reasons
	}
	return req, nil
}
