package mirror

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/fuzzseed"
	"github.com/drctl/drctl/offsettranslate"
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

// FuzzDecodeGroupSnapshot: no record of the groups topic panics the
// reader; one it accepts is of the group it is stored under and of a
// version this build reads, and encodes (as the group sync writes it) to a
// record that decodes to the same.
func FuzzDecodeGroupSnapshot(f *testing.F) {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var seeds [][]byte
	for _, s := range []GroupSnapshot{
		{Version: snapshotVersion, Group: "billing", Source: "east", ObservedAt: at, Action: SyncCommit, SyncedAt: &at,
			Offsets: []SnapshotOffset{{Topic: "orders", Partition: 0, Offset: 42, Metadata: "m", Target: 40, Status: offsettranslate.Exact},
				{Topic: "orders", Partition: 1, Offset: 7, Target: -1}}},
		{Version: snapshotVersion, Group: "billing", Source: "east", ObservedAt: at, Action: SyncSkippedActive, Reason: "members on the standby"},
		{Version: snapshotVersion + 1, Group: "billing"},
	} {
		raw, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, raw)
	}
	seeds = append(seeds, []byte(`{"version":1,"group":"other"}`), []byte(`{"version":1,"group":"billing","offsets":[{"status":"bogus"}]}`))
	fuzzseed.Add(f, seeds...)
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := decodeSnapshot("billing", raw)
		if err != nil {
			if s.Group != "" || s.Offsets != nil {
				t.Fatalf("an error with a snapshot: %+v", s)
			}
			return
		}
		if s.Group != "billing" || s.Version > snapshotVersion {
			t.Fatalf("accepted %+v", s)
		}
		again, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("an accepted snapshot does not encode: %v", err)
		}
		back, err := decodeSnapshot("billing", again)
		if err != nil {
			if errors.Is(err, ErrSnapshotVersion) {
				t.Fatal(err)
			}
			t.Fatalf("a written snapshot does not decode: %v\n%s", err, again)
		}
		if third, _ := json.Marshal(back); string(third) != string(again) {
			t.Fatalf("round trip changed the snapshot:\n%s\n%s", again, third)
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
