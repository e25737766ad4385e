package drill

import (
	"fmt"
	"time"

	"github.com/drctl/drctl/drill/evidence"
	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// Verdict is a drill's outcome.
type Verdict string

const (
	Pass Verdict = "pass"
	Fail Verdict = "fail"
)

// Record is the evidence of one drill: what ran, when, by whom, each step
// with its timing, the measurements and the verdict with its reasons. Its
// JSON form is stable (docs/drills.md); fields are only ever added.
type Record struct {
	ID             string    `json:"id" yaml:"id"`
	Drill          string    `json:"drill" yaml:"drill"`
	Kind           string    `json:"kind" yaml:"kind"`
	Topology       string    `json:"topology" yaml:"topology"`
	TopologyDigest string    `json:"topology_digest" yaml:"topology_digest"`
	By             string    `json:"by" yaml:"by"`
	StartedAt      time.Time `json:"started_at" yaml:"started_at"`
	// ScheduledFor is the schedule's time the drill ran for (absent when
	// run by hand).
	ScheduledFor *time.Time `json:"scheduled_for,omitempty" yaml:"scheduled_for,omitempty"`
	FinishedAt   time.Time  `json:"finished_at" yaml:"finished_at"`
	Active       string     `json:"active" yaml:"active"`
	Standby      string     `json:"standby" yaml:"standby"`
	Objectives   Objectives `json:"objectives" yaml:"objectives"`
	Steps        []Step     `json:"steps" yaml:"steps"`

	Canary    *CanaryResult    `json:"canary,omitempty" yaml:"canary,omitempty"`
	GroupSync *GroupSyncResult `json:"group_sync,omitempty" yaml:"group_sync,omitempty"`
	Preflight *PreflightResult `json:"preflight,omitempty" yaml:"preflight,omitempty"`
	RPO       *RPO             `json:"rpo,omitempty" yaml:"rpo,omitempty"`
	RTO       *RTO             `json:"rto,omitempty" yaml:"rto,omitempty"`
	// Directions holds, for a failover drill, the failover and the
	// failback.
	Directions []Direction `json:"directions,omitempty" yaml:"directions,omitempty"`

	Verdict Verdict  `json:"verdict" yaml:"verdict"`
	Reasons []string `json:"reasons" yaml:"reasons"`

	// Unfinished marks the record a disruptive drill stores before its
	// first change: it is replaced by the result, so one that stays is a
	// drill that was killed (or still runs). RunIDs are the role changes
	// (failover runs) it started, each recorded before it started: the
	// next disruptive drill or drctl resume restores the roles it found
	// only when no other run changed them since it started.
	Unfinished bool     `json:"unfinished,omitempty" yaml:"unfinished,omitempty"`
	RunIDs     []string `json:"run_ids,omitempty" yaml:"run_ids,omitempty"`
	// Next is, for a failed disruptive drill, the one command to run next
	// and why (drctl resume RUN-ID, drctl resume, or drctl status when
	// nothing is left to undo), read from the clusters as the drill left
	// them.
	Next string `json:"next,omitempty" yaml:"next,omitempty"`

	// Chain links the record to the one recorded before it for the
	// topology (see Store and drctl drill history --verify). Absent in a
	// started (unfinished) record and in records made before drctl
	// chained them.
	Chain *evidence.Link `json:"chain,omitempty" yaml:"chain,omitempty"`

	// canonical is the record's canonical JSON as stored or read, the
	// envelope that signs it (nil: none), and how its signature was
	// checked (see Seal).
	canonical            []byte
	envelope             *evidence.Envelope
	sigCheck, sigProblem string
}

// Objectives are the targets the verdict was judged against (0: none).
type Objectives struct {
	RPOSeconds         float64 `json:"rpo_seconds,omitempty" yaml:"rpo_seconds,omitempty"`
	RTOSeconds         float64 `json:"rto_seconds,omitempty" yaml:"rto_seconds,omitempty"`
	MaxCanaryLatencyMS float64 `json:"max_canary_latency_ms,omitempty" yaml:"max_canary_latency_ms,omitempty"`
}

func objectivesOf(d *topology.NamedDrill) Objectives {
	return Objectives{RPOSeconds: d.Objectives.RPOSeconds, RTOSeconds: d.Objectives.RTOSeconds,
		MaxCanaryLatencyMS: float64(d.Objectives.MaxCanaryLatency) / float64(time.Millisecond)}
}

// Step is one step of the drill's plan as it ran.
type Step struct {
	Name      string    `json:"name" yaml:"name"`
	Title     string    `json:"title" yaml:"title"`
	StartedAt time.Time `json:"started_at" yaml:"started_at"`
	ElapsedMS int64     `json:"elapsed_ms" yaml:"elapsed_ms"`
	// Status is done, failed or skipped.
	Status  string `json:"status" yaml:"status"`
	Summary string `json:"summary,omitempty" yaml:"summary,omitempty"`
	Error   string `json:"error,omitempty" yaml:"error,omitempty"`
}

// CanaryResult is what the canary records showed.
type CanaryResult struct {
	Topic    string `json:"topic" yaml:"topic"`
	Source   string `json:"source" yaml:"source"`
	Target   string `json:"target" yaml:"target"`
	Sent     int    `json:"sent" yaml:"sent"`
	Received int    `json:"received" yaml:"received"`
	// Missing counts sequence numbers never read on the target (gaps),
	// Duplicates the extra copies read, OutOfOrder the records read after
	// a higher sequence number.
	Missing      int     `json:"missing" yaml:"missing"`
	Duplicates   int     `json:"duplicates" yaml:"duplicates"`
	OutOfOrder   int     `json:"out_of_order" yaml:"out_of_order"`
	LatencyP50MS float64 `json:"latency_p50_ms" yaml:"latency_p50_ms"`
	LatencyP99MS float64 `json:"latency_p99_ms" yaml:"latency_p99_ms"`
	LatencyMaxMS float64 `json:"latency_max_ms" yaml:"latency_max_ms"`
	// Samples are (a bounded selection of) the records' latencies in send
	// order, for the report's chart.
	Samples []Sample `json:"samples,omitempty" yaml:"samples,omitempty"`
	// WaitedMS is how long the target was read for.
	WaitedMS int64 `json:"waited_ms" yaml:"waited_ms"`
}

// Sample is one canary record's replication latency.
type Sample struct {
	Seq       int       `json:"seq" yaml:"seq"`
	SentAt    time.Time `json:"sent_at" yaml:"sent_at"`
	LatencyMS float64   `json:"latency_ms" yaml:"latency_ms"`
}

// GroupSyncResult compares the canary group's translated position on the
// standby with the position that points at the very record it would read
// next.
type GroupSyncResult struct {
	Group          string `json:"group" yaml:"group"`
	ActiveOffset   int64  `json:"active_offset" yaml:"active_offset"`
	ExpectedOffset int64  `json:"expected_offset" yaml:"expected_offset"`
	// StandbyOffset is the position found on the standby (-1: none).
	StandbyOffset int64 `json:"standby_offset" yaml:"standby_offset"`
	// ReRead and Skipped count canary records between the standby's
	// position and the exact one.
	ReRead   int   `json:"re_read" yaml:"re_read"`
	Skipped  int   `json:"skipped" yaml:"skipped"`
	Exact    bool  `json:"exact" yaml:"exact"`
	TookMS   int64 `json:"took_ms" yaml:"took_ms"`
	Interval int64 `json:"sync_interval_ms" yaml:"sync_interval_ms"`
	// Skip says why the check did not run.
	Skip string `json:"skip,omitempty" yaml:"skip,omitempty"`
}

// PreflightResult is the planned failover's preflight, run without
// executing.
type PreflightResult struct {
	To       string   `json:"to" yaml:"to"`
	Ready    bool     `json:"ready" yaml:"ready"`
	Problems []string `json:"problems,omitempty" yaml:"problems,omitempty"`
	// Readiness is the "ready to fail over?" verdict status gave at the
	// preflight (absent in records made before it was kept).
	Readiness *inspect.Verdict `json:"readiness,omitempty" yaml:"readiness,omitempty"`
}

// RPO is the recovery point: what the standby would miss if the active were
// lost now.
type RPO struct {
	Records int64   `json:"records" yaml:"records"`
	Seconds float64 `json:"seconds" yaml:"seconds"`
	Link    string  `json:"link" yaml:"link"`
	// LostRecords and Losses are the link's records lost to source
	// retention before they were mirrored that no operator has
	// acknowledged (linkstate.LagReport.Losses), pending or not.
	LostRecords int64                 `json:"lost_records,omitempty" yaml:"lost_records,omitempty"`
	Losses      []linkstate.LostRange `json:"losses,omitempty" yaml:"losses,omitempty"`
	// LossesRead says the link's state was read: no Losses then means
	// none on record. Without it (LossesError says why, or a record from
	// before drills said) nothing is known of them, not that there were
	// none.
	LossesRead  bool   `json:"losses_read" yaml:"losses_read"`
	LossesError string `json:"losses_error,omitempty" yaml:"losses_error,omitempty"`
}

// RTO is a recovery time: measured by a disruptive drill, or estimated from
// the last one that measured it.
type RTO struct {
	Seconds float64 `json:"seconds" yaml:"seconds"`
	// From names the drill whose measurement this is ("" for none yet).
	From      string `json:"from,omitempty" yaml:"from,omitempty"`
	Estimated bool   `json:"estimated" yaml:"estimated"`
}

// Direction is one role move of a failover drill.
type Direction struct {
	From  string `json:"from" yaml:"from"`
	To    string `json:"to" yaml:"to"`
	RunID string `json:"run_id" yaml:"run_id"`
	// RTOWriteSeconds: from the run's start until the new active accepted
	// the canary's writes; RTOConsumeSeconds: until the canary group
	// consumed on the new active.
	RTOWriteSeconds   float64 `json:"rto_write_seconds" yaml:"rto_write_seconds"`
	RTOConsumeSeconds float64 `json:"rto_consume_seconds" yaml:"rto_consume_seconds"`
	RPORecords        int64   `json:"rpo_records" yaml:"rpo_records"`
	// Records counts the canary records acknowledged in this direction's
	// span: what Lost, Duplicated and ReRead are counted of (0 when the
	// drill stopped before its tally; Tallied says whether it ran).
	Records    int  `json:"records" yaml:"records"`
	Tallied    bool `json:"tallied,omitempty" yaml:"tallied,omitempty"`
	Lost       int  `json:"lost" yaml:"lost"`
	Duplicated int  `json:"duplicated" yaml:"duplicated"`
	ReRead     int  `json:"re_read" yaml:"re_read"`
	// FenceVerified is true when the canary's writes to the old active
	// were refused while it was fenced; FenceNote says how the check
	// failed, FenceSkip why there is nothing to check in this setup
	// (fence: none, no canary user).
	FenceVerified bool   `json:"fence_verified" yaml:"fence_verified"`
	FenceNote     string `json:"fence_note,omitempty" yaml:"fence_note,omitempty"`
	FenceSkip     string `json:"fence_skip,omitempty" yaml:"fence_skip,omitempty"`
	Error         string `json:"error,omitempty" yaml:"error,omitempty"`
	// RunError is set when the role change (or what the drill measured
	// right after it) failed: the direction holds what was measured
	// before, and the drill's failed step says why. RunSteps are the run's
	// steps as they ran.
	RunError string `json:"run_error,omitempty" yaml:"run_error,omitempty"`
	RunSteps []Step `json:"run_steps,omitempty" yaml:"run_steps,omitempty"`

	// Losses are the records of the link From -> To the source removed
	// before they were mirrored, on record (kept on To until drctl mirror
	// ack-lost) when the role change ended, or, for an unplanned one, when
	// its run reported its RPO; LostToRetention sums them. They are in
	// neither cluster. LossesRead says the link's state was read (no
	// Losses then means none on record); without it LossesError says why
	// not (or the drill stopped before, or the record is older than the
	// field), and nothing is known of them.
	Losses          []linkstate.LostRange `json:"losses,omitempty" yaml:"losses,omitempty"`
	LostToRetention int64                 `json:"lost_to_retention,omitempty" yaml:"lost_to_retention,omitempty"`
	LossesRead      bool                  `json:"losses_read" yaml:"losses_read"`
	LossesError     string                `json:"losses_error,omitempty" yaml:"losses_error,omitempty"`

	// Unplanned marks the unplanned failover of an unplanned drill. Its
	// RPORecords is what the run reported for the canary topic,
	// RPOAllRecords over every topic and RPOSeconds its time span;
	// UnmirroredAll counts the records the old active's canary partition
	// held that never reached the new active (RPORecords must equal it;
	// an earlier drill's records the mirror had not copied yet count too),
	// Unmirrored this drill's among them, and Salvaged the records the
	// run's salvage put in quarantine (exactly the unmirrored ones, record
	// by record; SalvageMismatch says how not).
	Unplanned bool `json:"unplanned,omitempty" yaml:"unplanned,omitempty"`
	// Proof is the canary topic on To compared record by record with
	// what the link From -> To copied of it, after the run's flip and
	// before its wipe of From (absent: the run stopped before its wipe,
	// or a record older than the field).
	Proof *Proof `json:"proof,omitempty" yaml:"proof,omitempty"`
	// RPOReported says the unplanned run reported its RPO (RPORecords,
	// RPOAllRecords, RPOSeconds); Held counts the records the old active's
	// canary partition held before the failover (what UnmirroredAll is
	// counted of) and Written this drill's records it acknowledged (what
	// Unmirrored is counted of). LostToRetention (above) is apart from
	// RPOAllRecords: records the old active no longer held either.
	RPOReported     bool    `json:"rpo_reported,omitempty" yaml:"rpo_reported,omitempty"`
	Held            int     `json:"held,omitempty" yaml:"held,omitempty"`
	Written         int     `json:"written,omitempty" yaml:"written,omitempty"`
	RPOAllRecords   int64   `json:"rpo_all_records,omitempty" yaml:"rpo_all_records,omitempty"`
	RPOSeconds      float64 `json:"rpo_seconds,omitempty" yaml:"rpo_seconds,omitempty"`
	UnmirroredAll   int     `json:"unmirrored_all,omitempty" yaml:"unmirrored_all,omitempty"`
	Unmirrored      int     `json:"unmirrored,omitempty" yaml:"unmirrored,omitempty"`
	Salvaged        int     `json:"salvaged,omitempty" yaml:"salvaged,omitempty"`
	SalvageMismatch string  `json:"salvage_mismatch,omitempty" yaml:"salvage_mismatch,omitempty"`
}

// noteLosses sets d's losses to source retention from what reading the
// link's state gave: the losses on record, or why they are not known.
func (d *Direction) noteLosses(lost []linkstate.LostRange, err error) {
	if err != nil {
		d.Losses, d.LostToRetention, d.LossesRead = nil, 0, false
		d.LossesError = fmt.Sprintf("the records of %s->%s lost to source retention were not read on %s: %v", d.From, d.To, d.To, err)
		return
	}
	d.Losses, d.LostToRetention, d.LossesRead, d.LossesError = lost, linkstate.TotalLost(lost), true, ""
}

// Passed reports the verdict as a bool.
func (r *Record) Passed() bool { return r.Verdict == Pass }

// Duration is how long the drill ran.
func (r *Record) Duration() time.Duration { return r.FinishedAt.Sub(r.StartedAt) }

// Summary is one line of the history: what `drctl drill history` lists and
// the TUI's Drills view shows.
type Summary struct {
	ID        string    `json:"id" yaml:"id"`
	Drill     string    `json:"drill" yaml:"drill"`
	Kind      string    `json:"kind" yaml:"kind"`
	StartedAt time.Time `json:"started_at" yaml:"started_at"`
	Duration  string    `json:"duration" yaml:"duration"`
	Verdict   Verdict   `json:"verdict" yaml:"verdict"`
	Reasons   []string  `json:"reasons" yaml:"reasons"`
	// Measurements, absent when the drill did not take them.
	RPOSeconds *float64 `json:"rpo_seconds,omitempty" yaml:"rpo_seconds,omitempty"`
	RTOSeconds *float64 `json:"rto_seconds,omitempty" yaml:"rto_seconds,omitempty"`
	// RTOEstimated marks an RTOSeconds this drill did not measure: a
	// canary's estimate from the last drill that did.
	RTOEstimated bool     `json:"rto_estimated,omitempty" yaml:"rto_estimated,omitempty"`
	LatencyP99MS *float64 `json:"latency_p99_ms,omitempty" yaml:"latency_p99_ms,omitempty"`
	// Unfinished: the drill recorded no result (it still runs, or it was
	// killed); Duration then says "unfinished".
	Unfinished bool `json:"unfinished,omitempty" yaml:"unfinished,omitempty"`
	// ChainSeq is the record's place in the topology's hash chain
	// (absent: not chained); Signed says a signature is stored with it
	// (drctl drill history --verify checks both).
	ChainSeq int64 `json:"chain_seq,omitempty" yaml:"chain_seq,omitempty"`
	Signed   bool  `json:"signed,omitempty" yaml:"signed,omitempty"`
}

// Summary returns the record's history line.
func (r *Record) Summary() Summary {
	s := Summary{ID: r.ID, Drill: r.Drill, Kind: r.Kind, StartedAt: r.StartedAt, Duration: r.Duration().Round(time.Millisecond).String(),
		Verdict: r.Verdict, Reasons: r.Reasons, Unfinished: r.Unfinished, Signed: r.envelope != nil}
	if r.Chain != nil {
		s.ChainSeq = r.Chain.Seq
	}
	if r.Unfinished || r.FinishedAt.IsZero() {
		// No result recorded: it still runs, or it was killed. Its length
		// is not known.
		s.Duration = "unfinished"
	}
	if r.RPO != nil {
		v := r.RPO.Seconds
		s.RPOSeconds = &v
	}
	if rto, ok := r.MeasuredRTO(); ok {
		s.RTOSeconds = &rto
	} else if r.RTO != nil && r.RTO.From != "" {
		v := r.RTO.Seconds
		s.RTOSeconds, s.RTOEstimated = &v, r.RTO.Estimated
	}
	if r.Canary != nil && r.Canary.Received > 0 {
		v := r.Canary.LatencyP99MS
		s.LatencyP99MS = &v
	}
	return s
}

// MeasuredRTO is the slowest direction's write RTO of a disruptive drill,
// over the directions that measured one (not those whose run failed).
func (r *Record) MeasuredRTO() (float64, bool) {
	worst, ok := 0.0, false
	for _, d := range r.Directions {
		if d.Error == "" && d.RunError == "" {
			worst, ok = max(worst, d.RTOWriteSeconds), true
		}
	}
	return worst, ok
}
