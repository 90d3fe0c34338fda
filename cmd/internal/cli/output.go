package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/value"
	"github.com/docketgo/docket/ports"
)

// printJSON writes v as indented JSON with a trailing newline.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// table writes aligned columns.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		// A cell is one line: a newline in an id or value would start a
		// row of its own.
		cells[i] = strings.ReplaceAll(strings.ReplaceAll(c, "\t", " "), "\n", `\u000a`)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// timestamp renders a time as RFC 3339 in UTC with microseconds, or ""
// for the zero time.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}

// shortTime is the table form of a time.
func shortTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// compactJSON renders a portable value on one line for tables, in its
// canonical JSON form (floats keep their ".0", so 1500.0 and 1500 differ).
func compactJSON(v any) string {
	if b, err := value.Canonical(v); err == nil {
		return string(b)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// jsonMap is a map of portable values that marshals canonically: an
// integer stays an integer and a float keeps its ".0", so JSON output fed
// back as input (runs start --input @file) means the same values.
type jsonMap map[string]any

// MarshalJSON implements json.Marshaler.
func (m jsonMap) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("null"), nil
	}
	if b, err := value.Canonical(map[string]any(m)); err == nil {
		return b, nil
	}
	return json.Marshal(map[string]any(m))
}

// runJSON is the JSON form of a run (runs show, runs start, ...).
type runJSON struct {
	RunID         string           `json:"run_id"`
	Tenant        string           `json:"tenant,omitempty"`
	GraphID       string           `json:"graph_id"`
	GraphHash     string           `json:"graph_hash"`
	Status        run.Status       `json:"status"`
	Step          int              `json:"step"`
	CheckpointSeq int64            `json:"checkpoint_seq"`
	EventSeq      int64            `json:"event_seq"`
	Input         jsonMap          `json:"input"`
	Output        jsonMap          `json:"output,omitzero"` // exactly when done; {} for no outputs
	Failure       *failureJSON     `json:"failure,omitempty"`
	Interrupts    []interruptJSON  `json:"interrupts"`
	ActiveTasks   []taskJSON       `json:"active_tasks"`
	PendingNodes  []string         `json:"pending_nodes"`
	Metadata      jsonMap          `json:"metadata,omitempty"`
	State         jsonMap          `json:"state,omitzero"` // runs show --state only
	StartedAt     string           `json:"started_at"`
	UpdatedAt     string           `json:"updated_at"`
	FinishedAt    string           `json:"finished_at,omitempty"`
	Operational   *operationalJSON `json:"operational,omitempty"`
}

type failureJSON struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	NodeID  string  `json:"node_id,omitempty"`
	Details jsonMap `json:"details,omitempty"`
}

type interruptJSON struct {
	RunID         string  `json:"run_id,omitempty"`
	ID            string  `json:"id"`
	NodeID        string  `json:"node_id"`
	Status        string  `json:"status"`
	ResumeChannel string  `json:"resume_channel"`
	Schema        jsonMap `json:"schema,omitempty"`
	Metadata      jsonMap `json:"metadata,omitempty"`
	CreatedAt     string  `json:"created_at"`
	ResolvedAt    string  `json:"resolved_at,omitempty"`
}

type taskJSON struct {
	TaskID     string `json:"task_id"`
	NodeID     string `json:"node_id"`
	Step       int    `json:"step"`
	Attempt    int    `json:"attempt"`
	Status     string `json:"status"`
	DeadlineAt string `json:"deadline_at,omitempty"`
}

// operationalJSON is the queue state of a run: never its claim token.
type operationalJSON struct {
	LatestCheckpointType run.CheckpointType `json:"latest_checkpoint_type,omitempty"`
	WakeAt               string             `json:"wake_at,omitempty"`
	ClaimedAt            string             `json:"claimed_at,omitempty"`
	ClaimAttempts        int                `json:"claim_attempts"`
	ClaimAbandons        int                `json:"claim_abandons"`
	Poisoned             bool               `json:"poisoned"`
	PoisonedAt           string             `json:"poisoned_at,omitempty"`
	PoisonReason         string             `json:"poison_reason,omitempty"`
}

