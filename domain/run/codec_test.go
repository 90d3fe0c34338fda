package run

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/docketgo/docket/domain/value"
)

func codecFixtures() map[string]*Run {
	_, park := retryParkPair()
	withNils := runningRun()
	withNils.Input, withNils.Metadata, withNils.Channels, withNils.BarrierSeen = nil, nil, nil, nil
	withNils.ChangedChannels, withNils.PendingNodes = nil, nil
	withNils.ActiveTasks, withNils.PendingWrites, withNils.Interrupts, withNils.Timers = nil, nil, nil, nil
	numbers := runningRun()
	numbers.Channels.Set(Channel{ID: "state:n", Value: map[string]any{"int": int64(1), "float": 1.0, "big": int64(1) << 62, "tiny": 1e-7, "huge": 1e300, "neg": -2.5}, Version: 3})
	unicode := runningRun()
	unicode.Channels.Set(Channel{ID: "state:\uffee", Value: "\u2028 \x01 \"q\" 😀", Version: 1})
	unicode.Channels.Set(Channel{ID: "state:😀", Value: "emoji", Version: 1})
	unicode.Metadata = map[string]any{"é": "accent", "ascii": "plain"}
	return map[string]*Run{
		"running": runningRun(), "retry park": park, "waiting": waitingRun(), "done": doneRun(),
		"failed": failedRun(), "rich": richRun(), "nil containers": withNils,
		"int and float values": numbers, "unicode keys and strings": unicode,
	}
}

// assertCanonical checks that b is its own canonical JSON form.
func assertCanonical(t require.TestingT, b []byte) {
	doc, err := value.DecodeJSON(b)
	require.NoError(t, err)
	again, err := value.Canonical(doc)
	require.NoError(t, err)
	assert.Equal(t, string(again), string(b), "Encode writes canonical JSON")
}

func TestCodecRoundTrip(t *testing.T) {
	t.Parallel()
	for name, r := range codecFixtures() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, r.Validate())
			b, err := Encode(r)
			require.NoError(t, err)
			got, err := Decode(b)
			require.NoError(t, err)
			assert.Equal(t, r, got)
			again, err := Encode(got)
			require.NoError(t, err)
			assert.Equal(t, string(b), string(again))
			assertCanonical(t, b)
		})
	}
}

// A decoded run is its own: it keeps nothing of the bytes it was read
// from (a store reuses its row buffers) and shares no container with a
// run decoded from the same bytes.
func TestDecodedRunSharesNothingWithItsBytesOrAnotherRun(t *testing.T) {
	t.Parallel()
	for name, r := range codecFixtures() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, err := Encode(r)
			require.NoError(t, err)
			buf := bytes.Clone(b)
			got, err := Decode(buf)
			require.NoError(t, err)
			other, err := Decode(b)
			require.NoError(t, err)
			for i := range buf {
				buf[i] = 'x'
			}
			assert.Equal(t, r, got, "the run read from a buffer since overwritten")
			mutateDeep(got.Input)
			mutateDeep(got.Metadata)
			for _, c := range got.Channels {
				mutateDeep(c.Value)
			}
			for _, in := range got.Interrupts {
				mutateDeep(in.Schema)
				mutateDeep(in.Metadata)
			}
			for _, task := range got.ActiveTasks {
				mutateDeep(task.Snapshot)
				mutateDeep(task.Metadata)
			}
			for _, seen := range got.BarrierSeen {
				for i := range seen {
					seen[i] = "changed"
				}
			}
			assert.Equal(t, r, other, "a run decoded from the same bytes")
		})
	}
}

// mutateDeep changes every map and list of a portable value in place.
func mutateDeep(v any) {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return
		}
		for k, e := range x {
			mutateDeep(e)
			x[k] = "changed"
		}
		x["added"] = true
	case []any:
		for i, e := range x {
			mutateDeep(e)
			x[i] = "changed"
		}
	}
}

func TestEncodeIsDeterministic(t *testing.T) {
	t.Parallel()
	a, err := Encode(richRun())
	require.NoError(t, err)
	for range 20 {
		b, err := Encode(richRun()) // fresh maps, fresh iteration orders
		require.NoError(t, err)
		require.Equal(t, string(a), string(b))
	}
}

