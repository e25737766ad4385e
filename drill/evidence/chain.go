package evidence

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Link is a record's place in its topology's hash chain: its sequence
// number (1 for the first chained record) and the record recorded before
// it, by id and by the digest of its canonical JSON. A record's link is
// part of what its digest covers, so the next record vouches for it, its
// link and so for every record before it.
type Link struct {
	Seq        int64  `json:"seq" yaml:"seq"`
	PrevID     string `json:"prev_id,omitempty" yaml:"prev_id,omitempty"`
	PrevDigest string `json:"prev_digest,omitempty" yaml:"prev_digest,omitempty"`
}

// Head is the newest chained record of a topology: what the next record
// links to.
type Head struct {
	ID     string
	Digest string
	Seq    int64
}

// Next is the link of the record recorded after head; with no head (nil)
// the chain starts at 1.
func Next(head *Head) *Link {
	if head == nil {
		return &Link{Seq: 1}
	}
	return &Link{Seq: head.Seq + 1, PrevID: head.ID, PrevDigest: head.Digest}
}

// Copy is what one place (a cluster, or the local journal) holds of one
// record.
type Copy struct {
	// Source names the place: a cluster's name, or "local journal".
	Source string
	// Cluster is true for a cluster's copy: every cluster should hold
	// every record, a local journal only those run from its machine.
	Cluster bool
	ID      string
	// Digest is the Digest of the copy's bytes as stored.
	Digest string
	// Link is the copy's link (nil: not chained).
	Link *Link
	// Unfinished marks a started record (a disruptive drill's, replaced by
	// its result): never chained.
	Unfinished bool
	// StartedAt orders records that carry no link.
	StartedAt time.Time
	// Signed: a signature envelope was stored with the copy.
	// SignatureChecked: it was checked and verified; SignatureProblem:
	// it was checked and does not hold (why). Signed without either: not
	// checked (no key to check it with).
	Signed           bool
	SignatureChecked bool
	SignatureProblem string
}

// Problem kinds.
const (
	ProblemRemoved   = "removed"
	ProblemEdited    = "edited"
	ProblemFork      = "fork"
	ProblemLink      = "link"
	ProblemSignature = "signature"
)

// Problem is one thing wrong with the history, naming the record.
type Problem struct {
	ID      string   `json:"id" yaml:"id"`
	Seq     int64    `json:"seq,omitempty" yaml:"seq,omitempty"`
	Kind    string   `json:"kind" yaml:"kind"`
	Sources []string `json:"sources,omitempty" yaml:"sources,omitempty"`
	Message string   `json:"message" yaml:"message"`
}

// Unchained is a record that carries no link.
type Unchained struct {
	ID        string    `json:"id" yaml:"id"`
	StartedAt time.Time `json:"started_at" yaml:"started_at"`
	// Unfinished: a drill's started record (it runs, or was killed).
	Unfinished bool `json:"unfinished,omitempty" yaml:"unfinished,omitempty"`
	// AfterStart: recorded after the chain began (by a drctl that does
	// not chain records, or inserted): nothing vouches for it.
	AfterStart bool `json:"after_start,omitempty" yaml:"after_start,omitempty"`
}

// ChainReport is what VerifyChain found.
type ChainReport struct {
	// Chained counts the records that carry a link; First and Newest are
	// the lowest and highest of them (empty when none).
	Chained   int    `json:"chained" yaml:"chained"`
	FirstID   string `json:"first_id,omitempty" yaml:"first_id,omitempty"`
	FirstSeq  int64  `json:"first_seq,omitempty" yaml:"first_seq,omitempty"`
	NewestID  string `json:"newest_id,omitempty" yaml:"newest_id,omitempty"`
	NewestSeq int64  `json:"newest_seq,omitempty" yaml:"newest_seq,omitempty"`
	// Unchained lists the records that carry no link, oldest first.
	Unchained []Unchained `json:"unchained,omitempty" yaml:"unchained,omitempty"`
	// Signed counts the chained records with a signature stored beside
	// them, SignaturesChecked those whose every signature was checked and
	// verified.
	Signed            int       `json:"signed" yaml:"signed"`
	SignaturesChecked int       `json:"signatures_checked" yaml:"signatures_checked"`
	Problems          []Problem `json:"problems" yaml:"problems"`
	// Notes say what the chain cannot show and what is not wrong but
	// worth knowing (a copy one cluster lacks).
	Notes []string `json:"notes,omitempty" yaml:"notes,omitempty"`
}

// Intact reports whether no problem was found among the chained records.
// It says nothing of the unchained ones, and of a record removed after the
// newest: see Notes.
func (r *ChainReport) Intact() bool { return len(r.Problems) == 0 }

// version is one distinct content (digest) of a record, and where it is.
type version struct {
	digest  string
	link    *Link
	sources []string
}

type record struct {
	id         string
	versions   []*version
	startedAt  time.Time
	unfinished bool
	clusters   map[string]bool
}

