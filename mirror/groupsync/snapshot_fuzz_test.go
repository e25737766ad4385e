package groupsync

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/testkit/fuzzseed"
	"github.com/drctl/drctl/offsettranslate"
)

// FuzzDecodeGroupSnapshot: no record of the groups topic panics the
// reader; one it accepts is of the group it is stored under and of a
// version this build reads, and encodes (as the group sync writes it) to a
// record that decodes to the same.
func FuzzDecodeGroupSnapshot(f *testing.F) {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var seeds [][]byte
	for _, s := range []Snapshot{
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
