package linkstate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/topology"
)

// State is what the clusters say about a link, for status: the mirror
// processes in its worker group and its lag.
type State struct {
	Link string `json:"link" yaml:"link"`
	// Running is true when at least one mirror process is in the link's
	// worker group on the target.
	Running    bool   `json:"running" yaml:"running"`
	Workers    int    `json:"workers" yaml:"workers"`
	GroupState string `json:"group_state" yaml:"group_state"`
	// LagRecords and LagSeconds total the link's lag (see MeasureLag).
	LagRecords int64   `json:"lag_records" yaml:"lag_records"`
	LagSeconds float64 `json:"lag_seconds" yaml:"lag_seconds"`
	// LostRecords counts records the source removed before the mirror
	// copied them (see PartitionLag.Lost).
	LostRecords int64 `json:"lost_records" yaml:"lost_records"`
	// Losses, LostUnacknowledged and LossesError: the recorded losses no
	// operator has acknowledged (see LagReport).
	Losses             []LostRange `json:"losses,omitempty" yaml:"losses,omitempty"`
	LostUnacknowledged int64       `json:"lost_unacknowledged" yaml:"lost_unacknowledged"`
	LossesError        string      `json:"losses_error,omitempty" yaml:"losses_error,omitempty"`
	// PartitionErrors maps each partition the mirror cannot copy
	// ("topic/partition") to why (see PartitionLag.Error).
	PartitionErrors map[string]string `json:"partition_errors,omitempty" yaml:"partition_errors,omitempty"`
	// TopicChanges and Reset: see LagReport.
	TopicChanges []TopicChange `json:"topic_changes,omitempty" yaml:"topic_changes,omitempty"`
	Reset        string        `json:"reset,omitempty" yaml:"reset,omitempty"`
	// Proof is what the mirror's verifier recorded on the target (nil:
	// no verifier ran for the link, or it recorded nothing yet).
	Proof *ProofSummary `json:"proof,omitempty" yaml:"proof,omitempty"`
	Error string        `json:"error,omitempty" yaml:"error,omitempty"`
}

// ProofSummary adds up the mirror verifier's records of a link
// (linkstate.Proof): how much of the standby it compared and what
// differed.
type ProofSummary struct {
	// Partitions counts the partitions with a record; Records the copies
	// compared, Differences the differences found.
	Partitions  int   `json:"partitions" yaml:"partitions"`
	Records     int64 `json:"records" yaml:"records"`
	Differences int64 `json:"differences" yaml:"differences"`
	// Differing are the records of the partitions with a difference.
	Differing []Proof `json:"differing,omitempty" yaml:"differing,omitempty"`
	// Error says why the records could not be read.
	Error string `json:"error,omitempty" yaml:"error,omitempty"`
}

// SummarizeProofs adds up proofs (nil when there are none).
func SummarizeProofs(proofs map[topology.TopicPartition]Proof) *ProofSummary {
	if len(proofs) == 0 {
		return nil
	}
	s := &ProofSummary{Partitions: len(proofs), Differing: Differing(proofs)}
	for _, p := range proofs {
		s.Records += p.Records
		s.Differences += p.Differences
	}
	return s
}

// StandbyDiffers is the one line that says the verifier found the
// standby different from the source ("" when it did not).
func (s *ProofSummary) StandbyDiffers(link string) string {
	if s == nil || s.Differences == 0 {
		return ""
	}
	shown := make([]string, 0, 3)
	for _, p := range s.Differing[:min(3, len(s.Differing))] {
		shown = append(shown, fmt.Sprintf("%s (%s)", p.TopicPartition(), p.FirstDifference))
	}
	if n := len(s.Differing) - len(shown); n > 0 {
		shown = append(shown, fmt.Sprintf("and %d more partition(s)", n))
	}
	first := s.Differing[0]
	return fmt.Sprintf("mirror %s: the standby differs from the source: the mirror's verifier found %d difference(s) on %d partition(s): %s; see them with drctl verify --topic %s --partition %d",
		link, s.Differences, len(s.Differing), strings.Join(shown, "; "), first.Topic, first.Partition)
}

// Describe reads the link's worker group on the target and measures its
// lag, through the command's session (its clients of the link's clusters,
// dialled only if the session has not yet). Problems are reported in
// Error; it never fails as a whole.
func Describe(ctx context.Context, clusters *kafkaconn.Clusters, link topology.Link) State {
	ls, _ := DescribeLag(ctx, clusters, link)
	return ls
}