func (r *record) chained() bool {
	return slices.ContainsFunc(r.versions, func(v *version) bool { return v.link != nil })
}

// seq is the record's sequence number (of its first chained version).
func (r *record) seq() int64 {
	for _, v := range r.versions {
		if v.link != nil {
			return v.link.Seq
		}
	}
	return 0
}

// VerifyChain checks the hash chain of one topology's drill records from
// every copy read of them.
//
// For each chained record R with a predecessor P (R's link names P's id
// and digest): P must be held somewhere (else P was removed), every copy of
// P must have the digest R recorded (else that copy was edited), and P's
// sequence number must be R's less one. Two records with one sequence
// number are a fork. A record no later record vouches for (the newest)
// is judged by its copies only: copies that differ are a problem, as is
// any signature that does not verify. A cluster that lacks a record while
// it holds later ones is a note: the other copies hold it.
func VerifyChain(copies []Copy) *ChainReport {
	recs := map[string]*record{}
	clusterMax := map[string]int64{}
	for _, c := range copies {
		r := recs[c.ID]
		if r == nil {
			r = &record{id: c.ID, startedAt: c.StartedAt, clusters: map[string]bool{}}
			recs[c.ID] = r
		}
		if c.Cluster {
			r.clusters[c.Source] = true
			if c.Link != nil {
				clusterMax[c.Source] = max(clusterMax[c.Source], c.Link.Seq)
			}
		}
		if c.Unfinished && c.Link == nil {
			r.unfinished = true
			continue
		}
		i := slices.IndexFunc(r.versions, func(v *version) bool { return v.digest == c.Digest })
		if i < 0 {
			r.versions = append(r.versions, &version{digest: c.Digest, link: c.Link})
			i = len(r.versions) - 1
		}
		r.versions[i].sources = append(r.versions[i].sources, c.Source)
	}
	rep := &ChainReport{Problems: []Problem{}}
	var chained []*record
	for _, r := range recs {
		if r.chained() {
			chained = append(chained, r)
		}
	}
	slices.SortFunc(chained, func(a, b *record) int { return cmp.Or(cmp.Compare(a.seq(), b.seq()), strings.Compare(a.id, b.id)) })
	rep.Chained = len(chained)
	if len(chained) > 0 {
		rep.FirstID, rep.FirstSeq = chained[0].id, chained[0].seq()
		last := chained[len(chained)-1]
		rep.NewestID, rep.NewestSeq = last.id, last.seq()
	}

	// vouched[P][digest] lists the records whose link names P with digest.
	vouched := map[string]map[string][]string{}
	for _, r := range chained {
		for _, v := range r.versions {
			if v.link != nil && v.link.PrevID != "" {
				if vouched[v.link.PrevID] == nil {
					vouched[v.link.PrevID] = map[string][]string{}
				}
				vouched[v.link.PrevID][v.link.PrevDigest] = append(vouched[v.link.PrevID][v.link.PrevDigest], r.id)
			}
		}
	}
	add := func(p Problem) { rep.Problems = append(rep.Problems, p) }
	bySeq := map[int64][]string{}
	for _, r := range chained {
		seq := r.seq()
		name := fmt.Sprintf("%s (seq %d)", r.id, seq)
		bySeq[seq] = append(bySeq[seq], r.id)
		accepted := r.versions
		if vs := vouched[r.id]; len(vs) > 0 {
			var ok []*version
			for _, v := range r.versions {
				if _, hit := vs[v.digest]; hit {
					ok = append(ok, v)
				} else {
					add(Problem{ID: r.id, Seq: seq, Kind: ProblemEdited, Sources: v.sources, Message: fmt.Sprintf(
						"%s was edited on %s: its digest %s is not %s, which %s recorded for it", name, strings.Join(v.sources, ", "), v.digest,
						strings.Join(slices.Sorted(maps.Keys(vs)), " or "), strings.Join(vouchers(vs), ", "))})
				}
			}
			if len(ok) > 0 {
				accepted = ok
			}
		} else if len(r.versions) > 1 {
			var ds []string
			for _, v := range r.versions {
				ds = append(ds, strings.Join(v.sources, ", ")+" "+v.digest)
			}
			add(Problem{ID: r.id, Seq: seq, Kind: ProblemEdited, Message: fmt.Sprintf(
				"the copies of %s differ (%s): one was edited, and no later record vouches for either", name, strings.Join(ds, "; "))})
		}
		seen := map[Link]bool{}
		for _, v := range accepted {
			if v.link == nil || seen[*v.link] {
				continue
			}
			seen[*v.link] = true
			checkLink(r.id, *v.link, recs, add)
		}
		for _, c := range slices.Sorted(maps.Keys(clusterMax)) {
			if top := clusterMax[c]; top > seq && !r.clusters[c] {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s is not on %s, which holds later records of the chain: %s did not take it when it was recorded, or it was removed there; the other copies hold it", name, c, c))
			}
		}
	}
	// A sequence number nothing holds and no later record names: removed
	// with the record after it, so its id is not known.
	covered := map[int64]bool{}
	for seq := range bySeq {
		covered[seq] = true
	}
	for _, p := range rep.Problems {
		if p.Kind == ProblemRemoved {
			covered[p.Seq] = true
		}
	}
	for seq := int64(1); seq < rep.NewestSeq; seq++ {
		if !covered[seq] {
			add(Problem{Seq: seq, Kind: ProblemRemoved, Message: fmt.Sprintf(
				"the record at seq %d was removed: no copy holds it, and the record after it is gone too, so its id is not known", seq)})
		}
	}
	for _, seq := range slices.Sorted(maps.Keys(bySeq)) {
		if ids := bySeq[seq]; len(ids) > 1 {
			add(Problem{ID: ids[1], Seq: seq, Kind: ProblemFork, Message: fmt.Sprintf(
				"%s all claim seq %d: records chained from two places at once, or one was inserted", strings.Join(ids, ", "), seq)})
		}
	}
	if len(chained) > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s (seq %d) is the newest chained record: no later record vouches for it, so its copies and its signature are what show it unchanged, and a record removed after it would not be seen here",
			rep.NewestID, rep.NewestSeq))
	}
	var firstAt time.Time
	if len(chained) > 0 {
		firstAt = chained[0].startedAt
	}
	for _, r := range recs {
		if r.chained() {
			continue
		}
		u := Unchained{ID: r.id, StartedAt: r.startedAt, Unfinished: r.unfinished && len(r.versions) == 0}
		u.AfterStart = len(chained) > 0 && !u.Unfinished && r.startedAt.After(firstAt)
		rep.Unchained = append(rep.Unchained, u)
	}
	slices.SortFunc(rep.Unchained, func(a, b Unchained) int { return cmp.Or(a.StartedAt.Compare(b.StartedAt), strings.Compare(a.ID, b.ID)) })
	signatures(copies, recs, rep, add)
	return rep
}

