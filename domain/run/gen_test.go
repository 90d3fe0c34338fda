package run

import (
	"slices"
	"time"

	"pgregory.net/rapid"
)

// Generators of valid durable runs for property tests. Each test builds
// its own generators: rapid's generators describe themselves lazily, which
// races when one generator is drawn from by parallel tests.

// genID draws public IDs.
func genID() *rapid.Generator[string] { return rapid.StringMatching(`[a-z][a-z0-9_-]{0,6}`) }

// genKey draws object keys, including non-ASCII ones whose canonical order
// is not byte order.
func genKey() *rapid.Generator[string] {
	return rapid.OneOf(genID(), rapid.SampledFrom([]string{"é", "\uffee", "😀", "a\"b", "tab\t", ""}))
}

// genIDKey draws non-empty IDs used as keys, including non-ASCII ones.
func genIDKey() *rapid.Generator[string] {
	return rapid.OneOf(genID(), rapid.SampledFrom([]string{"é", "\uffee", "😀", "state:\u2028"}))
}

func genTime(t *rapid.T, label string) time.Time {
	// 1970 … 2100, microsecond precision
	return time.UnixMicro(rapid.Int64Range(0, 4102444800000000).Draw(t, label)).UTC()
}

func genScalar(t *rapid.T) any {
	switch rapid.IntRange(0, 5).Draw(t, "scalar kind") {
	case 0:
		return nil
	case 1:
		return rapid.Bool().Draw(t, "bool")
	case 2:
		return rapid.String().Draw(t, "string")
	case 3:
		return rapid.Int64().Draw(t, "int")
	case 4:
		return rapid.Float64().Draw(t, "float")
	default:
		return float64(rapid.Int64Range(-5, 5).Draw(t, "integral float"))
	}
}

func genValue(t *rapid.T, depth int) any {
	if depth <= 0 {
		return genScalar(t)
	}
	switch rapid.IntRange(0, 3).Draw(t, "value kind") {
	case 0:
		n := rapid.IntRange(0, 3).Draw(t, "list len")
		out := make([]any, n)
		for i := range out {
			out[i] = genValue(t, depth-1)
		}
		return out
	case 1:
		return genMap(t, depth-1)
	default:
		return genScalar(t)
	}
}

func genMap(t *rapid.T, depth int) map[string]any {
	n := rapid.IntRange(0, 3).Draw(t, "map len")
	out := make(map[string]any, n)
	for range n {
		out[genKey().Draw(t, "key")] = genValue(t, depth)
	}
	return out
}

// genOptMap draws nil or a (possibly empty) portable map.
func genOptMap(t *rapid.T) map[string]any {
	if rapid.Bool().Draw(t, "nil map") {
		return nil
	}
	return genMap(t, 2)
}

func genSet(t *rapid.T, label string) []string {
	if rapid.Bool().Draw(t, label+" nil") {
		return nil
	}
	s := rapid.SliceOfDistinct(genID(), rapid.ID[string]).Draw(t, label)
	slices.Sort(s)
	return s
}

