package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/drctl/drctl/drill"
)

// The Evidence section says, for an auditor, what each figure of the drill
// shows for recovery testing: the run, the objective, the measurement, the
// proof. It maps them to what recovery-testing rules ask and claims no
// compliance. Every figure comes from the same judged checks as the
// Measurements (so it says of how many, and "not measured" where it was
// not); what no drill measures yet says so.

// evidenceKind groups checks under what they show.
type evidenceKind int

const (
	evRPO evidenceKind = iota
	evRTO
	evIntegrity
	evRetention
	evFence
	evReadiness
	evIdentical
	evKinds
)

// topicText names the rows of "What was measured", in order.
var topicText = [evKinds]struct{ Name, Shows string }{
	evRPO:       {"Recovery point (RPO)", "How much data the standby would lack if the active were lost: records and seconds not yet mirrored, the replication latency; for a role change, the records left behind."},
	evRTO:       {"Recovery time (RTO)", "How long until applications could write to, and consume from, the recovered side."},
	evIntegrity: {"Data integrity", "Records lost, duplicated, re-read or out of order across the recovery, each of how many; consumer positions exact on the other side."},
	evRetention: {"Records lost to source retention", "Records removed from the source before the mirror copied them: in neither cluster, kept on record until acknowledged. A record of the past, not a failure of the drill."},
	evFence:     {"One writer (fence)", "The old active refused application writes once the roles moved, so no two clusters took writes at once."},
	evReadiness: {"Failover readiness", "Whether a failover could have started at the time, and what would have stopped it."},
	evIdentical: {"Standby proven identical", "A record-by-record comparison of the recovered side with the source through the offset map; a disruptive drill compares the canary topic at each flip, before the old active is wiped (drctl verify compares every topic, on demand)."},
}

// kindOf files a check under what it shows.
func kindOf(name string) (evidenceKind, bool) {
	switch {
	case strings.Contains(name, "lost to source retention"):
		return evRetention, true
	case strings.Contains(name, "RPO"), strings.HasPrefix(name, "canary latency"):
		return evRPO, true
	case strings.Contains(name, "RTO"), strings.HasSuffix(name, ": role change"):
		return evRTO, true
	case strings.HasPrefix(name, "canary records replicated"), strings.HasPrefix(name, "canary duplicates"), strings.HasPrefix(name, "canary order"),
		strings.HasPrefix(name, "group sync"), strings.HasSuffix(name, "canary lost / duplicated / re-read"), strings.HasSuffix(name, ": salvage"):
		return evIntegrity, true
	case strings.HasSuffix(name, "proven identical"):
		return evIdentical, true
	case strings.HasSuffix(name, "fence verified"):
		return evFence, true
	case strings.HasPrefix(name, "failover preflight"):
		return evReadiness, true
	}
	return 0, false
}

// evidenceTopic is one row group of "What was measured": the checks filed
// under it (none: Missing says why nothing was measured).
type evidenceTopic struct {
	Name, Shows string
	Checks      []check
	// Missing says why nothing was measured: not measured, or, with
	// MissingNA, nothing to measure in this kind of drill.
	Missing   string
	MissingNA bool
}

// MissingResult is how a topic with no check came out.
func (t evidenceTopic) MissingResult() result {
	if t.MissingNA {
		return resultNA
	}
	return resultNotMeasured
}

// notIdentical says why a drill holds no record-by-record proof, by kind.
var notIdentical = map[string]string{
	"canary":    "a canary drill does not compare records; drctl verify does, on demand, for the live link (docs/verify.md)",
	"unplanned": "no role change of this drill recorded a comparison (its run stopped before its wipe, or the record is older than the comparison)",
	"failover":  "no role change of this drill recorded a comparison (its run stopped before its wipe, or the record is older than the comparison)",
}

func evidenceTopics(r *drill.Record, cs []check) []evidenceTopic {
	out := make([]evidenceTopic, evKinds)
	for k := range evKinds {
		out[k] = evidenceTopic{Name: topicText[k].Name, Shows: topicText[k].Shows}
	}
	for _, c := range cs {
		if k, ok := kindOf(c.Name); ok {
			out[k].Checks = append(out[k].Checks, c)
		}
	}
	for k := range out {
		if len(out[k].Checks) == 0 {
			out[k].Missing = stopped
		}
	}
	if len(out[evIdentical].Checks) == 0 {
		out[evIdentical].Missing = notIdentical[r.Kind]
	}
	if r.Kind == "canary" {
		out[evFence].Missing, out[evFence].MissingNA = "a canary drill moves no role, so there is no fence to prove", true
	} else if len(out[evReadiness].Checks) == 0 {
		out[evReadiness].Missing, out[evReadiness].MissingNA = "a disruptive drill runs the failover itself: its run's preflight is among the run's steps", true
	}
	return out
}

