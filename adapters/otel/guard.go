package otel

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/docketgo/docket/ports"
)

// This file holds the guards between caller-supplied strings and the SDK.
// Nothing reaches an exported span or metric except through them.

// attributePrefix namespaces every attribute this adapter writes.
const attributePrefix = "docket."

const (
	otherValue      = ports.ResultOther
	maxWordLen      = 64
	maxNameLen      = 128
	maxIdentityLen  = 256
	postgresPrefix  = "postgres."
	canonicalPrefix = "docket."
)

// isWord reports whether s has the shape of a bounded label value: a short
// lower-case word with underscores. Ids, UUIDs, hashes and tokens contain
// digits or dashes, so they never pass.
func isWord(s string) bool {
	if s == "" || len(s) > maxWordLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c == '_' && i > 0 {
			continue
		}
		return false
	}
	return true
}

// boundedValue returns s when it is a word, else "other", so a stray id in
// a bounded label costs one series, not one per id.
func boundedValue(s string) string {
	if isWord(s) {
		return s
	}
	return otherValue
}

// canonicalName maps an operation or fact name to its catalog spelling:
// the "docket." and "docket.postgres." prefixes are optional, aliases are
// resolved, and a name that is not dot-separated words becomes "other".
func canonicalName(name string) string {
	name = strings.TrimPrefix(name, canonicalPrefix)
	name = strings.TrimPrefix(name, postgresPrefix)
	if len(name) > maxNameLen {
		return otherValue
	}
	for segment := range strings.SplitSeq(name, ".") {
		if !isWord(segment) {
			return otherValue
		}
	}
	if target, ok := aliases[name]; ok {
		return target
	}
	return name
}

// lastValue returns the value of the last label with key, so a later label
// overrides an earlier one (an end result overrides a start label).
func lastValue(labels []ports.Label, key string) (string, bool) {
	for i := len(labels) - 1; i >= 0; i-- {
		if labels[i].Key == key {
			return labels[i].Value, true
		}
	}
	return "", false
}

// metricAttributes builds the attribute set of one metric point. It is the
// metric guard: a key is kept only when the instrument declares it AND it
// is on the bounded allow-list, and every value is forced into a word.
// Identities therefore never become metric attributes, whatever the caller
// passes. The constant attributes (Config.Attributes) are outside the
// catalog's namespace.
func metricAttributes(constant []attribute.KeyValue, labels []ports.Label, def *metricDef) attribute.Set {
	kvs := make([]attribute.KeyValue, 0, len(constant)+len(def.Labels)+1)
	kvs = append(kvs, constant...)
	for _, key := range def.Labels {
		if !metricLabelKeys[key] {
			continue
		}
		if v, ok := lastValue(labels, key); ok && v != "" {
			kvs = append(kvs, attribute.String(attributePrefix+key, boundedValue(v)))
		}
	}
	if def.Fixed != nil {
		kvs = append(kvs, attribute.String(attributePrefix+def.Fixed.Key, def.Fixed.Value))
	}
	return attribute.NewSet(kvs...)
}

// spanAttributes converts labels to span attributes: bounded keys (values
// forced into words), allow-listed identity keys (text, length-capped) and
// integer keys (dropped unless they parse). Every other key is dropped,
// which is what keeps "claim_token", "tenant" or "scope_key" out of traces.
// A repeated key keeps its last value.
func spanAttributes(labels []ports.Label) []attribute.KeyValue {
	kvs := make([]attribute.KeyValue, 0, len(labels))
	index := make(map[attribute.Key]int, len(labels))
	for _, l := range labels {
		kv, ok := spanAttribute(l)
		if !ok {
			continue
		}
		if i, seen := index[kv.Key]; seen {
			kvs[i] = kv
			continue
		}
		index[kv.Key] = len(kvs)
		kvs = append(kvs, kv)
	}
	return kvs
}

func spanAttribute(l ports.Label) (attribute.KeyValue, bool) {
	key := attributePrefix + l.Key
	switch {
	case l.Value == "":
		return attribute.KeyValue{}, false
	case metricLabelKeys[l.Key]:
		return attribute.String(key, boundedValue(l.Value)), true
	case spanTextKeys[l.Key]:
		return attribute.String(key, capIdentity(l.Value)), true
	case spanIntegerKeys[l.Key]:
		n, err := strconv.ParseInt(l.Value, 10, 64)
		if err != nil {
			return attribute.KeyValue{}, false
		}
		return attribute.Int64(key, n), true
	}
	return attribute.KeyValue{}, false
}

// capIdentity bounds an identity's length without splitting a rune.
func capIdentity(s string) string {
	if len(s) <= maxIdentityLen {
		return s
	}
	return strings.ToValidUTF8(s[:maxIdentityLen], "")
}

// measurementAttributes converts allow-listed measurements to numeric
// span attributes in key order; integral values become integers. Non-finite
// values are dropped.
func measurementAttributes(m ports.Measurements) []attribute.KeyValue {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if spanMeasurementKeys[k] && !math.IsNaN(v) && !math.IsInf(v, 0) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	kvs := make([]attribute.KeyValue, 0, len(keys))
	for _, k := range keys {
		kvs = append(kvs, numberAttribute(attributePrefix+k, m[k]))
	}
	return kvs
}

func numberAttribute(key string, v float64) attribute.KeyValue {
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		return attribute.Int64(key, int64(v))
	}
	return attribute.Float64(key, v)
}

// errorResult reports whether a span result means the operation failed
// (the span's status becomes Error): an error, a panic, a crash, or an
// observer that returned an error. Expected outcomes such as a stale
// fence or a skip are not errors.
func errorResult(result string) bool {
	switch result {
	case ports.ResultError, "exception", "crashed", "callback_error":
		return true
	}
	return false
}
