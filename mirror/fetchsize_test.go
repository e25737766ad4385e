package mirror

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// TestFetchSizesFollowThePace: the sizes grow by growStep each round that
// starved the shard, up to the most and no further, shrink slowly back to
// the base while the copy sets the pace, and a slow round trip alone grows
// nothing: a fetch's duration includes its response's transfer, and sizes
// that followed it grew through a slow hop until they reached their bound.
func TestFetchSizesFollowThePace(t *testing.T) {
	const part, resp, most = 1 << 20, 2 << 20, 8 << 20
	s := newFetchSizer(part, resp, most)
	var reported time.Duration
	s.report = func(d time.Duration) { reported = d }
	check := func(what string, wantPart, wantResp int32) {
		t.Helper()
		if p, r := s.sizes(); p != wantPart || r != wantResp {
			t.Errorf("%s: sizes %d / %d, want %d / %d", what, p, r, wantPart, wantResp)
		}
	}
	check("nothing learnt yet", part, resp)
	for range rttWindow {
		s.observe(12 * time.Millisecond)
	}
	s.starved()
	check("a starved round from a near source", part, resp)
	for range rttWindow {
		s.observe(300 * time.Millisecond)
	}
	check("slow round trips, no starved round", part, resp)
	if reported != 300*time.Millisecond {
		t.Errorf("round trip reported to the metric: %v, want 300ms", reported)
	}
	s.observe(100 * time.Millisecond)
	if reported != 100*time.Millisecond {
		t.Errorf("round trip reported after a shorter one: %v, want the shortest recent, 100ms", reported)
	}

	s.starved()
	check("one starved round", part*5/4, resp*5/4)
	s.starved()
	check("two starved rounds", part*25/16, resp*25/16)
	for range 20 {
		s.starved()
	}
	check("starved for long 100 ms away: up to the round trip's bound, 5 times", part*5, most)
	for range rttWindow {
		s.observe(300 * time.Millisecond)
	}
	for range 20 {
		s.starved()
	}
	check("starved for long 300 ms away: up to the most", most, most)
	if s.scale != float64(most)/part {
		t.Errorf("scale after starving for long: %v, want %v (a partition's share at the most, not beyond)", s.scale, float64(most)/part)
	}

	s.fed()
	if p, r := s.sizes(); r != most || p >= most || p < most*9/10 {
		t.Errorf("one round the copy set the pace: sizes %d / %d, want the share a little below the most %d", p, r, most)
	}
	for range 200 {
		s.fed()
	}
	check("the copy set the pace for long: back to the base", part, resp)

	// A fetcher whose response may not grow keeps its bound; a lone busy
	// partition may still fill it.
	fixed := newFetchSizer(part, resp, resp)
	fixed.observe(100 * time.Millisecond)
	for range 20 {
		fixed.starved()
	}
	if p, r := fixed.sizes(); p != resp || r != resp {
		t.Errorf("no room to grow: sizes %d / %d, want %d / %d", p, r, resp, resp)
	}
}

// TestFetchGrowthStaysWithinTheBudget: with the defaults a response grows
// to 4 times its base, 8 MiB, which is each of the 8 shards' share of the
// 64 MiB byte budget; more shards or a smaller budget grow less, and never
// below the base.
func TestFetchGrowthStaysWithinTheBudget(t *testing.T) {
	o := Options{Shards: DefaultShards}
	o.defaults()
	if got, want := fetchGrowth(o), 4*o.FetchResponseBytes; got != want {
		t.Errorf("defaults (%d shards, budget %d): grows to %d, want %d", o.Shards, o.MaxBufferedBytes, got, want)
	}
	if sum := int64(fetchGrowth(o)) * int64(o.Shards); sum > o.MaxBufferedBytes {
		t.Errorf("defaults: the grown responses of all shards add up to %d bytes, over the budget's %d", sum, o.MaxBufferedBytes)
	}
	o.Shards = 16
	if got, want := fetchGrowth(o), int32(o.MaxBufferedBytes/16); got != want {
		t.Errorf("16 shards: grows to %d, want the shard's share of the budget %d", got, want)
	}
	o.MaxBufferedBytes = 8 << 20
	if got := fetchGrowth(o); got != o.FetchResponseBytes {
		t.Errorf("a budget smaller than the shards' base responses: grows to %d, want the base %d", got, o.FetchResponseBytes)
	}
}

