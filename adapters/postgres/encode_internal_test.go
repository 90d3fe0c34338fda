package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// claimedParamOIDs are the parameter types of sqlCommitClaimed with the
// fresh event CTEs, in order, as PostgreSQL describes the prepared
// statement.
var claimedParamOIDs = []uint32{
	pgtype.Int4ArrayOID, pgtype.TextArrayOID, pgtype.BoolArrayOID, pgtype.TextArrayOID, pgtype.TextArrayOID,
	pgtype.TextArrayOID, pgtype.TimestamptzArrayOID, pgtype.Int8ArrayOID, pgtype.UUIDArrayOID,
	pgtype.TextArrayOID, pgtype.Int4ArrayOID, pgtype.ByteaArrayOID, pgtype.Int8ArrayOID, pgtype.Int8ArrayOID,
	pgtype.TextArrayOID, pgtype.TimestamptzArrayOID, pgtype.TimestamptzArrayOID, pgtype.TextArrayOID,
	pgtype.TimestamptzArrayOID,
	pgtype.TimestamptzOID, pgtype.TextOID,
	pgtype.Int4ArrayOID, pgtype.Int8ArrayOID, pgtype.TextArrayOID, pgtype.Int4ArrayOID, pgtype.TextArrayOID,
	pgtype.TextArrayOID, pgtype.TextArrayOID, pgtype.ByteaArrayOID, pgtype.ByteaArrayOID, pgtype.TimestamptzArrayOID,
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
			{Seq: 16, Type: run.EventCheckpointCommitted, Step: 3, Metadata: map[string]any{"checkpoint_seq": 4}, Timestamp: now},
		}
		arrays, err := encodeEvents(r.ID, events)
		require.NoError(tb, err)
		token := tokenParam{uuid: pgtype.UUID{Bytes: [16]byte{byte(i), 1}, Valid: true}}
		row := commitRow{scope: ports.System(), moment: m, fence: m, token: token, sched: "retain",
			doc: document{state: state, step: 3}, events: events, arrays: arrays}
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