func TestEncodeDocumentShape(t *testing.T) {
	t.Parallel()
	b, err := Encode(failedRun())
	require.NoError(t, err)
	s := string(b)
	assert.True(t, strings.HasPrefix(s, `{"active_tasks":{},"changed_channels":["edge:start_fast","input:value"],`), s)
	assert.Contains(t, s, `"failure":{"code":"node_failed","details":{"errors":{"a":"always_fails"},"nodes":["a"]},"message":"node(s) a failed permanently","node_id":"a"}`)
	assert.Contains(t, s, `"finished_at":"2025-03-04T05:06:07.128456Z","format_version":1,`)
	assert.Contains(t, s, `"output":null,`)
	assert.Contains(t, s, `"started_at":"2025-03-04T05:06:07.123456Z","status":"failed","step":0,`)

	r := runningRun()
	r.StartedAt = r.StartedAt.Truncate(1e9)
	b, err = Encode(r)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"started_at":"2025-03-04T05:06:07.000000Z"`, "always six fractional digits")
}

func TestEncodeRefusesAnInvalidRun(t *testing.T) {
	t.Parallel()
	r := runningRun()
	r.Status = StatusCreated
	_, err := Encode(r)
	assert.ErrorIs(t, err, ErrInvalidRun)
}

// A value that is not portable fails even the encoders that skip
// validation; AppendValidated then leaves dst's bytes as they were.
func TestValidatedEncodersRefuseAValueThatIsNotPortable(t *testing.T) {
	t.Parallel()
	r := runningRun()
	r.Metadata = map[string]any{"callback": func() {}}
	_, err := EncodeValidated(r)
	assert.Error(t, err)
	dst, err := AppendValidated([]byte("kept"), r)
	assert.Error(t, err)
	assert.Equal(t, []byte("kept"), dst)
}

// A channel leaves out a nil barrier set and a nil value; documents that
// write them as null (the earlier form) read back as the same run.
func TestChannelsLeaveOutAbsentBarriersAndValues(t *testing.T) {
	t.Parallel()
	r := runningRun()
	r.Channels = ChannelsOf(map[string]Channel{
		"edge:e":  {Version: 1},
		"state:s": {Value: "v", Version: 2},
		"join:j":  {Version: 0},
		"join:k":  {Value: int64(1), Version: 3},
	})
	r.BarrierSeen = map[string][]string{"join:j": {}, "join:k": {"a"}}
	r.ChangedChannels = []string{"state:s"}
	b, err := Encode(r)
	require.NoError(t, err)
	doc := string(b)
	assert.Contains(t, doc, `"channels":{"edge:e":{"version":1},"join:j":{"barrier_seen":[],"version":0},`+
		`"join:k":{"barrier_seen":["a"],"value":1,"version":3},"state:s":{"value":"v","version":2}}`)

	earlier := strings.NewReplacer(
		`"edge:e":{"version":1}`, `"edge:e":{"barrier_seen":null,"value":null,"version":1}`,
		`"state:s":{"value":"v","version":2}`, `"state:s":{"barrier_seen":null,"value":"v","version":2}`,
	).Replace(doc)
	require.NotEqual(t, doc, earlier)
	got, err := Decode([]byte(earlier))
	require.NoError(t, err)
	assert.Equal(t, r, got)

	for name, bad := range map[string]string{
		"unknown channel key": strings.Replace(doc, `"edge:e":{"version":1}`, `"edge:e":{"extra":1,"version":1}`, 1),
		"missing version":     strings.Replace(doc, `"edge:e":{"version":1}`, `"edge:e":{}`, 1),
	} {
		_, err := Decode([]byte(bad))
		assert.ErrorIs(t, err, ErrCorruptRun, name)
	}
}

// A document need not list its channels in ID order (one written by hand,
// or kept by a store that orders keys its own way): they read back sorted,
// and a channel listed twice is corrupt.
func TestDecodeSortsChannelsAndRejectsRepeats(t *testing.T) {
	t.Parallel()
	r := runningRun()
	r.Channels = ChannelsOf(map[string]Channel{
		"edge:e":  {Version: 1},
		"input:i": {Value: "x", Version: 1},
		"state:s": {Value: "v", Version: 2},
	})
	r.BarrierSeen = nil
	r.ChangedChannels = []string{"state:s"}
	b, err := Encode(r)
	require.NoError(t, err)
	doc := string(b)
	inOrder := `"channels":{"edge:e":{"version":1},"input:i":{"value":"x","version":1},"state:s":{"value":"v","version":2}}`
	require.Contains(t, doc, inOrder)

	shuffled := strings.Replace(doc, inOrder,
		`"channels":{"state:s":{"value":"v","version":2},"edge:e":{"version":1},"input:i":{"value":"x","version":1}}`, 1)
	got, err := Decode([]byte(shuffled))
	require.NoError(t, err)
	assert.Equal(t, r, got)
	require.NoError(t, got.Validate())

	repeated := strings.Replace(doc, inOrder,
		`"channels":{"state:s":{"value":"v","version":2},"edge:e":{"version":1},"state:s":{"value":"w","version":3}}`, 1)
	_, err = Decode([]byte(repeated))
	assert.ErrorIs(t, err, ErrCorruptRun)
	assert.ErrorContains(t, err, `duplicate key "state:s"`)
}

func TestDecodeRejectsCorruptDocuments(t *testing.T) {
	t.Parallel()
	good, err := Encode(waitingRun())
	require.NoError(t, err)
	doc := string(good)
	replace := func(old, new string) string {
		require.Contains(t, doc, old)
		return strings.Replace(doc, old, new, 1)
	}
	cases := []struct {
		name, doc, want string
		invalid         bool
	}{
		{"not json", "{", "decode json", false},
		{"trailing data", doc + "{}", "unexpected data", false},
		{"not an object", "[]", "want an object", false},
		{"other format version", replace(`"format_version":1`, `"format_version":2`), "unsupported format version 2", false},
		{"other format version with other records", strings.NewReplacer(`"format_version":1`, `"format_version":2`,
			`"channels":{`, `"channels":{"edge:new":{"kind":"edge","version":1},`, `"pending_writes":[]`, `"pending_writes":[{}]`).Replace(doc),
			"format_version: unsupported format version 2", false},
		{"missing key", replace(`"event_seq":4,`, ``), `missing key "event_seq"`, false},
		{"unknown key", replace(`"event_seq":4,`, `"event_seq":4,"extra":1,`), `unknown key "extra"`, false},
		{"float counter", replace(`"step":2`, `"step":2.0`), "step: want an integer, got a float", false},
		{"string id", replace(`"id":"r"`, `"id":7`), "id: want a string", false},
		{"bad timestamp", replace(`"started_at":"2025-03-04T05:06:07.123456Z"`, `"started_at":"2025-03-04T05:06:07.123Z"`), `started_at: invalid timestamp`, false},
		{"non-UTC timestamp", replace(`"started_at":"2025-03-04T05:06:07.123456Z"`, `"started_at":"2025-03-04T05:06:07.123456+01:00"`), `started_at: invalid timestamp`, false},
		{"bad nested record", replace(`"resume_channel":"answer"`, `"resume_channel":null`), `interrupts["asked"].resume_channel: want a string`, false},
		{"set of non-strings", replace(`"pending_nodes":["gate","other"]`, `"pending_nodes":[1]`), "pending_nodes[0]: want a string", false},
		{"bad map entry", replace(`"edge:start_fast":{"value":true,"version":1}`, `"edge:start_fast":{"value":true,"version":"1"}`), `channels["edge:start_fast"].version: want an integer`, false},
		{"map entry not an object", replace(`"edge:start_fast":{"value":true,"version":1}`, `"edge:start_fast":[]`), `channels["edge:start_fast"]: want an object`, false},
		{"bad list element", replace(`"pending_writes":[]`, `"pending_writes":[{"attempt":1}]`), `pending_writes[0]: missing key "kind"`, false},
		{"broken invariant", replace(`"status":"waiting"`, `"status":"created"`), `status "created" is not a durable status`, true},
		{"reserved key in a value", replace(`"input":{"value":"hello"}`, `"input":{"$value":"hello"}`), "reserved", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Decode([]byte(tc.doc))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrCorruptRun)
			assert.Equal(t, tc.invalid, errors.Is(err, ErrInvalidRun))
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// A corrupt document whose container holds nothing but commas fails
// without first making room for as many records as it has commas (Len
// counts them ahead of reading): the memory a decode takes stays in
// proportion to the document, not to the records it claims. Not
// parallel: it measures the bytes the process allocates.
func TestDecodeOfAClaimedHugeContainerAllocatesInProportion(t *testing.T) {
	good, err := Encode(richRun())
	require.NoError(t, err)
	doc := string(good)
	commas := strings.Repeat(",", 1<<18)
	for _, k := range []string{"active_tasks", "channels", "interrupts", "timers", "pending_writes", "pending_nodes", "changed_channels"} {
		t.Run(k, func(t *testing.T) {
			i := strings.Index(doc, `"`+k+`":`)
			require.GreaterOrEqual(t, i, 0)
			open, closing := "{", "}"
			if strings.HasPrefix(k, "pending") || k == "changed_channels" {
				open, closing = "[", "]"
			}
			bad := []byte(doc[:i] + `"` + k + `":` + open + commas + closing + "}")
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := Decode(bad)
			runtime.ReadMemStats(&after)
			require.ErrorIs(t, err, ErrCorruptRun)
			allocated := after.TotalAlloc - before.TotalAlloc
			assert.Less(t, allocated, uint64(20*len(bad)), "%d bytes allocated decoding %d", allocated, len(bad))
		})
	}
}

func TestCodecRoundTripProperty(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		r := genRun(t)
		require.NoError(t, r.Validate())
		b, err := Encode(r)
		require.NoError(t, err)
		got, err := Decode(b)
		require.NoError(t, err)
		require.Equal(t, r, got)
		again, err := Encode(got)
		require.NoError(t, err)
		require.True(t, bytes.Equal(b, again), "re-encoding gives identical bytes")
		validated, err := EncodeValidated(r)
		require.NoError(t, err)
		require.True(t, bytes.Equal(b, validated), "a validated run encodes to the same bytes without the second check")
		prefix := []byte("kept:")
		appended, err := AppendValidated(slices.Clip(prefix), r)
		require.NoError(t, err)
		require.Equal(t, append([]byte("kept:"), b...), appended, "AppendValidated appends the same bytes after what dst held")
		assertCanonical(t, b)
	})
}

func TestCloneProperty(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		r := genRun(t)
		c := r.Clone()
		require.Equal(t, r, c)
		b1, err := Encode(r)
		require.NoError(t, err)
		b2, err := Encode(c)
		require.NoError(t, err)
		require.Equal(t, string(b1), string(b2))
	})
}

func FuzzDecode(f *testing.F) {
	for _, r := range codecFixtures() {
		b, err := Encode(r)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			require.ErrorIs(t, err, ErrCorruptRun)
			return
		}
		enc, err := Encode(r)
		require.NoError(t, err, "a decoded run encodes")
		again, err := Decode(enc)
		require.NoError(t, err)
		require.Equal(t, r, again)
		enc2, err := Encode(again)
		require.NoError(t, err)
		require.Equal(t, string(enc), string(enc2))
	})
}

// benchRun is a mid-sized run: 40 channels, 8 interrupts, a parked
// superstep of 4 tasks (30-key snapshots) and 3 pending writes.
func benchRun() *Run {
	r := runningRun()
	snapshot := map[string]any{}
	for i := range 30 {
		key := fmt.Sprintf("field_%02d", i)
		var v any
		switch i % 4 {
		case 0:
			v = fmt.Sprintf("some text value number %d", i)
		case 1:
			v = int64(i * 1000)
		case 2:
			v = float64(i) / 3
		default:
			v = []any{"a", int64(i), map[string]any{"nested": true, "n": 1.5}}
		}
		snapshot[key] = v
		r.Channels.Set(Channel{ID: "state:" + key, Value: v, Version: int64(i + 1)})
	}
	for i := range 10 {
		r.Channels.Set(Channel{ID: fmt.Sprintf("edge:e%02d", i), Value: i%2 == 0, Version: int64(i)})
	}
	r.Interrupts = map[string]Interrupt{}
	for i := range 8 {
		id := fmt.Sprintf("interrupt_%016x", i)
		r.Interrupts[id] = Interrupt{ID: id, NodeID: "gate", Status: InterruptResolved, ResumeChannel: "decision",
			Schema: map[string]any{"type": "string"}, CreatedAt: at(i), ResolvedAt: at(i + 1), Metadata: map[string]any{"i": int64(i)}}
	}
	for i := range 7 {
		node := fmt.Sprintf("node_%d", i)
		if i < 4 {
			task := parkedTask(r.ID, r.Step, node, 3, snapshot)
			r.ActiveTasks[task.TaskID] = task
			r.Timers[task.TaskID] = Timer{Kind: TimerRetry, FiresAt: at(100 + i)}
			continue
		}
		r.PendingWrites = append(r.PendingWrites, PendingWrite{TaskID: TaskID(r.ID, r.Step, node), NodeID: node, Attempt: 1,
			Kind: WriteUpdate, Value: map[string]any{"field_00": "new", "field_01": int64(7)}})
	}
	return r
}

func BenchmarkEncode(b *testing.B) {
	r := benchRun()
	enc, err := Encode(r)
	require.NoError(b, err)
	for name, encode := range map[string]func(*Run) ([]byte, error){"validating": Encode, "validated": EncodeValidated} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(enc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encode(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) { benchmarkDecode(b, benchRun()) }

func benchmarkDecode(b *testing.B, r *Run) {
	enc, err := Encode(r)
	require.NoError(b, err)
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCanonicalKeysSortByUTF16(t *testing.T) {
	t.Parallel()
	m := map[string]int{"\uffee": 0, "😀": 0, "b": 0, "a": 0, "é": 0, "ab": 0, "": 0}
	assert.Equal(t, []string{"", "a", "ab", "b", "é", "😀", "\uffee"}, canonicalKeys(m))
}

// Every key the writer emits is a document word, so decoding never
// allocates a string for one (a key missing from the table would only
// cost an allocation; this keeps the table in step with the writer).
func TestEveryDocumentKeyIsAHeldWord(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("codec.go")
	require.NoError(t, err)
	keys := regexp.MustCompile(`\.key\([a-z]+, "([a-z_]+)"\)`).FindAllSubmatch(src, -1)
	require.NotEmpty(t, keys)
	for _, k := range keys {
		word, ok := documentWords[string(k[1])]
		assert.True(t, ok, "key %q", k[1])
		assert.Equal(t, string(k[1]), word)
	}
}

// BenchmarkDecodeSmall decodes the document a one-step run is claimed with.
func BenchmarkDecodeSmall(b *testing.B) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &Run{ID: "run_0123456789abcdef", GraphID: "bench-one-step", GraphHash: "9417b435aa", Status: StatusRunning,
		Input: map[string]any{"in": "x"}, StartedAt: now, UpdatedAt: now, CheckpointSeq: 1, EventSeq: 4,
		Channels:        ChannelsOf(map[string]Channel{"input:in": {Value: "x", Version: 1}, "edge:e_n00": {Value: true, Version: 1}}),
		ChangedChannels: []string{"edge:e_n00", "input:in"}, Metadata: map[string]any{}}
	benchmarkDecode(b, r)
}

// A value as deep as value.MaxDepth is portable, so a run holding one in
// a channel or in a parked task's snapshot must read back: a stored
// document its own decoder refuses would strand the run.
func TestValuesAsDeepAsPortableRoundTrip(t *testing.T) {
	var deep any = "leaf"
	for range value.MaxDepth - 1 {
		deep = []any{deep}
	}
	require.NoError(t, value.Check(map[string]any{"k": deep}))
	r, _ := retryParkPair()
	require.NotEmpty(t, r.ActiveTasks)
	for i := range r.Channels {
		r.Channels[i].Value = deep
	}
	for id, task := range r.ActiveTasks {
		task.Snapshot = map[string]any{"k": deep}
		task.InputHash = InputHash(task.Snapshot)
		r.ActiveTasks[id] = task
	}
	b, err := Encode(r)
	require.NoError(t, err)
	back, err := Decode(b)
	require.NoError(t, err, "what Encode writes, Decode reads")
	again, err := Encode(back)
	require.NoError(t, err)
	assert.Equal(t, b, again)

	// One level more is not portable, and not a document either.
	levels := value.MaxDepth + 10 // beyond what any run document holds
	tooDeep := strings.Repeat("[", levels) + strings.Repeat("]", levels)
	_, err = Decode([]byte(`{"channels":` + tooDeep + `}`))
	assert.ErrorContains(t, err, "nesting deeper")
}
