package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The batched commit is the engine's hottest statement, and pgx spends a
// tenth of the engine's CPU on its parameters: every array element goes
// through an encode plan behind an interface, and the per-connection
// parameter buffer shrinks back to 256 bytes after each query, so every
// batch regrows it by doubling (a quarter of the bytes the engine
// allocates in a chain drain). wireArgs encodes the same arguments in
// PostgreSQL's binary format into one pooled buffer, and queryWire sends
// them through pgconn to a statement prepared under a name of its own.
// Anything it does not know (another argument type, a parameter type the
// server did not infer as expected, a pool that does not cache
// statements, for example one set up for a transaction pooler) goes the
// ordinary pgx way.

// y2kMicros is 2000-01-01 UTC, PostgreSQL's timestamp epoch, in Unix
// microseconds.
const y2kMicros = 946684800 * 1_000_000

// wireArgs is one statement's parameters in binary format: value i is
// buf[start[i]:end[i]], or NULL when start[i] < 0.
type wireArgs struct {
	buf        []byte
	start, end []int
	values     [][]byte
	formats    []int16
}

var wireArgsPool = sync.Pool{New: func() any { return new(wireArgs) }}

// encodeWire encodes args for parameters of the given types; false when an
// argument's Go type does not match its parameter type as wireArgs knows
// them (the caller then binds args through pgx).
func encodeWire(args []any, oids []uint32) (*wireArgs, bool) {
	if len(args) != len(oids) {
		return nil, false
	}
	w := wireArgsPool.Get().(*wireArgs)
	w.buf, w.start, w.end = slices.Grow(w.buf[:0], encodedSize(args)), w.start[:0], w.end[:0]
	for i, a := range args {
		if !w.add(a, oids[i]) {
			w.release()
			return nil, false
		}
	}
	w.values, w.formats = w.values[:0], w.formats[:0]
	for i := range w.start {
		var v []byte
		if w.start[i] >= 0 {
			v = w.buf[w.start[i]:w.end[i]:w.end[i]]
		}
		w.values = append(w.values, v)
		w.formats = append(w.formats, pgx.BinaryFormatCode)
	}
	return w, true
}

// release returns w to the pool; its values must no longer be in use.
func (w *wireArgs) release() {
	if cap(w.buf) > 1<<20 {
		w.buf = nil // one huge batch should not pin its buffer forever
	}
	clear(w.values)
	wireArgsPool.Put(w)
}

// add appends one parameter value. A nil slice is NULL, as pgx binds it.
func (w *wireArgs) add(a any, oid uint32) bool {
	switch v := a.(type) {
	case string:
		if oid != pgtype.TextOID {
			return false
		}
		w.value(append(w.buf, v...))
	case *time.Time:
		switch {
		case oid != pgtype.TimestamptzOID:
			return false
		case v == nil:
			w.null()
		default:
			w.value(appendTimestamptz(w.buf, *v))
		}
	case []int32:
		return addArray(w, oid, pgtype.Int4ArrayOID, pgtype.Int4OID, v, nil, appendInt4)
	case []int64:
		return addArray(w, oid, pgtype.Int8ArrayOID, pgtype.Int8OID, v, nil, appendInt8)
	case []bool:
		return addArray(w, oid, pgtype.BoolArrayOID, pgtype.BoolOID, v, nil, appendBool)
	case []string:
		return addArray(w, oid, pgtype.TextArrayOID, pgtype.TextOID, v, nil, appendText)
	case pgtype.FlatArray[*string]:
		return addArray(w, oid, pgtype.TextArrayOID, pgtype.TextOID, v, isNil[string], func(b []byte, x *string) []byte { return appendText(b, *x) })
	case pgtype.FlatArray[[]byte]:
		return addArray(w, oid, pgtype.ByteaArrayOID, pgtype.ByteaOID, v, func(x []byte) bool { return x == nil }, appendText[[]byte])
	case []time.Time:
		return addArray(w, oid, pgtype.TimestamptzArrayOID, pgtype.TimestamptzOID, v, nil, appendTimestamptzElement)
	case pgtype.FlatArray[*time.Time]:
		return addArray(w, oid, pgtype.TimestamptzArrayOID, pgtype.TimestamptzOID, v, isNil[time.Time],
			func(b []byte, x *time.Time) []byte { return appendTimestamptzElement(b, *x) })
	case tokenArray:
		return addArray(w, oid, pgtype.UUIDArrayOID, pgtype.UUIDOID, v, func(t tokenParam) bool { return !t.uuid.Valid }, appendUUID)
	default:
		return false
	}
	return true
}

