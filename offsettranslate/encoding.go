package offsettranslate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// formatVersion is the first byte of every encoded batch. A reader meets a
// newer version only when a newer drctl wrote the map; it must then refuse
// to translate rather than guess.
const formatVersion = 1

var (
	// ErrCorrupt is wrapped by DecodeBatch's errors about malformed input.
	ErrCorrupt = errors.New("corrupt offset map batch")
	// ErrUnsupportedVersion is wrapped by DecodeBatch's error for a batch
	// written in a format this build does not know (a newer drctl wrote it).
	ErrUnsupportedVersion = errors.New("unsupported offset map batch version")
)

// EncodeBatch returns the compact binary form of b, version 1:
//
//	batch    = 0x01  shard:uvarint  committedAtMs:varint  n:uvarint  entry×n
//	entry    = topicRef:uvarint [len:uvarint name]  partition:uvarint
//	           runs:uvarint  run×runs  sourceNextGap:uvarint
//	run      = sourceGap:uvarint  targetGap:uvarint  count:uvarint
//
// Varints are encoding/binary's (zig-zag for the signed one). A topicRef of
// 0 introduces a new topic name and adds it to the batch's table; k > 0
// repeats the k-th name of the table. A run's gaps are counted from the end
// of the previous run of the entry (from 0 for the first run), and
// sourceNextGap from the end of the last run (from 0 when there is none), so
// a run of a fresh transaction costs its two absolute offsets and its count,
// and the runs after it a few bytes each.
//
// b must be valid (Batch.Validate). An invalid batch still encodes, to bytes
// that DecodeBatch rejects; it never decodes to a different batch.
func EncodeBatch(b Batch) []byte {
	buf := make([]byte, 0, 16+32*len(b.Entries))
	buf = append(buf, formatVersion)
	buf = binary.AppendUvarint(buf, uint64(int64(b.Shard)))
	buf = binary.AppendVarint(buf, b.CommittedAtMs)
	buf = binary.AppendUvarint(buf, uint64(len(b.Entries)))
	var topics map[string]uint64
	for _, e := range b.Entries {
		if ref, ok := topics[e.Topic]; ok {
			buf = binary.AppendUvarint(buf, ref)
		} else {
			if topics == nil {
				topics = map[string]uint64{}
			}
			topics[e.Topic] = uint64(len(topics) + 1)
			buf = binary.AppendUvarint(buf, 0)
			buf = binary.AppendUvarint(buf, uint64(len(e.Topic)))
			buf = append(buf, e.Topic...)
		}
		buf = binary.AppendUvarint(buf, uint64(int64(e.Partition)))
		buf = binary.AppendUvarint(buf, uint64(len(e.Runs)))
		// Differences wrap around for invalid input (a run going
		// backwards, a negative offset): the decoder sees a gap above
		// math.MaxInt64 and rejects it.
		var sourceEnd, targetEnd int64
		for _, r := range e.Runs {
			buf = binary.AppendUvarint(buf, uint64(r.Source)-uint64(sourceEnd))
			buf = binary.AppendUvarint(buf, uint64(r.Target)-uint64(targetEnd))
			buf = binary.AppendUvarint(buf, uint64(r.Count))
			sourceEnd, targetEnd = r.Source+r.Count, r.Target+r.Count
		}
		buf = binary.AppendUvarint(buf, uint64(e.SourceNext)-uint64(sourceEnd))
	}
	return buf
}