// checkLink checks one link of record id: its predecessor is held, and
// comes right before it.
func checkLink(id string, l Link, recs map[string]*record, add func(Problem)) {
	name := fmt.Sprintf("%s (seq %d)", id, l.Seq)
	switch {
	case l.Seq < 1:
		add(Problem{ID: id, Seq: l.Seq, Kind: ProblemLink, Message: fmt.Sprintf("%s has a sequence number below 1", name)})
		return
	case l.Seq == 1 && l.PrevID != "":
		add(Problem{ID: id, Seq: l.Seq, Kind: ProblemLink, Message: fmt.Sprintf("%s starts the chain but names %s before it", name, l.PrevID)})
		return
	case l.Seq > 1 && l.PrevID == "":
		add(Problem{ID: id, Seq: l.Seq, Kind: ProblemLink, Message: fmt.Sprintf("%s names no record before it", name)})
		return
	case l.Seq == 1:
		return
	}
	p := recs[l.PrevID]
	if p == nil || len(p.versions) == 0 {
		add(Problem{ID: l.PrevID, Seq: l.Seq - 1, Kind: ProblemRemoved, Message: fmt.Sprintf(
			"%s (seq %d) was removed: %s names it as the record before it, and no cluster or local journal holds it", l.PrevID, l.Seq-1, name)})
		return
	}
	if s := p.seq(); s != l.Seq-1 {
		add(Problem{ID: id, Seq: l.Seq, Kind: ProblemLink, Message: fmt.Sprintf("%s follows %s, whose seq is %d, not %d", name, l.PrevID, s, l.Seq-1)})
	}
}

// vouchers lists the records that vouch for a predecessor, whatever the
// digest they recorded.
func vouchers(vs map[string][]string) []string {
	var out []string
	for _, d := range slices.Sorted(maps.Keys(vs)) {
		out = append(out, vs[d]...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// signatures adds the signature problems of chained records' copies and
// counts the signed and checked records.
func signatures(copies []Copy, recs map[string]*record, rep *ChainReport, add func(Problem)) {
	signed, checked := map[string]bool{}, map[string]bool{}
	unchecked := map[string]bool{}
	for _, c := range copies {
		r := recs[c.ID]
		if r == nil || !r.chained() || !c.Signed {
			continue
		}
		signed[c.ID] = true
		switch {
		case c.SignatureProblem != "":
			add(Problem{ID: c.ID, Seq: r.seq(), Kind: ProblemSignature, Sources: []string{c.Source}, Message: fmt.Sprintf(
				"%s (seq %d) on %s: %s", c.ID, r.seq(), c.Source, c.SignatureProblem)})
			unchecked[c.ID] = true
		case c.SignatureChecked:
			checked[c.ID] = true
		default:
			unchecked[c.ID] = true
		}
	}
	rep.Signed = len(signed)
	for id := range checked {
		if !unchecked[id] {
			rep.SignaturesChecked++
		}
	}
}
