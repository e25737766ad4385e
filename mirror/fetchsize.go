package mirror

import (
	"sync"
	"time"
)

// A partition gets at most one fetch response per round trip to its
// leader, so the sizes that keep a shard busy on a LAN (a 2 MiB response,
// answered in 3-15 ms) leave it waiting on the network across a WAN: at
// 50 ms each way a shard read about 10 MB/s where it copies 18 MB/s on
// the LAN (bench/results/diary.md). A fetcher therefore grows
// its sizes while the source, not the copy, sets its pace (fetchSizer):
//
//   - the fetch loop fetches the next round while it hands the last one
//     over (fetcher.go). When both rounds found a backlog (some partition
//     had more committed data than its response carried) and the loop,
//     done handing over, still waited for the next round, the shard was
//     starved: the response and a partition's share grow by growStep, up
//     to the fetcher's most. When the next round was there before the hand
//     over ended, the copy is what is slow: they shrink by shrinkStep
//     towards the base, so a link that no longer needs them gives the
//     memory back. A round without a backlog changes nothing (an idle or
//     streaming link has nothing to learn it from, and its responses are
//     small whatever their bound);
//   - the source's round trip (below) bounds how far they grow: to the
//     round trip over baseRTT times the base. On a LAN the base sizes
//     keep a shard busy, and a wait for a round is the broker's, which
//     larger responses do not shorten;
//   - within that bound the pace decides, not the round trip alone: a
//     round trip measured by a fetch's duration includes the transfer of
//     its response, which grows with the response, so sizes scaled by it
//     alone grew through any slow hop until they reached the most (32 MiB
//     a shard through the bench's WAN proxy even at 0 ms, where the base
//     sizes kept up; bench/results/diary.md, "fetch sizes that follow
//     the pace");
//   - the most is maxSizeScale times the base and no more than the
//     shard's share of the engine's byte budget (fetchGrowth).
//
// The round trip is the shortest of the latest rttWindow requests that
// found a backlog (the broker answers those at once, and the shortest
// leaves out a busy broker's slow answers); it is also the shard's metric.
const (
	baseRTT      = 20 * time.Millisecond
	rttWindow    = 8
	maxSizeScale = 4
	growStep     = 1.25
	shrinkStep   = 0.97
)

// fetchSizer holds a fetcher's base sizes, how far they have grown, and its
// latest round trips; it is safe for the concurrent requests of one round.
type fetchSizer struct {
	part, resp int32 // base: a partition's share, a response
	most       int32 // the largest a response may grow to (>= resp)

	// report, when set, is told the round trip after each observation,
	// and reportResp the response's bound after each change (the shard's
	// metrics). Set before the fetcher starts.
	report     func(time.Duration)
	reportResp func(int32)

	mu sync.Mutex
	// scale is the sizes over the base sizes: at least 1, and at most
	// what takes a partition's share to most (a lone busy partition may
	// fill the grown response).
	scale float64
	took  [rttWindow]time.Duration
	n     int // requests recorded; the next one goes to took[n%rttWindow]
}

func newFetchSizer(part, resp, most int32) *fetchSizer {
	part, resp = max(part, minPartBytes), max(resp, minPartBytes)
	return &fetchSizer{part: part, resp: resp, most: max(most, resp), scale: 1}
}

// starved grows the sizes: the fetch loop waited for a round with a
// backlog after it had handed the last one over. They grow up to the
// round trip over baseRTT times the base: a near source's wait is its
// broker's, which larger responses do not shorten.
func (s *fetchSizer) starved() {
	far := float64(s.roundTrip()) / float64(baseRTT)
	s.mu.Lock()
	s.scale = max(1, min(s.scale*growStep, far, float64(s.most)/float64(min(s.part, s.resp))))
	s.mu.Unlock()
	s.changed()
}

// fed shrinks the sizes towards the base: a round with a backlog was
// there before the last one was handed over.
func (s *fetchSizer) fed() {
	s.mu.Lock()
	s.scale = max(1, s.scale*shrinkStep)
	s.mu.Unlock()
	s.changed()
}

// changed tells reportResp the response's bound.
func (s *fetchSizer) changed() {
	if s.reportResp != nil {
		_, resp := s.sizes()
		s.reportResp(resp)
	}
}

// observe records the duration of a request that found a backlog.
func (s *fetchSizer) observe(d time.Duration) {
	if d <= 0 {
		return
	}
	s.mu.Lock()
	s.took[s.n%rttWindow] = d
	s.n++
	s.mu.Unlock()
	if s.report != nil {
		s.report(s.roundTrip())
	}
}

// roundTrip is the shortest recorded duration; 0 before any.
func (s *fetchSizer) roundTrip() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var least time.Duration
	for _, d := range s.took[:min(s.n, rttWindow)] {
		if least == 0 || d < least {
			least = d
		}
	}
	return least
}

// sizes returns a partition's largest share and the response's bound for
// the next request.
func (s *fetchSizer) sizes() (part, resp int32) {
	s.mu.Lock()
	scale := s.scale
	s.mu.Unlock()
	resp = int32(min(float64(s.most), float64(s.resp)*scale))
	part = int32(min(float64(resp), float64(s.part)*scale))
	return part, resp
}

// fetchGrowth is the most a shard's fetch response grows to:
// maxSizeScale times FetchResponseBytes, and no more than the shard's share
// of MaxBufferedBytes (never below FetchResponseBytes). Half that share
// (two rounds of every shard within the budget) copied 5-10% slower at
// 50 ms each way, bench/results/diary.md.
func fetchGrowth(o Options) int32 {
	most := int64(o.FetchResponseBytes) * maxSizeScale
	if o.Shards > 0 {
		most = min(most, o.MaxBufferedBytes/int64(o.Shards))
	}
	return int32(max(most, int64(o.FetchResponseBytes)))
}
