package verify

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"iter"
	"strings"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/topology"
)

// Kind is what a difference is. Its text forms appear in JSON output.
type Kind string

const (
	// Missing: a committed source record whose copy the standby does not
	// hold: the map sends it to a target offset where the standby has no
	// record (deleted, never written), or the map has no copy of it.
	Missing Kind = "missing"
	// Unexpected: a committed standby record that no source record maps
	// to (written by someone other than the mirror, or a map that lost a
	// transaction).
	Unexpected Kind = "unexpected"
	// ContentDiffers: the standby record the map names differs from the
	// source record in key, value, headers or timestamp.
	ContentDiffers Kind = "content-differs"
	// OrderDiffers: the standby holds the source record's content, but at
	// the target offset of another source record nearby: the records are
	// there, in another order.
	OrderDiffers Kind = "order-differs"
)

// Difference is one record that is not as the offset map says it should
// be. An offset of -1 means there is none on that side.
type Difference struct {
	Kind         Kind  `json:"kind"`
	SourceOffset int64 `json:"source_offset"`
	TargetOffset int64 `json:"target_offset"`
	// Fields lists what differs for ContentDiffers and OrderDiffers:
	// "key", "value", "headers", "timestamp", "provenance".
	Fields []string `json:"fields,omitempty"`
	// Why says it in a sentence.
	Why string `json:"why"`
}

// Records yields one partition's committed records in offset order.
type Records = iter.Seq2[kafkaread.Record, error]

// span is what compare needs to know of one partition.
type span struct {
	runs                 []offsettranslate.Run
	sourceFrom, sourceTo int64 // the source range [from, to) to compare
	targetFrom, targetTo int64 // the target range [from, to) to look in
	// mapTargetEnd is the target offset after the last mapped record:
	// unmapped standby records at or past it are tail records that a map
	// read a moment later may still claim.
	mapTargetEnd  int64
	sample        int // compareSampled: every sample-th mapped record; compare: unused
	details       int // differences kept in detail
	skipTimestamp bool
}

// tally is the outcome of comparing one partition.
type tally struct {
	SourceRecords int64 // committed source records in the range
	Compared      int64 // source records compared with their copy
	Identical     int64 // of which identical
	SourceGone    int64 // standby records whose source record the source no longer holds
	// SourceRead and TargetRead count the committed records read from
	// each side: what the comparison cost.
	SourceRead, TargetRead int64
	Counts                 map[Kind]int64
	Details                []Difference
	maxDetails             int // differences kept in Details (the others are counted)
	// ProvenSource and ProvenTarget end the stretch proven identical
	// from sourceFrom and targetFrom: before the first difference, or the
	// range's ends when there is none.
	ProvenSource, ProvenTarget int64
	// tail are unmapped standby records at or past the map's end, not
	// counted yet: settleTail decides.
	tail []int64
	// tailOverflow counts tail records past the ones kept in tail.
	tailOverflow int64

	firstDiff bool
	order     orderWindow
}

// maxTail bounds the tail records kept for a second look at the map.
const maxTail = 1024

func (t *tally) add(d Difference, provenS, provenT int64) {
	if t.Counts == nil {
		t.Counts = map[Kind]int64{}
	}
	t.Counts[d.Kind]++
	if !t.firstDiff {
		t.firstDiff = true
		t.ProvenSource, t.ProvenTarget = provenS, provenT
	}
	if len(t.Details) < t.maxDetails {
		t.Details = append(t.Details, d)
	}
}

// Differences is the number of differences found.
func (t *tally) Differences() int64 {
	var n int64
	for _, c := range t.Counts {
		n += c
	}
	return n
}

// runCursor finds offsets in a partition's runs, for offsets asked in
// increasing order (of source offsets, or of target offsets).
type runCursor struct {
	runs []offsettranslate.Run
	i    int
}

// target returns the target offset the map gives source offset s.
func (c *runCursor) target(s int64) (int64, bool) {
	for c.i < len(c.runs) && c.runs[c.i].SourceEnd() <= s {
		c.i++
	}
	if c.i < len(c.runs) && c.runs[c.i].Source <= s {
		r := c.runs[c.i]
		return r.Target + (s - r.Source), true
	}
	return -1, false
}

// source returns the source offset whose copy the map puts at target t.
func (c *runCursor) source(t int64) (int64, bool) {
	for c.i < len(c.runs) && c.runs[c.i].TargetEnd() <= t {
		c.i++
	}
	if c.i < len(c.runs) && c.runs[c.i].Target <= t {
		r := c.runs[c.i]
		return r.Source + (t - r.Target), true
	}
	return -1, false
}

