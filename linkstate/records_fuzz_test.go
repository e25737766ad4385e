package linkstate

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/testkit/fuzzseed"
	"github.com/drctl/drctl/topology"
)

// FuzzDecodeObservedRecord: no record of the ends topic panics the reader,
// and one it accepts encodes (as observe writes it) to a record that
// decodes to the same.
func FuzzDecodeObservedRecord(f *testing.F) {
	var seeds [][]byte
	for _, rec := range []ShardView{
		{Shard: 0},
		{Shard: 3, Partitions: []Observed{{Topic: "orders", Partition: 0, End: 120, Mirrored: 100, LastMirroredMs: 1_764_579_600_000, ObservedAtMs: 1_764_579_601_000},
			{Topic: "payments.eu", Partition: 11, End: 0, Mirrored: 0}}},
	} {
		raw, err := json.Marshal(rec)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, raw)
	}
	seeds = append(seeds, []byte(`{"shard":1,"partitions":[null,{"partition":-1,"end":-5}]}`), []byte(`{"shard":99999999999}`))
	fuzzseed.Add(f, seeds...)
	f.Fuzz(func(t *testing.T, raw []byte) {
		rec, err := decodeObserved(raw)
		if err != nil {
			return
		}
		again, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeObserved(again)
		if err != nil {
			t.Fatalf("a written record does not decode: %v", err)
		}
		if third, _ := json.Marshal(back); string(third) != string(again) {
			t.Fatalf("round trip changed the record:\n%s\n%s", again, third)
		}
	})
}

// FuzzDecodeTopicRecord: no record of the topic ledger panics the reader;
// one it accepts is of the topic it is stored under, and encodes (as
// writeTopicRecord writes it) to a record that decodes to the same.
func FuzzDecodeTopicRecord(f *testing.F) {
	var seeds [][]byte
	for _, rec := range []TopicRecord{
		{Topic: "orders", SourceID: "AAAAAAAAAAAAAAAAAAAAAA", Created: true, AtMs: 1_764_579_600_000},
		{Topic: "orders"},
		{Topic: "other", SourceID: "x"},
	} {
		raw, err := json.Marshal(rec)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, raw)
	}
	seeds = append(seeds, []byte(`{"topic":"orders","created":"yes"}`), []byte(`{"TOPIC":"orders","at_ms":1e3}`))
	fuzzseed.Add(f, seeds...)
	f.Fuzz(func(t *testing.T, raw []byte) {
		rec, err := decodeTopicRecord("orders", raw)
		if err != nil {
			return
		}
		if rec.Topic != "orders" {
			t.Fatalf("accepted %+v under key orders", rec)
		}
		again, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeTopicRecord("orders", again)
		if err != nil || back != rec {
			t.Fatalf("round trip: %+v -> %s -> %+v (%v)", rec, again, back, err)
		}
	})
}

// FuzzDecodePause: no pause record read back from a cluster panics the
// daemon's reader; one it accepts names a link of two clusters, and holds
// only its own link at its own epoch, before its expiry, unreleased.
func FuzzDecodePause(f *testing.F) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	p := Pause{Topology: "payments", Source: "east", Target: "west", Epoch: 4, ID: "drill-unplanned-x", Holder: "ops@box", At: at, Until: at.Add(12 * time.Minute)}
	released := p
	released.Released = true
	var seeds [][]byte
	for _, v := range []Pause{p, released, {Topology: "payments", Source: "east", Target: "east"}, {}} {
		raw, _ := json.Marshal(v)
		seeds = append(seeds, raw)
	}
	seeds = append(seeds, []byte(`{"topology":"t","source":"a","target":"b","until":"x"}`), []byte(`null`))
	fuzzseed.Add(f, seeds...)
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := DecodePause(raw)
		if err != nil {
			return
		}
		if p.Topology == "" || p.Source == "" || p.Target == "" || p.Source == p.Target {
			t.Fatalf("accepted a pause of no link: %+v", p)
		}
		link := topology.Link{Topology: p.Topology, Source: p.Source, Target: p.Target}
		now := p.Until.Add(-time.Second)
		if p.Holds(link, p.Epoch, now) != !p.Released {
			t.Fatalf("pause %+v holds %v before its expiry", p, p.Holds(link, p.Epoch, now))
		}
		back := topology.Link{Topology: p.Topology, Source: p.Target, Target: p.Source}
		if p.Holds(back, p.Epoch, now) || p.Holds(link, p.Epoch+1, now) || p.Holds(link, p.Epoch, p.Until) {
			t.Fatalf("pause %+v holds another link, epoch or time", p)
		}
		if id := PausedBy([]Pause{p}, link, p.Epoch, now); (id != "") == p.Released {
			t.Fatalf("PausedBy %q for %+v", id, p)
		}
	})
}
