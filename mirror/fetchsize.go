package mirror

import (
	"sync"
	"time"
)

// A partition gets at most one fetch response per round trip to its
// leader, so the sizes that keep a shard busy on a LAN (a 2 MiB response,
// answered in 3-15 ms) leave it waiting on the network across a WAN: at
// 50 ms each way a shard read about 10 MB/s where it copies 18 MB/s on
// the LAN (bench/README.md, issue 14 target 5). A fetcher therefore
// scales its sizes with the source's round trip (fetchSizer):
//
//   - the round trip is the shortest of the latest rttWindow requests
//     that found a backlog (some partition had more committed data than
//     the response carried). The broker answers such a request at once,
//     so its duration is the network's and the broker's time, not the
//     fetch's wait for data; the shortest leaves out a busy broker's
//     slow answers, as a minimum-RTT filter does;
//   - up to baseRTT the base sizes hold; beyond it they grow in
//     proportion (twice the round trip, twice the bytes per response)
//     up to the fetcher's most, which the engine sets to at most
//     maxSizeScale times the base and to the shard's share of the
//     engine's byte budget (fetchGrowth), so that the responses of all
//     shards together stay within the budget's size again.
//
// No request that found a backlog: the sizes stay as they were (an idle
// link has nothing to learn the round trip from, and its responses are
// small whatever their bound).
const (
	baseRTT      = 20 * time.Millisecond
	rttWindow    = 8
	maxSizeScale = 4
)

// fetchSizer holds a fetcher's base sizes and its latest round trips; it
// is safe for the concurrent requests of one round.
type fetchSizer struct {
	part, resp int32 // base: a partition's share, a response
	most       int32 // the largest a response may grow to (>= resp)

	// report, when set, is told the round trip after each observation
	// (the shard's metric).
	report func(time.Duration)

	mu   sync.Mutex
	took [rttWindow]time.Duration
	n    int // requests recorded; the next one goes to took[n%rttWindow]
}

func newFetchSizer(part, resp, most int32) *fetchSizer {
	part, resp = max(part, minPartBytes), max(resp, minPartBytes)
	return &fetchSizer{part: part, resp: resp, most: max(most, resp)}
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
	rtt := s.roundTrip()
	if rtt <= baseRTT || s.most == s.resp {
		return s.part, s.resp
	}
	resp = int32(min(int64(s.most), int64(s.resp)*int64(rtt)/int64(baseRTT)))
	part = int32(min(int64(resp), int64(s.part)*int64(rtt)/int64(baseRTT)))
	return part, resp
}

// fetchGrowth is the most a shard's fetch response grows to across a WAN:
// maxSizeScale times FetchResponseBytes, and no more than the shard's
// share of MaxBufferedBytes (never below FetchResponseBytes).
func fetchGrowth(o Options) int32 {
	most := int64(o.FetchResponseBytes) * maxSizeScale
	if o.Shards > 0 {
		most = min(most, o.MaxBufferedBytes/int64(o.Shards))
	}
	return int32(max(most, int64(o.FetchResponseBytes)))
}