// compare walks a partition's source records and its standby records side
// by side, each once and in offset order, holding only the current record
// of each: memory does not grow with the partition. It compares every
// record; compareSampled compares a sample. src must yield the
// committed records of [sourceFrom, sourceTo) and dst those of
// [targetFrom, targetTo); records outside are ignored.
func compare(sp span, src, dst Records) (*tally, error) {
	t := &tally{maxDetails: sp.details, ProvenSource: sp.sourceTo, ProvenTarget: sp.targetTo}
	nextSrc, stopSrc := iter.Pull2(src)
	defer stopSrc()
	nextDst, stopDst := iter.Pull2(dst)
	defer stopDst()
	var (
		sr, tr     kafkaread.Record
		sok, tok   = true, true
		sCur, tCur = runCursor{runs: sp.runs}, runCursor{runs: sp.runs}
		// provenS, provenT: just after the last record pair matched.
		provenS, provenT = sp.sourceFrom, sp.targetFrom
	)
	advSrc := func() error {
		for {
			r, err, ok := nextSrc()
			if !ok {
				sok = false
				return nil
			}
			if err != nil {
				return fmt.Errorf("source: %w", err)
			}
			t.SourceRead++
			if r.Offset < sp.sourceFrom {
				continue
			}
			if r.Offset >= sp.sourceTo {
				sok = false
				return nil
			}
			sr = r
			t.SourceRecords++
			return nil
		}
	}
	advDst := func() error {
		for {
			r, err, ok := nextDst()
			if !ok {
				tok = false
				return nil
			}
			if err != nil {
				return fmt.Errorf("standby: %w", err)
			}
			t.TargetRead++
			if r.Offset < sp.targetFrom {
				continue
			}
			if r.Offset >= sp.targetTo {
				tok = false
				return nil
			}
			tr = r
			return nil
		}
	}
	if err := advSrc(); err != nil {
		return t, err
	}
	if err := advDst(); err != nil {
		return t, err
	}
	for sok || tok {
		var expT, srcOfT int64
		var sMapped, tMapped bool
		if sok {
			expT, sMapped = sCur.target(sr.Offset)
		}
		if tok {
			srcOfT, tMapped = tCur.source(tr.Offset)
		}
		var err error
		switch {
		case sok && !sMapped:
			t.add(Difference{Kind: Missing, SourceOffset: sr.Offset, TargetOffset: -1,
				Why: "the offset map has no copy of this committed source record"}, sr.Offset, provenT)
			err = advSrc()
		case tok && !tMapped:
			switch {
			case tr.Offset >= sp.mapTargetEnd:
				if len(t.tail) < maxTail {
					t.tail = append(t.tail, tr.Offset)
				} else {
					t.tailOverflow++
				}
			default:
				next := sp.sourceTo
				if sok {
					next = sr.Offset
				}
				t.add(unexpected(tr.Offset), min(provenS, next), tr.Offset)
			}
			err = advDst()
		case sok && tok && expT == tr.Offset:
			t.Compared++
			if fields := differs(sr, tr, sp.skipTimestamp); len(fields) == 0 {
				t.Identical++
			} else {
				d := Difference{Kind: ContentDiffers, SourceOffset: sr.Offset, TargetOffset: tr.Offset, Fields: fields,
					Why: "the standby record the map names differs in " + joinFields(fields)}
				if t.order.note(sr, tr, sp.skipTimestamp, len(t.Details), t) == OrderDiffers {
					d.Kind, d.Why = OrderDiffers, orderWhy
				}
				t.add(d, sr.Offset, tr.Offset)
			}
			provenS, provenT = sr.Offset+1, tr.Offset+1
			if err = advSrc(); err == nil {
				err = advDst()
			}
		case sok && (!tok || expT < tr.Offset):
			t.add(Difference{Kind: Missing, SourceOffset: sr.Offset, TargetOffset: expT,
				Why: fmt.Sprintf("the map puts its copy at target offset %d, where the standby holds no committed record", expT)}, sr.Offset, expT)
			err = advSrc()
		default:
			// The standby record copies source offset srcOfT, before
			// the source's current record: the source no longer holds
			// it (compacted, or deleted past its log start).
			_ = srcOfT
			t.SourceGone++
			err = advDst()
		}
		if err != nil {
			return t, err
		}
	}
	return t, nil
}

func unexpected(target int64) Difference {
	return Difference{Kind: Unexpected, SourceOffset: -1, TargetOffset: target,
		Why: "no source record maps to this committed standby record"}
}

// settleTail counts the tail records that runs (a map read after the
// comparison) still does not claim as Unexpected. A tail record the map
// does claim is a copy committed after the map was first read: it lies
// past the range compared, which then ends before it.
func (t *tally) settleTail(runs []offsettranslate.Run, sourceTo int64) {
	c := runCursor{runs: runs}
	for _, off := range t.tail {
		if _, ok := c.source(off); ok {
			if !t.firstDiff && off < t.ProvenTarget {
				t.ProvenTarget = off
			}
			continue
		}
		t.add(unexpected(off), min(sourceTo, t.ProvenSource), min(off, t.ProvenTarget))
	}
	if t.tailOverflow > 0 {
		if t.Counts == nil {
			t.Counts = map[Kind]int64{}
		}
		t.Counts[Unexpected] += t.tailOverflow
	}
	t.tail, t.tailOverflow = nil, 0
}