func toRunJSON(r *run.Run, info *ports.RunInfo) runJSON {
	out := runJSON{
		RunID:         r.ID,
		GraphID:       r.GraphID,
		GraphHash:     r.GraphHash,
		Status:        r.Status,
		Step:          r.Step,
		CheckpointSeq: r.CheckpointSeq,
		EventSeq:      r.EventSeq,
		Input:         r.Input,
		Output:        r.Output,
		Interrupts:    interruptsOf(r, false),
		ActiveTasks:   []taskJSON{},
		PendingNodes:  append([]string{}, r.PendingNodes...),
		Metadata:      r.Metadata,
		StartedAt:     timestamp(r.StartedAt),
		UpdatedAt:     timestamp(r.UpdatedAt),
		FinishedAt:    timestamp(r.FinishedAt),
	}
	if r.Status == run.StatusDone && out.Output == nil {
		out.Output = jsonMap{}
	}
	out.Failure = toFailureJSON(r.Failure)
	for _, id := range sortedKeys(r.ActiveTasks) {
		t := r.ActiveTasks[id]
		out.ActiveTasks = append(out.ActiveTasks, taskJSON{
			TaskID: t.TaskID, NodeID: t.NodeID, Step: t.Step, Attempt: t.Attempt, Status: t.Status,
			DeadlineAt: timestamp(t.DeadlineAt),
		})
	}
	if info != nil {
		out.Tenant = info.Owner.TenantID()
		out.Operational = &operationalJSON{
			LatestCheckpointType: info.LatestCheckpointType,
			WakeAt:               timestamp(info.WakeAt),
			ClaimedAt:            timestamp(info.ClaimedAt),
			ClaimAttempts:        info.ClaimAttempts,
			ClaimAbandons:        info.ClaimAbandons,
			Poisoned:             info.Poisoned(),
			PoisonedAt:           timestamp(info.PoisonedAt),
			PoisonReason:         info.PoisonReason,
		}
	}
	return out
}

// toFailureJSON is the JSON form of a run's failure; nil for none.
func toFailureJSON(f *run.Failure) *failureJSON {
	if f == nil {
		return nil
	}
	return &failureJSON{Code: f.Code, Message: f.Message, NodeID: f.NodeID, Details: f.Details}
}

// interruptClosed is the status shown for an interrupt its run finished
// (done, failed or cancelled) without having answered: the document keeps
// it open, but a finished run takes no answer.
const interruptClosed = "closed"

// interruptsOf lists r's interrupts by creation, then id.
func interruptsOf(r *run.Run, withRunID bool) []interruptJSON {
	ids := sortedKeys(r.Interrupts)
	slices.SortStableFunc(ids, func(a, b string) int {
		return r.Interrupts[a].CreatedAt.Compare(r.Interrupts[b].CreatedAt)
	})
	out := []interruptJSON{}
	for _, id := range ids {
		in := r.Interrupts[id]
		j := interruptJSON{
			ID: in.ID, NodeID: in.NodeID, Status: in.Status, ResumeChannel: in.ResumeChannel,
			Schema: in.Schema, Metadata: in.Metadata,
			CreatedAt: timestamp(in.CreatedAt), ResolvedAt: timestamp(in.ResolvedAt),
		}
		if in.Status == run.InterruptOpen && r.Status.Terminal() {
			j.Status = interruptClosed
		}
		if withRunID {
			j.RunID = r.ID
		}
		out = append(out, j)
	}
	return out
}

// summaryJSON is the list form of a run.
type summaryJSON struct {
	RunID         string     `json:"run_id"`
	Tenant        string     `json:"tenant,omitempty"`
	GraphID       string     `json:"graph_id"`
	GraphHash     string     `json:"graph_hash"`
	Status        run.Status `json:"status"`
	Step          int        `json:"step"`
	CheckpointSeq int64      `json:"checkpoint_seq"`
	StartedAt     string     `json:"started_at"`
	UpdatedAt     string     `json:"updated_at"`
	FinishedAt    string     `json:"finished_at,omitempty"`
}

func toSummaryJSON(s ports.RunSummary) summaryJSON {
	return summaryJSON{
		RunID: s.RunID, Tenant: s.Owner.TenantID(), GraphID: s.GraphID, GraphHash: s.GraphHash,
		Status: s.Status, Step: s.Step, CheckpointSeq: s.CheckpointSeq,
		StartedAt: timestamp(s.StartedAt), UpdatedAt: timestamp(s.UpdatedAt), FinishedAt: timestamp(s.FinishedAt),
	}
}

