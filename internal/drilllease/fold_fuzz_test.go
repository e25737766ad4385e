package drilllease

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/testkit/fuzzseed"
)

// FuzzFoldClaims: no log of the locks topic (one record a line, "key TAB
// value") panics the fold; the owner it finds is a claim of the key from
// the log that is not a release; the owner's own release ends the lease,
// and another holder's claim within the lease does not take it.
func FuzzFoldClaims(f *testing.F) {
	at := time.Date(2026, 12, 1, 2, 30, 0, 0, time.UTC)
	claim := func(key, holder string, release bool, from, until time.Time) []byte {
		raw, err := json.Marshal(Claim{Key: key, Holder: holder, Drill: "drill nightly (kind canary)", Release: release, At: from, Expires: until})
		if err != nil {
			f.Fatal(err)
		}
		return append([]byte(key+"\t"), raw...)
	}
	lines := func(ls ...[]byte) []byte { return bytes.Join(ls, []byte("\n")) }
	fuzzseed.Add(f,
		claim(RunningKey, "a/1/x", false, at, at.Add(time.Hour)),
		lines(claim(RunningKey, "a/1/x", false, at, at.Add(time.Hour)), claim(RunningKey, "b/2/y", false, at.Add(time.Minute), at.Add(2*time.Hour))),
		lines(claim(RunningKey, "a/1/x", false, at, at.Add(time.Hour)), claim(RunningKey, "a/1/x", true, at.Add(time.Minute), at.Add(time.Minute)),
			claim(RunningKey, "b/2/y", false, at.Add(2*time.Minute), at.Add(2*time.Hour))),
		lines(claim(RunningKey, "a/1/x", false, at, at.Add(time.Minute)), claim(RunningKey, "b/2/y", false, at.Add(time.Hour), at.Add(2*time.Hour))),
		lines(claim("slot/nightly/1764556200", "a/1/x", false, at, at.Add(time.Hour)), claim(RunningKey, "", false, at, at.Add(time.Hour))),
		[]byte("running\t{\"holder\":\"h\",\"at\":\"bad\"}"), []byte("running\tnull"), []byte("running"), []byte{},
	)
	f.Fuzz(func(t *testing.T, raw []byte) {
		fold := Fold{Key: RunningKey}
		offsets := map[int64]bool{}
		for i, line := range bytes.Split(raw, []byte("\n")) {
			key, value, _ := bytes.Cut(line, []byte("\t"))
			fold.Add(int64(i), key, value)
			if string(key) == RunningKey {
				offsets[int64(i)] = true
			}
		}
		o := fold.Owner
		if o == nil {
			return
		}
		if o.Key != RunningKey || o.Release || o.Holder == "" || !offsets[o.Offset] {
			t.Fatalf("owner %+v", o)
		}
		if DeadHere(o.Holder) {
			return
		}
		n := int64(len(offsets)) + 1<<20
		other := fold
		rival, _ := json.Marshal(Claim{Holder: o.Holder + "-rival", At: o.Expires.Add(-time.Nanosecond), Expires: o.Expires.Add(time.Hour)})
		if !o.Expires.After(o.At) || o.Expires.Add(-time.Nanosecond).After(o.Expires) {
			return
		}
		other.Add(n, []byte(RunningKey), rival)
		if other.Owner != o {
			t.Fatalf("a rival's claim within the lease took it: %+v", other.Owner)
		}
		rel, _ := json.Marshal(Claim{Holder: o.Holder, Release: true, At: o.At, Expires: o.At})
		fold.Add(n+1, []byte(RunningKey), rel)
		if fold.Owner != nil {
			t.Fatalf("the owner's release left %+v holding", fold.Owner)
		}
	})
}
