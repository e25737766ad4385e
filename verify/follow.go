package verify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/topology"
)

// FollowOptions tune Follow.
type FollowOptions struct {
	// Verify is the topology's mirror.verify: the mode, N of sample mode
	// and the pause between rounds.
	Verify topology.MirrorVerify
	// Metrics, when set, receive each round's figures.
	Metrics *Metrics
	// Leads, when set, says whether this process verifies the link now:
	// of the processes that share a link, one does (the mirror daemon
	// passes "owns shard 0"). Nil: always.
	Leads func() bool
	// Logger receives what goes wrong (nil: nothing is logged).
	Logger *slog.Logger
	// Round, when set, is called with each round's report once its
	// watermarks are stored (tests).
	Round func(*Report)
}

// Follow verifies, round after round until ctx ends, what the link's
// mirror copied since the last round, and keeps each partition's
// watermark (linkstate.Proof) on the link's target: a restart resumes
// from it, not from the partition's start. It reads both clusters through
// clusters, never the mirror's memory, and writes only the proof records.
//
// A round runs Run from each partition's watermark up to the mirror's
// position in the offset map. A difference is counted once: the round
// after it starts past it, and the watermark's Proven stays where the
// first difference was found. A round that fails (a cluster unreachable)
// is retried after the interval; Follow returns only when ctx ends (nil)
// or when the mode is off (at once).
func Follow(ctx context.Context, clusters *kafkaconn.Clusters, link topology.Link, opts FollowOptions) error {
	cfg := opts.Verify
	if cfg.Mode == topology.VerifyOff || cfg.Mode == "" {
		return nil
	}
	if cfg.Interval <= 0 {
		cfg.Interval = topology.DefaultVerifyInterval
	}
	sample := 1
	if cfg.Mode == topology.VerifySample {
		sample = max(cfg.Sample, 2)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	defer opts.Metrics.ForgetLink(link.String())
	st := &followState{counted: map[topology.TopicPartition]int64{}}
	for {
		if opts.Leads == nil || opts.Leads() {
			if err := st.round(ctx, clusters, link, sample, opts); err != nil && ctx.Err() == nil {
				st.forget()
				if !errors.Is(err, ErrNoSuchPartition) {
					log.Warn("verifier: round failed; retrying", "link", link.String(), "err", err)
				}
				clusters.Redial(ctx, link.Source, link.Target)
			}
		} else {
			// Another process leads: its watermarks move on the target,
			// read them again when this one leads.
			st.forget()
		}
		t := time.NewTimer(cfg.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// followState is what a verifier keeps from one round to the next.
type followState struct {
	// proofs are the watermarks as they stand on the target (nil: read
	// them first), in its proof topic of id proofID ("" before the first
	// write created it).
	proofs  map[topology.TopicPartition]linkstate.Proof
	proofID string
	// offsets is the link's offset map, read on from round to round: a
	// long-lived link's map holds millions of runs. It is read anew after
	// a failed round and every hour.
	offsets *offsettranslate.Follower
	since   time.Time
	// counted holds, per partition, the differences the process's
	// drctl_verify_differences_total holds: when the watermarks are read
	// from the target, the counter is brought up to the link's record (a
	// restarted verifier, or one that leads again, says what the record
	// says), so it stays above zero until the standby is re-seeded.
	counted map[topology.TopicPartition]int64
}

// forget drops what was read from the target: the next round reads it
// again.
func (st *followState) forget() { st.proofs, st.offsets = nil, nil }

// round runs one round and stores its watermarks.
func (st *followState) round(ctx context.Context, clusters *kafkaconn.Clusters, link topology.Link, sample int, opts FollowOptions) error {
	dst, err := clusters.Need(link.Target)
	if err != nil {
		return err
	}
	if st.offsets == nil || time.Since(st.since) > time.Hour {
		st.offsets, st.since = offsettranslate.NewFollower(link.OffsetsTopic()), time.Now()
	}
	// A standby that lost its data (replaced, or drctl's topics deleted)
	// lost the watermarks too: the mirror copies everything again, and the
	// verifier must start over rather than resume from memory.
	info, err := kafkaread.Topic(ctx, dst, link.ProofTopic())
	if err != nil {
		return fmt.Errorf("standby %s: %w", link.Target, err)
	}
	if st.proofs != nil && st.proofID != "" && info.ID != st.proofID {
		return fmt.Errorf("standby %s: the verifier's watermarks (%s) are gone or were recreated: starting over", link.Target, link.ProofTopic())
	}
	st.proofID = info.ID
	if st.proofs == nil {
		if st.proofs, err = linkstate.ReadProofs(ctx, dst, link); err != nil {
			return fmt.Errorf("standby %s: the verifier's watermarks: %w", link.Target, err)
		}
		for tp, p := range st.proofs {
			if n := p.Differences - st.counted[tp]; n > 0 {
				opts.Metrics.observe(link.String(), tp, p.Proven, 0, 0, n)
				st.counted[tp] = p.Differences
			}
		}
	}
	proofs, counted, offsets := st.proofs, st.counted, st.offsets
	vo := DefaultOptions()
	vo.Sample, vo.Details, vo.Parallel, vo.Map = sample, 1, 2, offsets
	vo.Resume = make(map[topology.TopicPartition]Resume, len(proofs))
	for tp, p := range proofs {
		if p.Next >= 0 {
			vo.Resume[tp] = Resume{Source: p.Next, Target: p.TargetChecked}
		}
	}
	rep, err := Run(ctx, clusters, link, vo)
	if err != nil {
		return err
	}
	mode := string(topology.VerifyFull)
	if sample > 1 {
		mode = string(topology.VerifySample)
	}
	now := time.Now().UTC()
	var changed []linkstate.Proof
	for _, pr := range rep.Partitions {
		tp := topology.TopicPartition{Topic: pr.Topic, Partition: pr.Partition}
		p, seen := proofs[tp]
		if pr.Status == NotVerified && pr.Differences == 0 {
			// Nothing to compare yet (no map), or a read failed: the
			// watermark stays; a later round tries again.
			continue
		}
		if !seen {
			p = linkstate.Proof{Topic: tp.Topic, Partition: tp.Partition, From: pr.SourceFrom, Proven: pr.SourceFrom, Checked: pr.SourceFrom, Next: pr.SourceFrom}
		}
		p.Mode, p.Sample = mode, sample
		behind := pr.SourceTo - p.Checked
		if pr.Status == NotVerified {
			behind = 0
		}
		clean := p.Differences == 0
		switch {
		case clean && pr.Differences == 0:
			p.Proven = max(p.Proven, pr.SourceTo)
		case clean && sample <= 1 && pr.ProvenSourceTo >= 0:
			p.Proven = max(p.Proven, pr.ProvenSourceTo)
		}
		if pr.Differences > 0 && p.FirstDifference == "" && len(pr.Details) > 0 {
			d := pr.Details[0]
			p.FirstDifference = fmt.Sprintf("%s: source offset %d, standby offset %d: %s", d.Kind, d.SourceOffset, d.TargetOffset, d.Why)
		}
		p.Records += pr.Compared
		p.Differences += pr.Differences
		if pr.Status != NotVerified {
			start := pr.SourceFrom
			if r, ok := vo.Resume[tp]; ok {
				start = max(start, r.Source)
			}
			p.Next = max(p.Next, pr.SourceTo)
			if sample > 1 {
				// The next sampled record: the round sampled every
				// Nth mapped record from start (offsets the map skips
				// make this slightly sparser than 1 in N).
				p.Next = start
				if pr.SourceRecords > 0 {
					p.Next = start + (pr.SourceRecords+int64(sample)-1)/int64(sample)*int64(sample)
				}
			}
			p.Checked = max(p.Checked, pr.SourceTo)
			p.TargetChecked = max(p.TargetChecked, pr.TargetTo)
		}
		opts.Metrics.observe(rep.Link, tp, p.Proven, behind, pr.Compared, pr.Differences)
		counted[tp] += pr.Differences
		if p != proofs[tp] {
			p.At = now
			changed = append(changed, p)
			proofs[tp] = p
		}
	}
	p, err := clusters.Producer(link.Target)
	if err != nil {
		return err
	}
	if err := linkstate.WriteProofs(ctx, dst, p, link, changed); err != nil {
		return fmt.Errorf("standby %s: %w", link.Target, err)
	}
	if st.proofID == "" && len(changed) > 0 {
		// The first write created the topic.
		if info, err := kafkaread.Topic(ctx, dst, link.ProofTopic()); err == nil {
			st.proofID = info.ID
		}
	}
	if opts.Round != nil {
		opts.Round(rep)
	}
	return nil
}