// DescribeLag is Describe that also returns the per-partition lag it
// measured (nil when it could not), for callers that show both (status,
// the TUI) without measuring twice.
func DescribeLag(ctx context.Context, clusters *kafkaconn.Clusters, link topology.Link) (State, *LagReport) {
	ls := State{Link: link.String()}
	clusters.Connect(ctx, link.Target)
	dst, err := clusters.Need(link.Target)
	if err != nil {
		ls.Error = err.Error()
		return ls, nil
	}
	admin, err := sarama.NewClusterAdminFromClient(dst)
	if err != nil {
		ls.Error = err.Error()
		return ls, nil
	}
	descs, err := admin.DescribeConsumerGroups([]string{link.WorkersGroup()})
	if err != nil {
		ls.Error = fmt.Sprintf("describe worker group: %v", err)
		return ls, nil
	}
	if len(descs) == 1 {
		ls.GroupState, ls.Workers = descs[0].State, len(descs[0].Members)
		ls.Running = ls.Workers > 0
	}
	rep, err := MeasureLag(ctx, clusters, link)
	if err != nil {
		ls.Error = err.Error()
		return ls, nil
	}
	ls.LagRecords, ls.LagSeconds, ls.LostRecords = rep.TotalRecords, rep.MaxSeconds, rep.TotalLost
	ls.TopicChanges, ls.Reset = rep.TopicChanges, rep.Reset
	ls.Losses, ls.LostUnacknowledged, ls.LossesError = rep.Losses, rep.LostUnacknowledged, rep.LossesError
	if proofs, err := ReadProofs(ctx, dst, link); err != nil {
		ls.Proof = &ProofSummary{Error: fmt.Sprintf("the mirror verifier's records: %v", err)}
	} else {
		ls.Proof = SummarizeProofs(proofs)
	}
	for _, p := range rep.Partitions {
		if p.Error != "" {
			if ls.PartitionErrors == nil {
				ls.PartitionErrors = map[string]string{}
			}
			ls.PartitionErrors[topology.TopicPartition{Topic: p.Topic, Partition: p.Partition}.String()] = p.Error
		}
	}
	return ls, rep
}

// Problems lists, one line each and sorted, what the link cannot copy or
// copied again: the partitions the target refuses, the topics deleted or
// recreated on the source, and the last reset of its target.
func (ls State) Problems() []string {
	var out []string
	for tp, msg := range ls.PartitionErrors {
		out = append(out, fmt.Sprintf("mirror %s: %s cannot be copied: %s", ls.Link, tp, msg))
	}
	slices.Sort(out)
	for _, c := range ls.TopicChanges {
		out = append(out, fmt.Sprintf("mirror %s: topic %s %s", ls.Link, c.Topic, c.Message))
	}
	if ls.Reset != "" {
		out = append(out, fmt.Sprintf("mirror %s: %s", ls.Link, ls.Reset))
	}
	if line := LossesProblem(ls.Link, ls.Losses); line != "" {
		out = append(out, line)
	}
	if ls.LossesError != "" {
		out = append(out, fmt.Sprintf("mirror %s: %s", ls.Link, ls.LossesError))
	}
	if line := ls.Proof.StandbyDiffers(ls.Link); line != "" {
		out = append(out, line)
	}
	if ls.Proof != nil && ls.Proof.Error != "" {
		out = append(out, fmt.Sprintf("mirror %s: %s", ls.Link, ls.Proof.Error))
	}
	return out
}

// LossesProblem is the one line that says a link holds unacknowledged
// losses ("" when none): how many records, the first ranges, and the fix.
func LossesProblem(link string, losses []LostRange) string {
	if len(losses) == 0 {
		return ""
	}
	shown := make([]string, 0, 3)
	for _, r := range losses[:min(3, len(losses))] {
		shown = append(shown, r.String())
	}
	if n := len(losses) - len(shown); n > 0 {
		shown = append(shown, fmt.Sprintf("and %d more range(s)", n))
	}
	return fmt.Sprintf("mirror %s: %d source record(s) in %d range(s) were removed by retention before they were mirrored: %s (the standby never had them; once they are dealt with, drctl mirror ack-lost)",
		link, TotalLost(losses), len(losses), strings.Join(shown, ", "))
}
