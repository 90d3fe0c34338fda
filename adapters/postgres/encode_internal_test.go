package postgres

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// claimedParamOIDs are the parameter types of sqlCommitClaimed with the
// fresh event CTEs, in order, as PostgreSQL describes the prepared
// statement.
var claimedParamOIDs = []uint32{
	pgtype.Int4ArrayOID, pgtype.TextArrayOID, pgtype.BoolArrayOID, pgtype.TextArrayOID, pgtype.TextArrayOID,
	pgtype.TextArrayOID, pgtype.TimestamptzArrayOID, pgtype.Int8ArrayOID, pgtype.UUIDArrayOID,
	pgtype.TextArrayOID, pgtype.Int4ArrayOID, pgtype.Int8ArrayOID, pgtype.Int8ArrayOID,
	pgtype.TextArrayOID, pgtype.TimestamptzArrayOID, pgtype.TimestamptzArrayOID, pgtype.TextArrayOID,
	pgtype.TimestamptzArrayOID,
	pgtype.TimestamptzOID, pgtype.TextOID,
	pgtype.Int4ArrayOID, pgtype.Int8ArrayOID, pgtype.TextArrayOID, pgtype.Int4ArrayOID, pgtype.TextArrayOID,
	pgtype.TextArrayOID, pgtype.TextArrayOID, pgtype.ByteaArrayOID, pgtype.ByteaArrayOID, pgtype.TimestamptzArrayOID,
	pgtype.ByteaArrayOID,
}

// chainBatch is a batch of n claimed commits shaped like a 10-node chain's
// middle step: a ~1.8 KB document and four events.
func chainBatch(tb testing.TB, n int) []*pending[commitRow] {
	tb.Helper()
	now := time.Now().UTC().Truncate(time.Microsecond)
	state := make([]byte, 1800)
	batch := make([]*pending[commitRow], n)
	for i := range batch {
		r := &run.Run{ID: fmt.Sprintf("run_%016x", i), GraphID: "bench-chain10", GraphHash: "9417b435",
			Status: run.StatusRunning, Step: 3, CheckpointSeq: 4, EventSeq: 16, StartedAt: now, UpdatedAt: now}
		m := &run.Moment{Run: r, CheckpointType: run.CheckpointStepCommitted}
		events := []run.Event{
			{Seq: 13, Type: run.EventNodeCompleted, Step: 3, NodeID: "n02", Payload: map[string]any{"attempt": 1}, Timestamp: now},
			{Seq: 14, Type: run.EventChannelUpdated, Step: 3, ChannelID: "state:n02", Payload: map[string]any{"writers": []any{"n02"}}, Timestamp: now},
			{Seq: 15, Type: run.EventEdgeTriggered, Step: 3, Payload: map[string]any{"edge_id": "e_n03", "to": "n03"}, Timestamp: now},
			{Seq: 16, Type: run.EventCheckpointCommitted, Step: 3, Metadata: &run.CheckpointMetadata{Seq: 4}, Timestamp: now},
		}
		encoded, err := encodeEventDocs(r.ID, events)
		require.NoError(tb, err)
		token := tokenParam{uuid: pgtype.UUID{Bytes: [16]byte{byte(i), 1}, Valid: true}}
		row := commitRow{scope: ports.System(), moment: m, fence: m, token: token, sched: "retain",
			doc: document{state: state, step: 3}, events: events, encoded: encoded}
		batch[i] = newPending(context.Background(), r.ID, row)
	}
	return batch
}

// The batch's parameters encode for the statement's types without a
// database, the claim tokens as binary uuids that decode to themselves.
func TestClaimedArgsEncodeForTheStatementTypes(t *testing.T) {
	s := &Store{schema: "docket"}
	batch := chainBatch(t, 3)
	args := s.claimedArgs(batch)
	require.Len(t, args, len(claimedParamOIDs))
	var eqb pgx.ExtendedQueryBuilder
	m := pgtype.NewMap()
	require.NoError(t, eqb.Build(m, &pgconn.StatementDescription{ParamOIDs: claimedParamOIDs}, args))
	const tokens = 8 // $9
	require.Equal(t, int16(pgtype.BinaryFormatCode), eqb.ParamFormats[tokens])
	var decoded []pgtype.UUID
	require.NoError(t, m.Scan(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, eqb.ParamValues[tokens], &decoded))
	require.Len(t, decoded, len(batch))
	for i, c := range batch {
		require.Equal(t, c.args.token.uuid, decoded[i])
	}
}

