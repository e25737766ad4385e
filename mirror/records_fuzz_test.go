package mirror

import (
	"encoding/json"
	"testing"

	"github.com/drctl/drctl/internal/fuzzseed"
)

// FuzzDecodeObservedRecord: no record of the ends topic panics the reader,
// and one it accepts encodes (as observe writes it) to a record that
// decodes to the same.
func FuzzDecodeObservedRecord(f *testing.F) {
	var seeds [][]byte
	for _, rec := range []observedRecord{
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