// evidenceFact is one line of "What was tested" or "Integrity of this
// record": a name, what this drill holds, and what it means or how to
// check it.
type evidenceFact struct {
	Name, Value, Note string
	// Bad marks a value that says the record does not hold (an invalid
	// signature).
	Bad bool
}

// kindText says what a drill of each kind exercises.
var kindText = map[string]string{
	"canary":    "records written through the live mirror and read on the standby, a consumer group's position checked there and a failover's preflight run; the roles do not move",
	"failover":  "a real planned failover to the standby with a canary application running through it, then, after a hold, a failback",
	"unplanned": "a rehearsed loss of the active: the mirror paused, an unplanned failover (fence, salvage, wipe and re-seed of the old active), then a failback",
}

func testedFacts(r *drill.Record, cs []check) []evidenceFact {
	how := "run by hand"
	if r.ScheduledFor != nil {
		how = "scheduled for " + r.ScheduledFor.UTC().Format(time.RFC3339)
	}
	run := fmt.Sprintf("drill %s (kind %s), run by %s (%s), started %s, took %s; topology %s (file digest %s), %s active, %s standby. It exercises %s.",
		r.Drill, r.Kind, orNone(r.By), how, r.StartedAt.UTC().Format(time.RFC3339), r.Duration().Round(time.Millisecond),
		r.Topology, orNone(short(r.TopologyDigest)), r.Active, r.Standby, kindText[r.Kind])
	var obj []string
	if o := r.Objectives.RPOSeconds; o > 0 {
		obj = append(obj, fmt.Sprintf("RPO ≤ %.0f s", o))
	}
	if o := r.Objectives.RTOSeconds; o > 0 {
		obj = append(obj, fmt.Sprintf("RTO ≤ %.0f s", o))
	}
	if o := r.Objectives.MaxCanaryLatencyMS; o > 0 {
		obj = append(obj, "canary latency ≤ "+ms(o))
	}
	objective := strings.Join(obj, "; ")
	if objective == "" {
		objective = "none set: the figures are measured against no objective (a named drill's objectives set them)"
	}
	if r.Kind == "failover" {
		objective += "; a planned failover loses, duplicates and re-reads nothing"
	}
	counts := map[result]int{}
	for _, c := range cs {
		counts[c.Result]++
	}
	outcome := fmt.Sprintf("%s: %d check(s) met their objective, %d failed, %d measured against none, %d not measured or not applicable",
		strings.ToUpper(string(r.Verdict)), counts[resultOK], counts[resultFail], counts[resultNoObjective], counts[resultNotMeasured]+counts[resultNA])
	return []evidenceFact{
		{Name: "The run", Value: run, Note: "What was exercised, when, by whom, against which configuration."},
		{Name: "The objective", Value: objective, Note: "The recovery targets the result is judged against."},
		{Name: "The outcome", Value: outcome, Note: "The verdict against the objectives; every failed check is a reason under Verdict.", Bad: r.Verdict != drill.Pass},
	}
}

func integrityFacts(r *drill.Record) []evidenceFact {
	s := r.Seal()
	chain := "not chained: recorded before drctl chained drill records, so no later record vouches for it"
	switch {
	case r.Unfinished:
		chain = "not chained: this is a started record; the drill's result replaces it and is chained"
	case s.Chain != nil && s.Chain.Seq == 1:
		chain = fmt.Sprintf("record 1 of the chain of topology %s: the first chained record", r.Topology)
	case s.Chain != nil:
		chain = fmt.Sprintf("record %d of the chain of topology %s, after drill %s (digest %s)", s.Chain.Seq, r.Topology, s.Chain.PrevID, s.Chain.PrevDigest)
	}
	sig := "not signed: no signature is stored with this record (drills.evidence.signing_key was not set when it was recorded)"
	if len(s.KeyIDs) > 0 {
		sig = "signed (DSSE, ed25519) by key " + strings.Join(s.KeyIDs, ", ")
		switch {
		case s.SignatureProblem != "":
			sig += "; INVALID: " + s.SignatureProblem
		case s.SignatureChecked != "":
			sig += "; " + s.SignatureChecked
		default:
			sig += "; not checked when this report was made"
		}
	}
	return []evidenceFact{
		{Name: "Record digest", Value: orNone(s.Digest), Note: "SHA-256 of the record's canonical JSON (drctl drill report ID --format json): any change to the record changes it."},
		{Name: "Hash chain", Value: chain, Note: "drctl drill history --verify checks the whole chain and names a removed or edited record; this report does not check it."},
		{Name: "Signature", Value: sig, Bad: s.SignatureProblem != "",
			Note: "drctl drill verify-report FILE --public-key KEY checks the signed JSON; drctl drill evidence-key prints the public key."},
	}
}

