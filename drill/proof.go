package drill

import (
	"context"
	"fmt"
	"time"

	"github.com/drctl/drctl/verify"
)

// Proof is what a role change proved at its flip: the new active's copy of
// the canary topic compared, record by record, with the old active's
// records through the offset map of the link that copied them (package
// verify, on the link the flip retired), after the flip and before the
// run wipes the old active. It covers the canary topic only: verifying
// every mirrored topic at each drill would cost a full read of both
// clusters; drctl verify does that on demand.
type Proof struct {
	Link  string `json:"link" yaml:"link"`
	Topic string `json:"topic" yaml:"topic"`
	// Partitions counts the topic's partitions; Identical those proven
	// identical, Differing those with a difference, NotVerified those
	// that could not be compared (Reasons say why).
	Partitions  int `json:"partitions" yaml:"partitions"`
	Identical   int `json:"identical" yaml:"identical"`
	Differing   int `json:"differing" yaml:"differing"`
	NotVerified int `json:"not_verified" yaml:"not_verified"`
	// SourceRecords counts the committed source records in the ranges,
	// Compared those compared with their copy, Differences the
	// differences found.
	SourceRecords int64 `json:"source_records" yaml:"source_records"`
	Compared      int64 `json:"compared" yaml:"compared"`
	Differences   int64 `json:"differences" yaml:"differences"`
	// Ranges are the stretches proven identical: source [SourceFrom,
	// SourceTo) = target [TargetFrom, TargetTo).
	Ranges []ProvenRange `json:"ranges,omitempty" yaml:"ranges,omitempty"`
	// Reasons say why a partition was not verified, and the first
	// differences; Notes what bounds a proven range (the source offsets
	// the link never copied: an unplanned failover's RPO).
	Reasons []string `json:"reasons,omitempty" yaml:"reasons,omitempty"`
	Notes   []string `json:"notes,omitempty" yaml:"notes,omitempty"`
	// Error says why the check could not run at all.
	Error string `json:"error,omitempty" yaml:"error,omitempty"`
}

// ProvenRange is one partition's stretch proven identical.
type ProvenRange struct {
	Partition  int32 `json:"partition" yaml:"partition"`
	SourceFrom int64 `json:"source_from" yaml:"source_from"`
	SourceTo   int64 `json:"source_to" yaml:"source_to"`
	TargetFrom int64 `json:"target_from" yaml:"target_from"`
	TargetTo   int64 `json:"target_to" yaml:"target_to"`
}

// Proven reports whether every partition was proven identical.
func (p *Proof) Proven() bool {
	return p != nil && p.Error == "" && p.Partitions > 0 && p.Identical == p.Partitions
}

// proveWithin bounds the comparison at the flip: the run waits for it (a
// hook has 30 s), and the canary topic holds hours of small records at
// most.
const proveWithin = 20 * time.Second

// proveCopied compares, once dir's run has flipped the roles and before it
// wipes the old active, the canary topic on dir.To with what the link
// dir.From -> dir.To copied of it, and notes the proof on dir. It reads
// only.
func (x *failoverDrill) proveCopied(ctx context.Context, dir *Direction) {
	link := x.topo.Link(dir.From, dir.To)
	p := &Proof{Link: link.String(), Topic: x.topo.CanaryTopic()}
	dir.Proof = p
	ctx, cancel := context.WithTimeout(ctx, proveWithin)
	defer cancel()
	x.clusters.Redial(ctx, dir.From, dir.To)
	opts := verify.DefaultOptions()
	opts.Topic, opts.Retired, opts.Details = p.Topic, true, 3
	rep, err := verify.Run(ctx, x.clusters, link, opts)
	if err != nil {
		p.Error = err.Error()
		return
	}
	noteProof(p, rep)
}

func noteProof(p *Proof, rep *verify.Report) {
	for _, pr := range rep.Partitions {
		p.Partitions++
		p.SourceRecords += pr.SourceRecords
		p.Compared += pr.Compared
		p.Differences += pr.Differences
		switch pr.Status {
		case verify.Identical:
			p.Identical++
			p.Ranges = append(p.Ranges, ProvenRange{Partition: pr.Partition, SourceFrom: pr.SourceFrom, SourceTo: pr.ProvenSourceTo,
				TargetFrom: pr.TargetFrom, TargetTo: pr.ProvenTargetTo})
			if pr.Reason != "" {
				p.Notes = append(p.Notes, fmt.Sprintf("%s/%d: %s", pr.Topic, pr.Partition, pr.Reason))
			}
		case verify.Differs:
			p.Differing++
			for _, d := range pr.Details {
				p.Reasons = append(p.Reasons, fmt.Sprintf("%s/%d: %s", pr.Topic, pr.Partition, d.Why))
			}
		default:
			p.NotVerified++
			p.Reasons = append(p.Reasons, fmt.Sprintf("%s/%d not verified: %s", pr.Topic, pr.Partition, pr.Reason))
		}
	}
}