// pgxBinary is what pgx's own extended-protocol encoding makes of args for
// parameters of the given types (nil for NULL).
func pgxBinary(t *testing.T, args []any, oids []uint32) [][]byte {
	t.Helper()
	var eqb pgx.ExtendedQueryBuilder
	require.NoError(t, eqb.Build(pgtype.NewMap(), &pgconn.StatementDescription{ParamOIDs: oids}, args))
	for i, f := range eqb.ParamFormats {
		// pgx sends text as text, whose binary form is the same bytes.
		if oids[i] != pgtype.TextOID {
			require.Equal(t, int16(pgtype.BinaryFormatCode), f, "parameter $%d", i+1)
		}
	}
	return eqb.ParamValues
}

// The batch's parameters on the wire are byte for byte what pgx would
// send, NULLs included.
func TestWireArgsAreWhatPgxWouldSend(t *testing.T) {
	s := &Store{schema: "docket"}
	for _, n := range []int{1, 3} {
		batch := chainBatch(t, n)
		batch[0].args.at = new(time.Time) // a NULL and a value in one array
		args := s.claimedArgs(batch)
		w, ok := encodeWire(args, claimedParamOIDs)
		require.True(t, ok)
		require.Equal(t, pgxBinary(t, args, claimedParamOIDs), w.values)
		w.release()
	}
}

func TestWireArgsMatchPgxOnGeneratedValues(t *testing.T) {
	text := rapid.StringMatching(`(?s).{0,12}`)
	optText := rapid.Custom(func(t *rapid.T) *string {
		if rapid.Bool().Draw(t, "null") {
			return nil
		}
		v := text.Draw(t, "text")
		return &v
	})
	moment := rapid.Custom(func(t *rapid.T) time.Time {
		return time.UnixMicro(rapid.Int64Range(-1e17, 1e17).Draw(t, "micros")).UTC()
	})
	optMoment := rapid.Custom(func(t *rapid.T) *time.Time {
		if rapid.Bool().Draw(t, "null") {
			return nil
		}
		v := moment.Draw(t, "time")
		return &v
	})
	optBytes := rapid.Custom(func(t *rapid.T) []byte {
		if rapid.Bool().Draw(t, "null") {
			return nil
		}
		return append([]byte{}, rapid.SliceOfN(rapid.Byte(), 0, 20).Draw(t, "bytes")...)
	})
	token := rapid.Custom(func(t *rapid.T) tokenParam {
		var u pgtype.UUID
		copy(u.Bytes[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "uuid"))
		u.Valid = rapid.Bool().Draw(t, "valid")
		return tokenParam{uuid: u}
	})
	rapid.Check(t, func(rt *rapid.T) {
		args := []any{
			text.Draw(rt, "scalar text"),
			optMoment.Draw(rt, "scalar time"),
			orNil(rt, rapid.SliceOfN(rapid.Int32(), 0, 5).Draw(rt, "int4s")),
			rapid.SliceOfN(rapid.Int64(), 0, 5).Draw(rt, "int8s"),
			rapid.SliceOfN(rapid.Bool(), 0, 5).Draw(rt, "bools"),
			orNil(rt, rapid.SliceOfN(text, 0, 5).Draw(rt, "texts")),
			pgtype.FlatArray[*string](rapid.SliceOfN(optText, 0, 5).Draw(rt, "optional texts")),
			pgtype.FlatArray[[]byte](rapid.SliceOfN(optBytes, 0, 5).Draw(rt, "byteas")),
			rapid.SliceOfN(moment, 0, 5).Draw(rt, "times"),
			pgtype.FlatArray[*time.Time](rapid.SliceOfN(optMoment, 0, 5).Draw(rt, "optional times")),
			tokenArray(rapid.SliceOfN(token, 0, 5).Draw(rt, "tokens")),
		}
		oids := []uint32{pgtype.TextOID, pgtype.TimestamptzOID, pgtype.Int4ArrayOID, pgtype.Int8ArrayOID,
			pgtype.BoolArrayOID, pgtype.TextArrayOID, pgtype.TextArrayOID, pgtype.ByteaArrayOID,
			pgtype.TimestamptzArrayOID, pgtype.TimestamptzArrayOID, pgtype.UUIDArrayOID}
		w, ok := encodeWire(args, oids)
		if !ok {
			rt.Fatal("encodeWire refused supported arguments")
		}
		defer w.release()
		if n := encodedSize(args); n < len(w.buf) {
			rt.Fatalf("encodedSize %d is below the %d bytes encoded: the buffer would regrow", n, len(w.buf))
		}
		var eqb pgx.ExtendedQueryBuilder
		if err := eqb.Build(pgtype.NewMap(), &pgconn.StatementDescription{ParamOIDs: oids}, args); err != nil {
			rt.Fatal(err)
		}
		for i := range args {
			if !bytes.Equal(eqb.ParamValues[i], w.values[i]) || (eqb.ParamValues[i] == nil) != (w.values[i] == nil) {
				rt.Fatalf("parameter %d (%T): pgx % x, wire % x", i+1, args[i], eqb.ParamValues[i], w.values[i])
			}
		}
	})
}

