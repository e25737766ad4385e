package rolestate

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/testkit/fuzzseed"
)

// FuzzDecodeState: no record of __drctl_state panics the reader; one it
// accepts is a valid state of the topology it is stored under, and
// encoding it again (as a write does) gives a record that decodes to the
// same state.
func FuzzDecodeState(f *testing.F) {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var seeds [][]byte
	for _, s := range []State{
		{Topology: "payments", Epoch: 0, Active: "east", Standby: "west", Phase: PhaseSteady, UpdatedAt: at, UpdatedBy: "ops@box"},
		{Topology: "payments", Epoch: 3, Active: "west", Standby: "east", Phase: PhaseFailingOver,
			Run: &Run{ID: "r-1", Kind: RunFailover, Step: 4, StartedAt: at, By: "ops@box"}, UpdatedAt: at, UpdatedBy: "ops@box",
			ClusterIDs: map[string]string{"east": "AbCdEfGhIjKlMnOpQrStUv", "west": "x"}},
		{Topology: "payments", Epoch: 1<<63 - 1, Active: "a", Standby: "b", Phase: PhaseReseeding, Run: &Run{ID: "r", Kind: RunReseed}, UpdatedAt: at, UpdatedBy: "ops@box"},
	} {
		raw, err := json.Marshal(stamp(s))
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, raw)
	}
	seeds = append(seeds, []byte(`{"topology":"payments","epoch":-1}`), []byte(`{"topology":"other","active":"a","standby":"b","phase":"steady"}`),
		[]byte(`{"topology":"payments","active":"a","standby":"b","phase":"steady","updated_at":"0000-01-01T00:00:00+23:59"}`),
		[]byte(`null`), []byte(`{"topology":"payments","epoch":1e30}`))
	fuzzseed.Add(f, seeds...)
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := decodeState("payments", raw)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil || s.Topology != "payments" {
			t.Fatalf("accepted %+v: %v", s, err)
		}
		_ = s.String()
		again, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("an accepted state does not encode: %v", err)
		}
		s2, err := decodeState("payments", again)
		if err != nil {
			t.Fatalf("a written state does not decode: %v\n%s", err, again)
		}
		if third, _ := json.Marshal(s2); string(third) != string(again) {
			t.Fatalf("round trip changed the state:\n%s\n%s", again, third)
		}
	})
}