// ruleRow maps what a recovery-testing rule asks to where the report
// answers it. The rules are paraphrased: the texts are the reference.
type ruleRow struct{ Rule, Asks, Where string }

var ruleRows = []ruleRow{
	{"DORA Art. 11(6)(a)", "Test the ICT business continuity and ICT response and recovery plans at least yearly, and after substantive changes to the systems supporting critical or important functions.",
		"The run (what, when, against which configuration); drctl drill history lists every drill of the topology."},
	{"DORA Art. 11", "Keep readily accessible records of activities before and during disruption events.",
		"The steps with their times, and each role change's run; the record's digest, hash chain and signature."},
	{"DORA Art. 12(2)", "Periodically test the backup, restoration and recovery procedures and methods.",
		"The run; recovery point; recovery time; the outcome."},
	{"DORA Art. 12", "Set recovery time and recovery point objectives for each function.",
		"The objective, and the recovery point and time measured against it."},
	{"DORA Art. 12(7)", "When recovering, perform the checks and reconciliations that keep data integrity at the highest level.",
		"Data integrity (each figure of how many); records lost to source retention; standby proven identical."},
	{"SOC 2, TSC A1.3", "Test the recovery plan procedures supporting system recovery, to meet the entity's objectives.",
		"The run, the objective, recovery point and time, the outcome."},
}

const evidenceIntro = "What this drill shows for recovery testing: the run, the objective, each measurement and the proof that this record is the one the drill made. Each measurement is taken from the checks above, with its denominator; a figure the drill did not measure says so."

const evidenceDisclaimer = "The rules are paraphrased; their texts are the reference. drctl claims no compliance with any rule: this maps evidence to what the rules ask, and whether it meets a requirement is for the entity and its auditors to judge."

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// mdEvidence writes the Markdown Evidence section.
func mdEvidence(b *strings.Builder, r *drill.Record, cs []check) {
	b.WriteString("\n## Evidence\n\n" + evidenceIntro + "\n\n### What was tested\n\n| | This drill | What it is |\n|---|---|---|\n")
	for _, f := range testedFacts(r, cs) {
		fmt.Fprintf(b, "| %s | %s | %s |\n", f.Name, mdEscape(f.Value), mdEscape(f.Note))
	}
	b.WriteString("\n### What was measured\n\n| Evidence | What it shows | Measured | Result |\n|---|---|---|---|\n")
	for _, t := range evidenceTopics(r, cs) {
		if len(t.Checks) == 0 {
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", t.Name, mdEscape(t.Shows), mdEscape(t.Missing), resultText(t.MissingResult()))
			continue
		}
		for i, c := range t.Checks {
			name, shows := "", ""
			if i == 0 {
				name, shows = t.Name, t.Shows
			}
			fmt.Fprintf(b, "| %s | %s | %s: %s | %s |\n", name, mdEscape(shows), mdEscape(c.Name), mdEscape(c.Measured), resultText(c.Result))
		}
	}
	b.WriteString("\n### Integrity of this record\n\n| | This record | How to check |\n|---|---|---|\n")
	for _, f := range integrityFacts(r) {
		fmt.Fprintf(b, "| %s | %s | %s |\n", f.Name, mdEscape(f.Value), mdEscape(f.Note))
	}
	b.WriteString("\n### What recovery-testing rules ask\n\n| Rule | What it asks | Where this report answers |\n|---|---|---|\n")
	for _, rr := range ruleRows {
		fmt.Fprintf(b, "| %s | %s | %s |\n", rr.Rule, rr.Asks, rr.Where)
	}
	b.WriteString("\n" + evidenceDisclaimer + "\n")
}