// orNil is v or, at random, the nil slice (NULL).
func orNil[T any](t *rapid.T, v []T) []T {
	if rapid.Bool().Draw(t, "nil slice") {
		return nil
	}
	return v
}

func TestWireArgsRefuseWhatTheyDoNotKnow(t *testing.T) {
	for name, c := range map[string]struct {
		args []any
		oids []uint32
	}{
		"another Go type":        {[]any{[]float64{1}}, []uint32{pgtype.Float8ArrayOID}},
		"another parameter type": {[]any{[]int32{1}}, []uint32{pgtype.Int8ArrayOID}},
		"text for a uuid":        {[]any{"x"}, []uint32{pgtype.UUIDOID}},
		"a count mismatch":       {[]any{"x"}, nil},
	} {
		_, ok := encodeWire(c.args, c.oids)
		require.False(t, ok, name)
	}
}

// BenchmarkEncodeWireBatch is BenchmarkEncodeClaimedBatch through
// encodeWire.
func BenchmarkEncodeWireBatch(b *testing.B) {
	s := &Store{schema: "docket"}
	batch := chainBatch(b, 16)
	b.ReportAllocs()
	for b.Loop() {
		w, ok := encodeWire(s.claimedArgs(batch), claimedParamOIDs)
		if !ok {
			b.Fatal("refused")
		}
		w.release()
	}
}

// BenchmarkEncodeClaimedBatch is the client-side cost of a claimed-commit
// batch of 16 chain steps: laying out the arrays and pgx encoding them.
func BenchmarkEncodeClaimedBatch(b *testing.B) {
	s := &Store{schema: "docket"}
	batch := chainBatch(b, 16)
	m := pgtype.NewMap()
	sd := &pgconn.StatementDescription{ParamOIDs: claimedParamOIDs}
	var eqb pgx.ExtendedQueryBuilder
	b.ReportAllocs()
	for b.Loop() {
		if err := eqb.Build(m, sd, s.claimedArgs(batch)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEventColumnsSharingAnAllocationStayApart appends past the room
// newEventArrays made (as add would for more events) and finds each column
// of the shared allocations unchanged by its neighbour's growth.
func TestEventColumnsSharingAnAllocationStayApart(t *testing.T) {
	t.Parallel()
	node, channel, task := "n", "c", "t"
	a := newEventArrays(2)
	a.nodeIDs = append(a.nodeIDs, &node, &node, &node)
	a.channelIDs = append(a.channelIDs, &channel, &channel)
	a.taskIDs = append(a.taskIDs, &task)
	a.payloads = append(a.payloads, []byte("p"), []byte("p"), []byte("p"))
	a.metadata = append(a.metadata, []byte("m"))
	require.Equal(t, pgtype.FlatArray[*string]{&node, &node, &node}, a.nodeIDs)
	require.Equal(t, pgtype.FlatArray[*string]{&channel, &channel}, a.channelIDs)
	require.Equal(t, pgtype.FlatArray[*string]{&task}, a.taskIDs)
	require.Equal(t, pgtype.FlatArray[[]byte]{[]byte("p"), []byte("p"), []byte("p")}, a.payloads)
	require.Equal(t, pgtype.FlatArray[[]byte]{[]byte("m")}, a.metadata)
	empty := newEventArrays(0)
	require.NotNil(t, empty.nodeIDs, "an empty column is an empty array, not NULL")
	require.NotNil(t, empty.payloads, "an empty column is an empty array, not NULL")
}

// BenchmarkEncodeEvents encodes the six events a one-step run's closing
// commit writes (its superstep and its completion).
func BenchmarkEncodeEvents(b *testing.B) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	empty := map[string]any{}
	meta := func(seq int64, ctype run.CheckpointType) *run.CheckpointMetadata {
		return &run.CheckpointMetadata{Seq: seq, Type: ctype, GraphStep: 1, WakeDisposition: run.DispositionContinue,
			NodeAttempts: []run.NodeAttempt{{TaskID: "t_1", NodeID: "n00", Attempted: 1, Outcome: run.OutcomeCompleted}}}
	}
	events := []run.Event{
		{Seq: 5, Type: run.EventNodeCompleted, NodeID: "n00", TaskID: "t_1", Payload: map[string]any{"attempt": int64(1)}, Timestamp: now},
		{Seq: 6, Type: run.EventChannelUpdated, ChannelID: "state:n00", Payload: map[string]any{"writers": []any{"n00"}}, Timestamp: now},
		{Seq: 7, Type: run.EventEdgeTriggered, ChannelID: "edge:e_finish", Payload: map[string]any{"edge_id": "e_finish", "to": "$finish"}, Timestamp: now},
		{Seq: 8, Type: run.EventCheckpointCommitted, Step: 1, Payload: empty, Metadata: meta(2, "step_committed"), Timestamp: now},
		{Seq: 9, Type: run.EventRunCompleted, Step: 1, Payload: map[string]any{"outputs": []any{"out"}}, Timestamp: now},
		{Seq: 10, Type: run.EventCheckpointCommitted, Step: 1, Payload: empty, Metadata: meta(3, "run_completed"), Timestamp: now},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeEvents("run_0123456789abcdef", events); err != nil {
			b.Fatal(err)
		}
	}
}

// TestExecutionSizeIsWhatPgxSends pins the size reserved for a statement's
// execution to the bytes pgx encodes for it: the reservation is exact, and
// it adds no bytes of its own to what goes out.
func TestExecutionSizeIsWhatPgxSends(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := &wireArgs{}
		for _, size := range rapid.SliceOf(rapid.IntRange(-1, 3000)).Draw(t, "params") {
			var v []byte
			if size >= 0 {
				v = bytes.Repeat([]byte{'x'}, size)
			}
			w.values = append(w.values, v)
			w.formats = append(w.formats, pgx.BinaryFormatCode)
		}
		name := rapid.StringMatching(`[a-z_0-9]{0,40}`).Draw(t, "name")

		var plain, reserved bytes.Buffer
		sendExecution(t, pgproto3.NewFrontend(bytes.NewReader(nil), &plain), name, w, false)
		sendExecution(t, pgproto3.NewFrontend(bytes.NewReader(nil), &reserved), name, w, true)
		require.Equal(t, plain.Len(), executionSize(name, w), "reserved size")
		require.True(t, bytes.Equal(plain.Bytes(), reserved.Bytes()), "a reservation changed the bytes sent")
	})
}