// genRun draws a run that passes Validate, covering every status, the active
// superstep of a retry park, and nil versus empty containers.
func genRun(t *rapid.T) *Run {
	status := rapid.SampledFrom([]Status{StatusRunning, StatusWaiting, StatusDone, StatusFailed, StatusCancelled}).Draw(t, "status")
	started := genTime(t, "started_at")
	r := &Run{
		ID:              genID().Draw(t, "id"),
		GraphID:         genID().Draw(t, "graph_id"),
		GraphHash:       rapid.StringMatching(`[0-9a-f]{64}`).Draw(t, "graph_hash"),
		Status:          status,
		Input:           genOptMap(t),
		StartedAt:       started,
		UpdatedAt:       started.Add(time.Duration(rapid.Int64Range(0, 1e12).Draw(t, "elapsed µs")) * time.Microsecond),
		Step:            rapid.IntRange(0, 100).Draw(t, "step"),
		ChangedChannels: genSet(t, "changed_channels"),
		PendingNodes:    genSet(t, "pending_nodes"),
		CheckpointSeq:   rapid.Int64Range(0, 1<<40).Draw(t, "checkpoint_seq"),
		EventSeq:        rapid.Int64Range(0, 1<<40).Draw(t, "event_seq"),
		Metadata:        genOptMap(t),
	}
	if status.Terminal() {
		r.FinishedAt = r.UpdatedAt
	}
	switch status {
	case StatusDone:
		r.Output = genMap(t, 2)
	case StatusFailed:
		r.Failure = &Failure{
			Code:    genID().Draw(t, "code"),
			Message: rapid.StringN(1, 20, -1).Draw(t, "message"),
			NodeID:  rapid.OneOf(rapid.Just(""), genID()).Draw(t, "failure node"),
			Details: genOptMap(t),
		}
	}
	if !rapid.Bool().Draw(t, "nil channels") {
		r.Channels = Channels{}
		for range rapid.IntRange(0, 4).Draw(t, "channels") {
			id := genIDKey().Draw(t, "channel id")
			r.Channels.Set(Channel{
				ID:      id,
				Value:   genValue(t, 2),
				Version: rapid.Int64Range(0, 1000).Draw(t, "version"),
			})
			if seen := genSet(t, "barrier_seen"); seen != nil {
				if r.BarrierSeen == nil {
					r.BarrierSeen = map[string][]string{}
				}
				r.BarrierSeen[id] = seen
			}
		}
	}
	if !rapid.Bool().Draw(t, "nil interrupts") {
		r.Interrupts = map[string]Interrupt{}
		for range rapid.IntRange(0, 3).Draw(t, "interrupts") {
			id := genID().Draw(t, "interrupt id")
			in := Interrupt{
				ID: id, NodeID: genID().Draw(t, "interrupt node"), Status: InterruptOpen,
				ResumeChannel: genID().Draw(t, "resume channel"), Schema: genOptMap(t),
				CreatedAt: genTime(t, "created_at"), Metadata: genOptMap(t),
			}
			if rapid.Bool().Draw(t, "resolved") {
				in.Status, in.ResolvedAt = InterruptResolved, genTime(t, "resolved_at")
			}
			r.Interrupts[id] = in
		}
	}
	if status == StatusRunning && rapid.Bool().Draw(t, "active superstep") {
		genSuperstep(t, r)
	} else if rapid.Bool().Draw(t, "empty superstep containers") {
		r.ActiveTasks, r.PendingWrites, r.Timers = map[string]TaskState{}, []PendingWrite{}, map[string]Timer{}
	}
	return r
}

// genSuperstep gives a running run a parked superstep: at least one parked
// task, each with a timer, and pending writes of other nodes.
func genSuperstep(t *rapid.T, r *Run) {
	nodes := rapid.SliceOfNDistinct(genID(), 1, 5, rapid.ID[string]).Draw(t, "superstep nodes")
	tasks := rapid.IntRange(1, len(nodes)).Draw(t, "parked tasks")
	snapshot := genMap(t, 2)
	r.ActiveTasks, r.Timers = map[string]TaskState{}, map[string]Timer{}
	for _, node := range nodes[:tasks] {
		task := parkedTask(r.ID, r.Step, node, rapid.IntRange(1, 4).Draw(t, "attempt"), snapshot)
		task.SourceVersions = rapid.MapOf(genID(), rapid.Int64Range(0, 50)).Draw(t, "source versions")
		task.Metadata = genOptMap(t)
		r.ActiveTasks[task.TaskID] = task
		r.Timers[task.TaskID] = Timer{Kind: TimerRetry, FiresAt: genTime(t, "fires_at")}
	}
	for _, node := range nodes[tasks:] {
		r.PendingWrites = append(r.PendingWrites, PendingWrite{
			TaskID: TaskID(r.ID, r.Step, node), NodeID: node,
			Attempt: rapid.IntRange(1, 4).Draw(t, "attempted"),
			Kind:    rapid.SampledFrom([]string{WriteUpdate, WriteInterrupt}).Draw(t, "kind"),
			Value:   genMap(t, 2),
		})
	}
}
