package verify

import (
	"fmt"
	"iter"
	"sync"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/offsettranslate"
)

// A sampled run reads only what it compares. The sampled records are
// chosen from the offset map, without reading either side: every Nth
// record the map holds in the range, counted from the range's first.
// Each is fetched at its own offset on each side; a fetch returns at
// least the whole batch holding the offset (Kafka cannot serve less), and
// the next sampled record is taken from the batches already fetched when
// it lies in them. So a sample of N reads about one batch in
// max(1, N / records per batch) on each side, one fetch per batch read.

// sample is one sampled record: its source offset and the target offset
// the map gives its copy.
type sample struct{ source, target int64 }

// samples yields every n-th record that runs map in the source range
// [from, to), counted from the first mapped record of the range, and
// returns with it the count of mapped records in the range.
func samples(runs []offsettranslate.Run, from, to int64, n int) (iter.Seq[sample], int64) {
	n = max(n, 1)
	var mapped int64
	for _, r := range runs {
		if lo, hi := max(r.Source, from), min(r.SourceEnd(), to); lo < hi {
			mapped += hi - lo
		}
	}
	return func(yield func(sample) bool) {
		var idx int64 // mapped records of the range before the current run's part
		step := int64(n)
		for _, r := range runs {
			lo, hi := max(r.Source, from), min(r.SourceEnd(), to)
			if lo >= hi {
				continue
			}
			for s := lo + (step-idx%step)%step; s < hi; s += step {
				if !yield(sample{source: s, target: r.Target + (s - r.Source)}) {
					return
				}
			}
			idx += hi - lo
		}
	}, mapped
}

// lookup finds the committed records of one partition at chosen offsets,
// asked in increasing order.
type lookup interface {
	// at returns the committed record at off; ok is false when the
	// partition holds none there (deleted, compacted, aborted, a
	// transaction marker, or past its end).
	at(off int64) (r kafkaread.Record, ok bool, err error)
	// decoded counts the committed records read so far, those compared
	// and those that came with them.
	decoded() int64
}

// compareSampled compares the sampled records of sp, looking each up on
// both sides. It never looks for Unexpected records: what lies between
// the samples is not read.
func compareSampled(sp span, source, standby lookup) (*tally, error) {
	t := &tally{maxDetails: sp.details, ProvenSource: sp.sourceTo, ProvenTarget: sp.targetTo}
	defer func() { t.SourceRead, t.TargetRead = source.decoded(), standby.decoded() }()
	all, mapped := samples(sp.runs, sp.sourceFrom, sp.sourceTo, sp.sample)
	t.SourceRecords = mapped
	for s := range all {
		// The two look-ups go out together: each may be a fetch.
		inReach := s.target < sp.targetTo
		var (
			tr   kafkaread.Record
			tok  bool
			terr error
			wg   sync.WaitGroup
		)
		if inReach {
			wg.Go(func() { tr, tok, terr = standby.at(s.target) })
		}
		sr, sok, serr := source.at(s.source)
		wg.Wait()
		if serr != nil {
			return t, fmt.Errorf("source: %w", serr)
		}
		if terr != nil {
			return t, fmt.Errorf("standby: %w", terr)
		}
		switch {
		case !sok:
			// The map says it was copied; the source no longer holds it
			// (compacted, or removed from its head since).
			t.SourceGone++
		case !inReach || !tok:
			t.add(Difference{Kind: Missing, SourceOffset: s.source, TargetOffset: s.target,
				Why: fmt.Sprintf("the map puts its copy at target offset %d, where the standby holds no committed record", s.target)}, s.source, s.target)
		default:
			t.Compared++
			if fields := differs(sr, tr, sp.skipTimestamp); len(fields) == 0 {
				t.Identical++
			} else {
				t.add(Difference{Kind: ContentDiffers, SourceOffset: s.source, TargetOffset: s.target, Fields: fields,
					Why: "the standby record the map names differs in " + joinFields(fields)}, s.source, s.target)
			}
		}
	}
	return t, nil
}

// streamReader looks records up in a stream, for offsets asked in
// increasing order, reading the stream once.
type streamReader struct {
	next       func() (kafkaread.Record, error, bool)
	stop       func()
	cur        kafkaread.Record
	have, done bool
	n          int64
}

func newStreamReader(rs Records) *streamReader {
	next, stop := iter.Pull2(rs)
	return &streamReader{next: next, stop: stop}
}

func (s *streamReader) at(off int64) (kafkaread.Record, bool, error) {
	for !s.done && (!s.have || s.cur.Offset < off) {
		r, err, ok := s.next()
		if !ok {
			s.done = true
			break
		}
		if err != nil {
			return kafkaread.Record{}, false, err
		}
		s.cur, s.have = r, true
		s.n++
	}
	if s.have && s.cur.Offset == off {
		return s.cur, true, nil
	}
	return kafkaread.Record{}, false, nil
}

func (s *streamReader) decoded() int64 { return s.n }