// DecodeBatch parses EncodeBatch's output. It returns only valid batches
// (Batch.Validate) and accepts only the canonical encoding, so that
// EncodeBatch(DecodeBatch(data)) == data whenever decoding succeeds.
// Malformed input (truncated, trailing bytes, overlong or overflowing
// varints, illegal topic names, runs out of order, counts beyond what the
// input can hold) is an error wrapping ErrCorrupt; an unknown version byte
// is an error wrapping ErrUnsupportedVersion. Decoding never allocates more
// than a small multiple of len(data).
func DecodeBatch(data []byte) (Batch, error) {
	if len(data) == 0 {
		return Batch{}, fmt.Errorf("%w: empty", ErrCorrupt)
	}
	if data[0] != formatVersion {
		return Batch{}, fmt.Errorf("%w: version %d (this build reads version %d; upgrade drctl)", ErrUnsupportedVersion, data[0], formatVersion)
	}
	d := decoder{buf: data, off: 1}
	var b Batch
	b.Shard = int32(d.bounded("shard", math.MaxInt32))
	b.CommittedAtMs = d.varint("commit time")
	// Each entry takes at least 4 bytes: topic reference, partition, run
	// count and source-next gap.
	n := d.count("entry count", 4)
	if n > 0 {
		b.Entries = make([]Entry, 0, n)
	}
	var (
		topics []string // the batch's topic table
		seen   map[string]bool
	)
	for i := 0; i < n && d.err == nil; i++ {
		var e Entry
		switch ref := d.uvarint("topic reference"); {
		case d.err != nil:
		case ref == 0:
			name := d.bytes("topic name", maxTopicLen)
			e.Topic = string(name)
			if d.err != nil {
				break
			}
			if err := validTopic(e.Topic); err != nil {
				d.fail(err.Error())
				break
			}
			if seen[e.Topic] {
				d.fail(fmt.Sprintf("topic %q introduced twice", e.Topic))
				break
			}
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[e.Topic] = true
			topics = append(topics, e.Topic)
		case ref > uint64(len(topics)):
			d.fail(fmt.Sprintf("topic reference %d beyond the %d topics seen", ref, len(topics)))
		default:
			e.Topic = topics[ref-1]
		}
		e.Partition = int32(d.bounded("partition", math.MaxInt32))
		runs := d.count("run count", 3)
		if runs > 0 {
			e.Runs = make([]Run, 0, runs)
		}
		var sourceEnd, targetEnd int64
		for j := 0; j < runs && d.err == nil; j++ {
			var r Run
			r.Source = sourceEnd + d.bounded("run source gap", math.MaxInt64-sourceEnd)
			r.Target = targetEnd + d.bounded("run target gap", math.MaxInt64-targetEnd)
			r.Count = d.bounded("run count", math.MaxInt64-max(r.Source, r.Target))
			if d.err == nil && r.Count == 0 {
				d.fail("empty run")
			}
			sourceEnd, targetEnd = r.SourceEnd(), r.TargetEnd()
			e.Runs = append(e.Runs, r)
		}
		e.SourceNext = sourceEnd + d.bounded("source-next gap", math.MaxInt64-sourceEnd)
		b.Entries = append(b.Entries, e)
	}
	if d.err == nil && d.off != len(data) {
		d.fail(fmt.Sprintf("%d trailing bytes", len(data)-d.off))
	}
	if d.err != nil {
		return Batch{}, d.err
	}
	return b, nil
}

// decoder reads varints from buf, remembering the first error; once it has
// failed every read returns zero.
type decoder struct {
	buf []byte
	off int
	err error
}

func (d *decoder) fail(msg string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at byte %d", ErrCorrupt, msg, d.off)
	}
}

// uvarint reads a minimal-length unsigned varint.
func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf[d.off:])
	switch {
	case n == 0:
		d.fail(what + ": truncated")
		return 0
	case n < 0:
		d.fail(what + ": varint overflows 64 bits")
		return 0
	case n > 1 && d.buf[d.off+n-1] == 0:
		d.fail(what + ": overlong varint")
		return 0
	}
	d.off += n
	return v
}

// varint reads a minimal-length zig-zag signed varint.
func (d *decoder) varint(what string) int64 {
	u := d.uvarint(what)
	return int64(u>>1) ^ -int64(u&1)
}

// bounded reads an unsigned varint that must not exceed limit.
func (d *decoder) bounded(what string, limit int64) int64 {
	v := d.uvarint(what)
	if d.err == nil && v > uint64(limit) {
		d.fail(fmt.Sprintf("%s %d exceeds %d", what, v, limit))
		return 0
	}
	return int64(v)
}

// count reads a number of items, each taking at least minSize bytes, and
// rejects counts the rest of the input cannot hold.
func (d *decoder) count(what string, minSize int) int {
	v := d.uvarint(what)
	if d.err == nil && v > uint64((len(d.buf)-d.off)/minSize) {
		d.fail(fmt.Sprintf("%s %d exceeds what %d remaining bytes can hold", what, v, len(d.buf)-d.off))
		return 0
	}
	return int(v)
}

// bytes reads a length-prefixed byte string of at most limit bytes.
func (d *decoder) bytes(what string, limit int) []byte {
	n := d.bounded(what+" length", int64(limit))
	if d.err != nil {
		return nil
	}
	if int64(len(d.buf)-d.off) < n {
		d.fail(what + ": truncated")
		return nil
	}
	b := d.buf[d.off : d.off+int(n)]
	d.off += int(n)
	return b
}