// differs lists the fields in which the standby record b differs from the
// source record a. drctl's own provenance headers are not content: they
// are left out of the headers compared, and the source-offset header,
// where the standby record has one, must name a's offset.
func differs(a, b kafkaread.Record, skipTimestamp bool) []string {
	var fields []string
	if !sameBytes(a.Key, b.Key) {
		fields = append(fields, "key")
	}
	if !sameBytes(a.Value, b.Value) {
		fields = append(fields, "value")
	}
	if !sameHeaders(a, b) {
		fields = append(fields, "headers")
	}
	if !skipTimestamp && a.Timestamp.UnixMilli() != b.Timestamp.UnixMilli() {
		fields = append(fields, "timestamp")
	}
	for _, h := range b.Headers {
		if h != nil && string(h.Key) == topology.HeaderSourceOffset {
			if len(h.Value) != 8 || int64(binary.BigEndian.Uint64(h.Value)) != a.Offset {
				fields = append(fields, "provenance")
			}
		}
	}
	return fields
}

// sameBytes tells null from empty: Kafka keeps them apart.
func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func isProvenance(key []byte) bool {
	k := string(key)
	return k == topology.HeaderOrigin || k == topology.HeaderSourceOffset
}

// contentHeaders yields r's headers other than drctl's provenance.
func contentHeaders(r kafkaread.Record) iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		for _, h := range r.Headers {
			if h == nil || isProvenance(h.Key) {
				continue
			}
			if !yield(h.Key, h.Value) {
				return
			}
		}
	}
}

func sameHeaders(a, b kafkaread.Record) bool {
	nextB, stop := iter.Pull2(contentHeaders(b))
	defer stop()
	for ka, va := range contentHeaders(a) {
		kb, vb, ok := nextB()
		if !ok || !bytes.Equal(ka, kb) || !sameBytes(va, vb) {
			return false
		}
	}
	_, _, more := nextB()
	return !more
}

func joinFields(fields []string) string {
	switch len(fields) {
	case 0:
		return ""
	case 1:
		return fields[0]
	}
	return strings.Join(fields[:len(fields)-1], ", ") + " and " + fields[len(fields)-1]
}

// digest identifies a record's content as compared: key, value, content
// headers and (unless skipped) timestamp.
func digest(r kafkaread.Record, skipTimestamp bool) [32]byte {
	h := sha256.New()
	field := func(b []byte) {
		var n [9]byte
		if b == nil {
			n[0] = 1
		}
		binary.BigEndian.PutUint64(n[1:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field(r.Key)
	field(r.Value)
	for k, v := range contentHeaders(r) {
		field(k)
		field(v)
	}
	if !skipTimestamp {
		var ts [8]byte
		binary.BigEndian.PutUint64(ts[:], uint64(r.Timestamp.UnixMilli()))
		h.Write(ts[:])
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// orderWindow remembers the content of the last mismatches of a
// partition, so that a standby record holding another nearby source
// record's content is reported as an order difference rather than two
// content differences. It holds at most orderWindowSize mismatches.
type orderWindow struct {
	next         int
	byID         map[int]*mismatch
	bySrc, byDst map[[32]byte]int // content digest -> mismatch id
}

type mismatch struct {
	src, dst [32]byte
	detail   int // index in the tally's details, -1 when not kept
	order    bool
}

const orderWindowSize = 4096

const orderWhy = "the standby holds a nearby source record's content here, and this one's elsewhere: the order differs"

// note records the mismatch of source record a and standby record b and
// returns its kind; an earlier mismatch it pairs with becomes an order
// difference in t's counts and details.
func (w *orderWindow) note(a, b kafkaread.Record, skipTimestamp bool, detail int, t *tally) Kind {
	if w.byID == nil {
		w.byID, w.bySrc, w.byDst = map[int]*mismatch{}, map[[32]byte]int{}, map[[32]byte]int{}
	}
	if old, ok := w.byID[w.next-orderWindowSize]; ok {
		id := w.next - orderWindowSize
		if w.bySrc[old.src] == id {
			delete(w.bySrc, old.src)
		}
		if w.byDst[old.dst] == id {
			delete(w.byDst, old.dst)
		}
		delete(w.byID, id)
	}
	m := &mismatch{src: digest(a, skipTimestamp), dst: digest(b, skipTimestamp), detail: -1}
	if detail < t.maxDetails {
		m.detail = detail
	}
	kind := ContentDiffers
	for _, j := range []struct {
		idx map[[32]byte]int
		key [32]byte
	}{{w.byDst, m.src}, {w.bySrc, m.dst}} {
		id, ok := j.idx[j.key]
		if !ok {
			continue
		}
		kind, m.order = OrderDiffers, true
		if old := w.byID[id]; old != nil && !old.order {
			old.order = true
			t.Counts[ContentDiffers]--
			t.Counts[OrderDiffers]++
			if old.detail >= 0 && old.detail < len(t.Details) {
				t.Details[old.detail].Kind, t.Details[old.detail].Why = OrderDiffers, orderWhy
			}
		}
	}
	id := w.next
	w.next++
	w.byID[id] = m
	w.bySrc[m.src], w.byDst[m.dst] = id, id
	return kind
}