// TestFetcherGrowsItsRequestsOnASlowSource: a source that answers every
// fetch 100 ms late (a WAN's round trip) while the shard takes records as
// fast as they come gets larger requests, up to the fetcher's most and no
// further, and every record still arrives in order.
func TestFetcherGrowsItsRequestsOnASlowSource(t *testing.T) {
	const records = 300
	src, largest, requests := slowSource(t, records)
	const base, most = minPartBytes, 4 * minPartBytes
	out := make(chan *sarama.ConsumerMessage, records)
	var reported atomic.Int32
	startSlowSourceFetcher(t, src, out, base, most, func(n int32) { reported.Store(n) })
	for want := range int64(records) {
		if m := receive(t, out, 30*time.Second); m.Offset != want {
			t.Fatalf("offset %d handed over, want %d", m.Offset, want)
		}
	}
	if got := largest.Load(); got != most {
		t.Errorf("largest share asked of the slow source: %d bytes, want the fetcher's most, %d (base %d)", got, most, base)
	}
	if got := reported.Load(); got != most {
		t.Errorf("response bound reported to the metric: %d, want the most, %d", got, most)
	}
	// 300 KB at 8 KiB a request would take about 37 requests; grown, fewer.
	if n := requests.Load(); n > 25 {
		t.Errorf("%d fetch requests for %d KB, want them to grow (at most 25)", n, records)
	}
}

// TestFetcherKeepsItsSizesWhileTheCopySetsThePace: the same slow source,
// but a shard that takes a record every 25 ms, so that handing a round
// over takes longer than fetching the next: larger requests would only
// hold more memory, and the fetcher keeps its base sizes.
func TestFetcherKeepsItsSizesWhileTheCopySetsThePace(t *testing.T) {
	const records = 60
	src, largest, requests := slowSource(t, records)
	const base, most = minPartBytes, 4 * minPartBytes
	out := make(chan *sarama.ConsumerMessage)
	startSlowSourceFetcher(t, src, out, base, most, nil)
	tick := time.NewTicker(25 * time.Millisecond) // the copy's pace
	defer tick.Stop()
	for want := range int64(records) {
		<-tick.C
		if m := receive(t, out, 30*time.Second); m.Offset != want {
			t.Fatalf("offset %d handed over, want %d", m.Offset, want)
		}
	}
	if got := largest.Load(); got != base {
		t.Errorf("largest share asked while the copy was slower than the source: %d bytes, want the base %d (%d requests)", got, base, requests.Load())
	}
}

// slowSource returns a client of a source whose partition "far" holds
// records of about 1 KB, one batch each (shares, not batches, bound the
// responses), and which answers every fetch 100 ms late; largest is the
// largest partition share a fetch asked for, requests the fetches.
func slowSource(t *testing.T, records int) (src sarama.Client, largest, requests *atomic.Int32) {
	t.Helper()
	p := kfaketest.NewPair(t, kfaketest.Options{})
	src = kfaketest.DialCluster(t, p.Topology.Clusters["east"])
	kfaketest.CreateTopicOn(t, src, "far", 1, nil)
	value := strings.Repeat("v", 1000)
	prod := kfaketest.Producer(t, p.Topology.Clusters["east"], 10)
	for i := range records {
		m := &sarama.ProducerMessage{Topic: "far", Value: sarama.StringEncoder(fmt.Sprintf("%04d%s", i, value))}
		if _, _, err := prod.SendMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	largest, requests = new(atomic.Int32), new(atomic.Int32)
	p.East.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.East.KeepControl()
		for _, tp := range req.(*kmsg.FetchRequest).Topics {
			for _, pt := range tp.Partitions {
				if pt.PartitionMaxBytes > largest.Load() {
					largest.Store(pt.PartitionMaxBytes)
				}
			}
		}
		requests.Add(1)
		time.Sleep(100 * time.Millisecond)
		return nil, nil, false
	})
	return src, largest, requests
}

// startSlowSourceFetcher starts a fetcher of "far" from offset 0 into out,
// with base sizes base that may grow to most; reportResp (if set) is told
// its response bound.
func startSlowSourceFetcher(t *testing.T, src sarama.Client, out chan *sarama.ConsumerMessage, base, most int32, reportResp func(int32)) {
	t.Helper()
	var held atomic.Int64
	f, err := newFetcher(src, base, base, most, fetchWaits{idle: 50 * time.Millisecond}, fetchSink{
		out: out, buf: newBudget(1 << 30), held: &held,
		outOfRange: func(_ context.Context, tp topology.TopicPartition, at int64) (int64, error) {
			t.Errorf("%s: offset %d out of range", tp, at)
			return 0, errRefused
		},
		recreated: func(tp topology.TopicPartition, id string) { t.Errorf("%s: recreated (id %s)", tp, id) },
		failed:    func(tp topology.TopicPartition, err error) { t.Logf("%s: %v", tp, err) },
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	f.size.reportResp = reportResp
	f.start(context.Background())
	t.Cleanup(f.close)
	f.add(topology.TopicPartition{Topic: "far", Partition: 0}, 0, "")
}