// TestALargeExecutionGrowsTheSendBufferOnce checks that a batch of large
// documents is written into one buffer of its final size, not copied into
// ever larger ones parameter by parameter: with the reservation, the
// allocations of an execution do not grow with its size.
func TestALargeExecutionGrowsTheSendBufferOnce(t *testing.T) {
	allocs := func(params int, reserve bool) float64 {
		w := &wireArgs{}
		for range params {
			w.values = append(w.values, bytes.Repeat([]byte{'x'}, 4000))
			w.formats = append(w.formats, pgx.BinaryFormatCode)
		}
		f := pgproto3.NewFrontend(bytes.NewReader(nil), discard{})
		return testing.AllocsPerRun(20, func() { sendExecution(t, f, "docket_commit", w, reserve) })
	}
	small, large := allocs(8, true), allocs(64, true)
	t.Logf("allocations per execution, reserved: %v for 8 parameters, %v for 64; not reserved: %v and %v",
		small, large, allocs(8, false), allocs(64, false))
	require.Equal(t, small, large, "allocations grew with the message")
	require.Less(t, large, allocs(64, false))
}

// sendExecution sends what ExecStatement sends to execute the statement
// name with w's parameters, after a reservation when reserve is set.
func sendExecution(t require.TestingT, f *pgproto3.Frontend, name string, w *wireArgs, reserve bool) {
	if reserve {
		reserveMessage(f, executionSize(name, w))
	}
	f.SendBind(&pgproto3.Bind{PreparedStatement: name, ParameterFormatCodes: w.formats, Parameters: w.values, ResultFormatCodes: binaryResults})
	f.SendExecute(&pgproto3.Execute{})
	f.SendSync(&pgproto3.Sync{})
	require.NoError(t, f.Flush())
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Each write of a batch encodes its events' payloads and metadata once
// (the documents and the slices of them), and the batch lays out every
// event column once for all its writes: a write does not build columns
// of its own that the batch then copies.
func TestABatchLaysOutItsEventColumnsOnce(t *testing.T) {
	// Not parallel: it counts the process's allocations.
	batch := chainBatch(t, 16)
	allocs := testing.AllocsPerRun(20, func() {
		for _, p := range batch {
			encoded, err := encodeEventDocs(p.runID, p.args.events)
			if err != nil {
				t.Fatal(err)
			}
			p.args.encoded = encoded
		}
		batchEvents(batch, func(c commitRow) encodedEvents { return c.encoded })
	})
	perWrite := allocs / float64(len(batch))
	t.Logf("%.0f allocations for a batch of %d writes (%.2f a write)", allocs, len(batch), perWrite)
	// Two a write, the batch's seven columns, and room for a pooled
	// scratch buffer taken anew (the race detector drops some).
	require.LessOrEqual(t, perWrite, 3.0)
}