// encodedSize is about how many bytes args take encoded: their text and
// bytes in full (documents, payloads) plus a word per element for the
// rest. The buffer is grown to it once, so a batch of large run documents
// is not regrown by doubling, copy after copy.
func encodedSize(args []any) int {
	n := 0
	for _, a := range args {
		switch v := a.(type) {
		case string:
			n += len(v)
		case []string:
			for _, x := range v {
				n += 4 + len(x)
			}
		case pgtype.FlatArray[*string]:
			for _, x := range v {
				if x != nil {
					n += 4 + len(*x)
				}
			}
		case pgtype.FlatArray[[]byte]:
			for _, x := range v {
				n += 4 + len(x)
			}
		case []int32:
			n += 8 * len(v)
		case []int64:
			n += 12 * len(v)
		case []time.Time:
			n += 12 * len(v)
		case pgtype.FlatArray[*time.Time]:
			n += 12 * len(v)
		case []bool:
			n += 5 * len(v)
		case tokenArray:
			n += 20 * len(v)
		}
		n += 24 // an array header, a scalar
	}
	return n
}

// value records buf, whose tail since the last value is the next one.
func (w *wireArgs) value(buf []byte) {
	begin := len(w.buf)
	w.buf = buf
	w.start, w.end = append(w.start, begin), append(w.end, len(buf))
}

func (w *wireArgs) null() {
	w.start, w.end = append(w.start, -1), append(w.end, -1)
}

// addArray appends v as a one-dimensional array parameter of type want
// whose elements are elemOID values, each written by elem (with its
// length prefix) or NULL where null says so; a nil v is NULL.
func addArray[T any](w *wireArgs, oid, want, elemOID uint32, v []T, null func(T) bool, elem func([]byte, T) []byte) bool {
	switch {
	case oid != want:
		return false
	case v == nil:
		w.null()
		return true
	}
	buf := arrayHeader(w.buf, len(v), null != nil && slices.ContainsFunc(v, null), elemOID)
	for _, x := range v {
		if null != nil && null(x) {
			buf = binary.BigEndian.AppendUint32(buf, 0xFFFFFFFF) // length -1
			continue
		}
		buf = elem(buf, x)
	}
	w.value(buf)
	return true
}

// Array elements, each with its length prefix.

func appendInt4(b []byte, x int32) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(b, 4), uint32(x))
}

func appendInt8(b []byte, x int64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(b, 8), uint64(x))
}

func appendBool(b []byte, x bool) []byte {
	v := byte(0)
	if x {
		v = 1
	}
	return append(binary.BigEndian.AppendUint32(b, 1), v)
}

func appendText[S string | []byte](b []byte, x S) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(x))), x...)
}

func appendTimestamptzElement(b []byte, t time.Time) []byte {
	return appendTimestamptz(binary.BigEndian.AppendUint32(b, 8), t)
}

func appendUUID(b []byte, t tokenParam) []byte {
	return append(binary.BigEndian.AppendUint32(b, 16), t.uuid.Bytes[:]...)
}

func isNil[T any](p *T) bool { return p == nil }

// arrayHeader starts a one-dimensional array of n elements, as pgx does
// (an empty array too has one dimension, of length 0).
func arrayHeader(buf []byte, n int, nulls bool, elem uint32) []byte {
	flag := uint32(0)
	if nulls {
		flag = 1
	}
	buf = binary.BigEndian.AppendUint32(buf, 1) // dimensions
	buf = binary.BigEndian.AppendUint32(buf, flag)
	buf = binary.BigEndian.AppendUint32(buf, elem)
	buf = binary.BigEndian.AppendUint32(buf, uint32(n))
	return binary.BigEndian.AppendUint32(buf, 1) // lower bound
}

func appendTimestamptz(buf []byte, t time.Time) []byte {
	micros := t.Unix()*1_000_000 + int64(t.Nanosecond())/1000
	return binary.BigEndian.AppendUint64(buf, uint64(micros-y2kMicros))
}

// binaryResults asks for every result column in binary.
var binaryResults = []int16{pgx.BinaryFormatCode}

// wireConfig is what queryWire reads of the pool's connection settings,
// read once: pgx copies a connection's whole configuration on every
// Config call.
type wireConfig struct {
	// enabled: the pool caches prepared statements, so queryWire may
	// prepare its own (not under an exec or simple-protocol mode, as
	// behind a transaction-pooling proxy).
	enabled bool
	tracer  pgx.QueryTracer
}

