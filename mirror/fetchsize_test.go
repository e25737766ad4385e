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

	"github.com/drctl/drctl/internal/kfaketest"
	"github.com/drctl/drctl/topology"
)

// TestFetchSizesFollowTheRoundTrip: the base sizes hold up to a LAN's
// round trip, grow in proportion beyond it up to the most, and the
// shortest recent round trip counts, so one slow answer of a busy broker
// on a LAN does not grow them.
func TestFetchSizesFollowTheRoundTrip(t *testing.T) {
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
	check("no round trip known", part, resp)
	for range rttWindow {
		s.observe(12 * time.Millisecond)
	}
	check("LAN round trips", part, resp)
	s.observe(300 * time.Millisecond)
	check("one slow answer among LAN ones", part, resp)
	for range rttWindow {
		s.observe(50 * time.Millisecond) // 25 ms each way
	}
	check("50 ms round trips", part*5/2, resp*5/2)
	s.observe(40 * time.Millisecond)
	check("the shortest recent round trip counts", part*2, resp*2)
	for range rttWindow {
		s.observe(100 * time.Millisecond) // 50 ms each way
	}
	check("100 ms round trips: up to the most", part*5, most)
	if reported != 100*time.Millisecond {
		t.Errorf("round trip reported to the metric: %v, want 100ms", reported)
	}

	// A fetcher that may not grow keeps its base sizes.
	fixed := newFetchSizer(part, resp, resp)
	fixed.observe(time.Second)
	if p, r := fixed.sizes(); p != part || r != resp {
		t.Errorf("no room to grow: sizes %d / %d, want %d / %d", p, r, part, resp)
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
// fetch 100 ms late (a WAN's round trip) gets larger requests once the
// fetcher has seen a backlog come back slowly, up to the fetcher's most
// and no further, and every record still arrives in order.
func TestFetcherGrowsItsRequestsOnASlowSource(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{})
	src := kfaketest.DialCluster(t, p.Topology.Clusters["east"])
	kfaketest.CreateTopicOn(t, src, "far", 1, nil)
	const records = 300
	value := strings.Repeat("v", 1000)
	prod := kfaketest.Producer(t, p.Topology.Clusters["east"], 10)
	for i := range records { // one batch each: shares, not batches, bound the responses
		m := &sarama.ProducerMessage{Topic: "far", Value: sarama.StringEncoder(fmt.Sprintf("%04d%s", i, value))}
		if _, _, err := prod.SendMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	var largest, requests atomic.Int32
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
	const base, most = minPartBytes, 4 * minPartBytes
	out := make(chan *sarama.ConsumerMessage, records)
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
	f.start(context.Background())
	t.Cleanup(f.close)
	f.add(topology.TopicPartition{Topic: "far", Partition: 0}, 0, "")
	for want := range int64(records) {
		if m := receive(t, out, 30*time.Second); m.Offset != want {
			t.Fatalf("offset %d handed over, want %d", m.Offset, want)
		}
	}
	if got := largest.Load(); got != most {
		t.Errorf("largest share asked of the slow source: %d bytes, want the fetcher's most, %d (base %d)", got, most, base)
	}
	// 300 KB at 8 KiB a request would take about 37 requests; grown, fewer.
	if n := requests.Load(); n > 25 {
		t.Errorf("%d fetch requests for %d KB, want them to grow (at most 25)", n, records)
	}
}
