package evidence

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// chainOf builds the copies of n chained records r1..rn on both clusters
// (east, west) as drill.Store links them: each record's digest covers its
// link, and the next record names it.
func chainOf(n int) []Copy {
	var out []Copy
	var head *Head
	t0 := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("r%d", i)
		l := Next(head)
		d := Digest(fmt.Appendf(nil, "%s %+v", id, *l))
		for _, src := range []string{"east", "west"} {
			out = append(out, Copy{Source: src, Cluster: true, ID: id, Digest: d, Link: l, StartedAt: t0.Add(time.Duration(i) * time.Minute)})
		}
		head = &Head{ID: id, Digest: d, Seq: l.Seq}
	}
	return out
}

func without(cs []Copy, id string, sources ...string) []Copy {
	return slices.DeleteFunc(slices.Clone(cs), func(c Copy) bool {
		return c.ID == id && (len(sources) == 0 || slices.Contains(sources, c.Source))
	})
}

func edited(cs []Copy, id string, sources ...string) []Copy {
	out := slices.Clone(cs)
	for i, c := range out {
		if c.ID == id && (len(sources) == 0 || slices.Contains(sources, c.Source)) {
			out[i].Digest = Digest([]byte("edited " + id))
		}
	}
	return out
}

func legacy(id string, at time.Time, sources ...string) []Copy {
	var out []Copy
	for _, s := range sources {
		out = append(out, Copy{Source: s, Cluster: s != "local journal", ID: id, Digest: Digest([]byte(id)), StartedAt: at})
	}
	return out
}

// TestVerifyChain: an intact chain has no problem; a record removed from
// every copy, edited in every copy or in one, two records at one sequence
// number and a bad signature are each named; a copy one cluster lacks is
// a note, and records without a link are counted apart, never verified.
func TestVerifyChain(t *testing.T) {
	early := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	late := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	fork := chainOf(3)
	fork = append(fork, Copy{Source: "east", Cluster: true, ID: "r3b", Digest: Digest([]byte("r3b")), Link: &Link{Seq: 3, PrevID: "r2", PrevDigest: fork[2].Digest}})
	badSig := chainOf(3)
	for i := range badSig {
		badSig[i].Signed, badSig[i].SignatureChecked = true, true
		if badSig[i].ID == "r2" && badSig[i].Source == "west" {
			badSig[i].SignatureChecked, badSig[i].SignatureProblem = false, "the signature does not match the payload"
		}
	}
	for _, tc := range []struct {
		name     string
		copies   []Copy
		problems []string // kind:id, in order
		note     string
		check    func(t *testing.T, r *ChainReport)
	}{
		{name: "intact", copies: chainOf(4), note: "r4 (seq 4) is the newest chained record", check: func(t *testing.T, r *ChainReport) {
			if r.Chained != 4 || r.FirstID != "r1" || r.NewestSeq != 4 || len(r.Unchained) != 0 {
				t.Errorf("report %+v", r)
			}
		}},
		{name: "removed from every copy", copies: without(chainOf(4), "r2"), problems: []string{"removed:r2"}},
		{name: "the first removed", copies: without(chainOf(3), "r1"), problems: []string{"removed:r1"}},
		{name: "two in a row removed", copies: without(without(chainOf(5), "r2"), "r3"), problems: []string{"removed:r3", "removed:"}, check: func(t *testing.T, r *ChainReport) {
			if r.Problems[1].Seq != 2 || !strings.Contains(r.Problems[1].Message, "seq 2 was removed") {
				t.Errorf("problem %+v", r.Problems[1])
			}
		}},
		{name: "edited in every copy", copies: edited(chainOf(4), "r2"), problems: []string{"edited:r2"}},
		{name: "edited on one cluster", copies: edited(chainOf(4), "r3", "west"), problems: []string{"edited:r3"}, check: func(t *testing.T, r *ChainReport) {
			if p := r.Problems[0]; !slices.Equal(p.Sources, []string{"west"}) || !strings.Contains(p.Message, "r3 (seq 3) was edited on west") || !strings.Contains(p.Message, "which r4 recorded") {
				t.Errorf("problem %+v", p)
			}
		}},
		{name: "the newest edited on one cluster", copies: edited(chainOf(3), "r3", "east"), problems: []string{"edited:r3"}},
		{name: "a copy one cluster lacks", copies: without(chainOf(3), "r2", "west"), note: "r2 (seq 2) is not on west"},
		{name: "fork", copies: fork, problems: []string{"fork:r3b"}},
		{name: "signature", copies: badSig, problems: []string{"signature:r2"}, check: func(t *testing.T, r *ChainReport) {
			if r.Signed != 3 || r.SignaturesChecked != 2 {
				t.Errorf("signed %d, checked %d", r.Signed, r.SignaturesChecked)
			}
		}},
		{name: "records from before the chain", copies: append(append(legacy("old1", early, "east", "west"), legacy("old2", late, "east")...), chainOf(2)...),
			check: func(t *testing.T, r *ChainReport) {
				if r.Chained != 2 || len(r.Unchained) != 2 || r.Unchained[0].ID != "old1" || r.Unchained[0].AfterStart || !r.Unchained[1].AfterStart {
					t.Errorf("unchained %+v", r.Unchained)
				}
			}},
		{name: "nothing chained", copies: legacy("old1", early, "east"), check: func(t *testing.T, r *ChainReport) {
			if r.Chained != 0 || len(r.Unchained) != 1 || len(r.Notes) != 0 {
				t.Errorf("report %+v", r)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := VerifyChain(tc.copies)
			var got []string
			for _, p := range r.Problems {
				got = append(got, p.Kind+":"+p.ID)
			}
			if !slices.Equal(got, tc.problems) {
				t.Errorf("problems %v, want %v:\n%+v", got, tc.problems, r.Problems)
			}
			if r.Intact() != (len(tc.problems) == 0) {
				t.Errorf("Intact() = %v", r.Intact())
			}
			if tc.note != "" && !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, tc.note) }) {
				t.Errorf("notes %q lack %q", r.Notes, tc.note)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}