func newWireConfig(pool *pgxpool.Pool) wireConfig {
	cfg := pool.Config().ConnConfig
	return wireConfig{enabled: cfg.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement, tracer: cfg.Tracer}
}

// errWireUnsupported says queryWire could not send the statement itself.
var errWireUnsupported = errors.New("docket postgres: statement not sent through pgconn")

// wireName is the prepared statement name of sql: its own per text, so
// two stores on one pool (two schemas) never collide. A store sends a
// handful of texts over and over, so it keeps their names.
func (s *Store) wireName(sql string) string {
	if name, ok := s.wireNames.Load(sql); ok {
		return name.(string)
	}
	sum := sha256.Sum256([]byte(sql))
	name := "docket_wire_" + hex.EncodeToString(sum[:12])
	s.wireNames.Store(sql, name)
	return name
}

// queryWire runs sql with args on one pooled connection, binary
// parameters and results, and hands each result row's values to row.
// errWireUnsupported means nothing was sent: the caller runs the query
// through pgx instead.
func (s *Store) queryWire(ctx context.Context, sql string, args []any, row func(values [][]byte) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if !s.wire.enabled {
		return errWireUnsupported
	}
	c := conn.Conn()
	sd, err := c.Prepare(ctx, s.wireName(sql), sql) // a map lookup after the first call
	if err != nil {
		return err
	}
	w, ok := encodeWire(args, sd.ParamOIDs)
	if !ok {
		return errWireUnsupported
	}
	defer w.release()
	tracer := s.wire.tracer
	if tracer != nil {
		ctx = tracer.TraceQueryStart(ctx, c, pgx.TraceQueryStartData{SQL: sql, Args: args})
	}
	// The description's fields are known from the preparation, so no
	// Describe goes with every execution.
	pc := c.PgConn()
	if ctx.Err() == nil {
		// A cancelled execution sends nothing, and pgx would keep the
		// reserved room on the connection until its next large message.
		reserveMessage(pc.Frontend(), executionSize(sd.Name, w))
	}
	rr := pc.ExecStatement(ctx, sd, w.values, w.formats, binaryResults)
	var rowErr error
	for rr.NextRow() {
		if rowErr == nil {
			rowErr = row(rr.Values())
		}
	}
	tag, err := rr.Close()
	if err == nil {
		err = rowErr
	}
	if tracer != nil {
		tracer.TraceQueryEnd(ctx, c, pgx.TraceQueryEndData{CommandTag: tag, Err: err})
	}
	return err
}

// executionSize is the length of the Bind, Execute and Sync messages that
// execute the statement named name with w's parameters.
func executionSize(name string, w *wireArgs) int {
	const (
		header      = 5                      // type byte and length
		bindFixed   = header + 1 + 1 + 2 + 2 // empty portal, name terminator, counts
		resultCodes = 2 + 2                  // one binary result format
		execute     = header + 1 + 4         // empty portal, row limit
		sync        = header
	)
	n := bindFixed + len(name) + 2*len(w.formats) + resultCodes + execute + sync
	for _, v := range w.values {
		n += 4 + len(v)
	}
	return n
}

// reserveMessage makes room for n more bytes in f's send buffer. pgx
// starts every statement in a buffer of 1 KB and grows it parameter by
// parameter, so a batch of run documents was copied into ever larger
// buffers; one growth to the final size replaces that series.
func reserveMessage(f *pgproto3.Frontend, n int) {
	if n <= minMessageBuffer {
		return
	}
	f.Send(reservation(n))
}

// minMessageBuffer is what pgx's send buffer holds after every flush.
const minMessageBuffer = 1024

// reservation is a frontend message of no bytes that grows the buffer it
// is encoded into by its own value (a pgproto3 trace, if one is on, lists
// it as an unknown message of length 0).
type reservation int

func (reservation) Frontend() {}
func (reservation) Decode([]byte) error {
	return errors.New("docket postgres: a reservation is never received")
}
func (r reservation) Encode(dst []byte) ([]byte, error) { return slices.Grow(dst, int(r)), nil }

// wireInt decodes a binary int2, int4 or int8 result value.
func wireInt(v []byte) (int64, error) {
	switch len(v) {
	case 2:
		return int64(int16(binary.BigEndian.Uint16(v))), nil
	case 4:
		return int64(int32(binary.BigEndian.Uint32(v))), nil
	case 8:
		return int64(binary.BigEndian.Uint64(v)), nil
	}
	return 0, errors.New("docket postgres: unexpected integer result")
}