// eventJSON is the JSON form of an event. Cursor, when set, resumes a
// tail right after this event.
type eventJSON struct {
	RunID     string        `json:"run_id"`
	Seq       int64         `json:"seq"`
	Type      run.EventType `json:"type"`
	Step      int           `json:"step"`
	NodeID    string        `json:"node_id,omitempty"`
	ChannelID string        `json:"channel_id,omitempty"`
	TaskID    string        `json:"task_id,omitempty"`
	Timestamp string        `json:"timestamp"`
	Payload   jsonMap       `json:"payload"`
	Metadata  jsonMap       `json:"metadata"`
	Cursor    string        `json:"cursor,omitempty"`
}

func toEventJSON(e run.Event) eventJSON {
	payload := e.Payload
	if payload == nil {
		payload = map[string]any{}
	}
	return eventJSON{
		RunID: e.RunID, Seq: e.Seq, Type: e.Type, Step: e.Step, NodeID: e.NodeID, ChannelID: e.ChannelID,
		TaskID: e.TaskID, Timestamp: timestamp(e.Timestamp), Payload: payload, Metadata: e.Metadata.Map(),
	}
}

// eventDetail is the table form of an event's subject and payload.
func eventDetail(e run.Event) string {
	switch e.Type {
	case run.EventNodeFailed:
		return fmt.Sprintf("%s attempt %v: %v", e.NodeID, e.Payload["attempt"], e.Payload["reason"])
	case run.EventNodeCompleted:
		return fmt.Sprintf("%s attempt %v", e.NodeID, e.Payload["attempt"])
	case run.EventEdgeTriggered:
		return fmt.Sprintf("%v", e.Payload["edge_id"])
	case run.EventChannelUpdated:
		return e.ChannelID
	case run.EventInterruptRequested, run.EventInterruptResolved:
		return fmt.Sprintf("%s %v", e.NodeID, e.Payload["interrupt_id"])
	case run.EventCheckpointCommitted:
		return checkpointDetail(e.Metadata)
	case run.EventRunFailed:
		return fmt.Sprintf("%v: %v", e.Payload["reason"], e.Payload["message"])
	}
	return e.NodeID
}

// checkpointDetail is the "type, disposition (reason)" of a checkpoint.
func checkpointDetail(m *run.CheckpointMetadata) string {
	if m == nil {
		return ""
	}
	out := string(m.Type) + " → " + string(m.WakeDisposition)
	if m.WakeDisposition != run.DispositionContinue && m.ParkReason != "" {
		out += " (" + m.ParkReason + ")"
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// bar is a progress bar drawn on stderr when it is a terminal; its zero
// value (no terminal, --no-progress, --json) does nothing.
type bar struct{ pb *progressbar.ProgressBar }

// progress returns a bar for max steps (-1: unknown, a spinner).
func (a *app) progress(max int, description string) bar {
	if a.noProgress || !a.opts.Terminal(a.io.Err) {
		return bar{}
	}
	return bar{pb: progressbar.NewOptions(max,
		progressbar.OptionSetWriter(a.io.Err),
		progressbar.OptionSetDescription(description),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(65*time.Millisecond),
		progressbar.OptionSetPredictTime(false),
	)}
}

func (b bar) add(n int) {
	if b.pb != nil {
		_ = b.pb.Add(n)
	}
}

func (b bar) set(n int) {
	if b.pb != nil {
		_ = b.pb.Set(n)
	}
}

func (b bar) describe(s string) {
	if b.pb != nil {
		b.pb.Describe(s)
	}
}

func (b bar) finish() {
	if b.pb != nil {
		_ = b.pb.Finish()
	}
}

// terminalSafe returns s with every control character but newline and tab
// (C0, DEL and C1: the escapes and carriage returns that would restyle,
// retitle or overwrite the reader's terminal) written as a visible \u00XX
// escape, and bytes that are not UTF-8 as U+FFFD. Ids, values and error
// texts come from whoever started a run or wrote a node, so every line
// docket prints goes through it. The escape is JSON's own, so a JSON
// document means the same after it.
func terminalSafe(s string) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			b.WriteRune(utf8.RuneError)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return r == utf8.RuneError || (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f)
}

// safeWriter passes writes on through terminalSafe. Every write of the
// CLI is whole text (a line, a table cell, a JSON document), so no
// character is split between two writes.
type safeWriter struct{ w io.Writer }

// Write implements io.Writer.
func (s safeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, terminalSafe(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// shellQuote writes s as one word of a POSIX shell command line: as it is
// when no character of it is special to a shell, else in single quotes
// (a quote inside closes them, adds \' and reopens them). Commands docket
// suggests quote the ids and cursors they carry, so they can be pasted.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,:/@%+=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
