package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/drill/evidence"
)

// unplannedDrill is a passed unplanned drill: the RPO its run reported, the
// salvage, no fence (fence: none).
func unplannedDrill() *drill.Record {
	r := planned()
	r.ID, r.Drill, r.Kind = "drill-unplanned-20261201T030000-abc123", "unplanned", "unplanned"
	d := &r.Directions[0]
	d.Unplanned, d.RPOReported, d.RPORecords, d.RPOAllRecords, d.RPOSeconds = true, true, 31, 33, 2.4
	d.Held, d.Written, d.UnmirroredAll, d.Unmirrored, d.Salvaged = 120, 62, 31, 31, 31
	r.RPO = &drill.RPO{Records: 33, Seconds: 2.4, Link: "east->west", LossesRead: true}
	drill.Judge(r)
	return r
}

// TestEvidenceSection: every check of every kind is filed under what it
// shows (none is left out of the Evidence section); what was not measured
// says so, the record-by-record proof among it; the rules are mapped with
// no claim of compliance; the proof of the record says what it holds.
func TestEvidenceSection(t *testing.T) {
	for _, r := range []*drill.Record{sample(), planned(), unplannedDrill()} {
		for _, c := range checks(r) {
			if _, ok := kindOf(c.Name); !ok {
				t.Errorf("%s: check %q is under no evidence", r.Kind, c.Name)
			}
		}
		var md, h bytes.Buffer
		if err := Markdown(&md, r); err != nil {
			t.Fatal(err)
		}
		if err := HTML(&h, r); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"## Evidence", "### What was tested", "### What was measured", "### Integrity of this record", "### What recovery-testing rules ask",
			"| DORA Art. 11(6)(a) |", "| DORA Art. 12(7) |", "| SOC 2, TSC A1.3 |", "drctl claims no compliance with any rule",
			"| Standby proven identical | " + topicText[evIdentical].Shows + " | " + notIdentical[r.Kind] + " | _not measured_ |",
			"| Signature | not signed: no signature is stored with this record"} {
			if !strings.Contains(md.String(), want) {
				t.Errorf("%s: markdown lacks %q:\n%s", r.Kind, want, md.String())
			}
		}
		for _, want := range []string{"<h2>Evidence</h2>", "<td class=\"what\">Standby proven identical</td>", "SOC 2, TSC A1.3", "drctl claims no compliance"} {
			if !strings.Contains(h.String(), want) {
				t.Errorf("%s: HTML lacks %q", r.Kind, want)
			}
		}
		if strings.Contains(strings.ToLower(md.String()), "compliant") {
			t.Errorf("%s: the report claims compliance", r.Kind)
		}
	}
	var md bytes.Buffer
	_ = Markdown(&md, planned())
	for _, want := range []string{
		"| Data integrity | Records lost, duplicated, re-read or out of order across the recovery, each of how many; consumer positions exact on the other side. | east → west: canary lost / duplicated / re-read: 0 / 0 / 0 of 1,240 canary records | ok |",
		"| Recovery point (RPO) | ",
		"east → west: RPO: 0 of 1,240 canary records left behind on east | ok |",
		"| One writer (fence) | ",
		"east → west: fence verified: fence: none: the run does not fence east | _n/a_ |",
		"a planned failover loses, duplicates and re-reads nothing",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("failover: markdown lacks %q:\n%s", want, md.String())
		}
	}
	md.Reset()
	_ = Markdown(&md, sample())
	for _, want := range []string{
		"| The outcome | FAIL: ",
		"| One writer (fence) | The old active refused application writes once the roles moved, so no two clusters took writes at once. | a canary drill moves no role, so there is no fence to prove | _n/a_ |",
		"| The objective | RPO ≤ 30 s; canary latency ≤ 500 ms |",
		"| Hash chain | not chained: recorded before drctl chained drill records",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("canary: markdown lacks %q:\n%s", want, md.String())
		}
	}
	chained := sample()
	chained.Chain = &evidence.Link{Seq: 3, PrevID: "drill-canary-2", PrevDigest: "sha256:ab"}
	md.Reset()
	_ = Markdown(&md, chained)
	raw, _ := chained.CanonicalJSON()
	for _, want := range []string{"| Hash chain | record 3 of the chain of topology payments, after drill drill-canary-2 (digest sha256:ab) |",
		"| Record digest | " + evidence.Digest(raw) + " |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("chained: markdown lacks %q", want)
		}
	}
}

// TestProofReported: a planned role change's comparison of the canary
// topic right after the flip is reported under Standby proven identical:
// the ranges proven when identical (ok), the differences when not (FAIL,
// and a reason), not measured with why when it could not be compared.
func TestProofReported(t *testing.T) {
	proven := &drill.Proof{Link: "east->west", Topic: "drctl-canary.payments", Partitions: 1, Identical: 1, SourceRecords: 1240, Compared: 1240,
		Ranges: []drill.ProvenRange{{Partition: 0, SourceFrom: 0, SourceTo: 1240, TargetFrom: 0, TargetTo: 1240}}}
	differs := &drill.Proof{Link: "east->west", Topic: "drctl-canary.payments", Partitions: 1, Differing: 1, SourceRecords: 1240, Compared: 1240, Differences: 2,
		Reasons: []string{"drctl-canary.payments/0: the value differs"}}
	gone := &drill.Proof{Link: "east->west", Topic: "drctl-canary.payments", Partitions: 1, NotVerified: 1,
		Reasons: []string{"drctl-canary.payments/0 not verified: the standby holds no offset map"}}
	for _, tc := range []struct {
		p    *drill.Proof
		row  string
		fail bool
	}{
		{proven, "| east → west: canary topic proven identical | 1 of 1 partition(s) identical, 1,240 of 1,240 records compared: east drctl-canary.payments/0 [0, 1,240) = west [0, 1,240) (the canary topic, compared after the flip, before the wipe) | identical | ok |", false},
		{differs, "| east → west: canary topic proven identical | 0 of 1 partition(s) identical, 1,240 of 1,240 records compared: 2 difference(s): drctl-canary.payments/0: the value differs | identical | **FAIL** |", true},
		{gone, "| east → west: canary topic proven identical | 0 of 1 partition(s) identical, 0 of 0 records compared; drctl-canary.payments/0 not verified: the standby holds no offset map | - | _not measured_ |", false},
	} {
		r := planned()
		r.Directions[0].Proof = tc.p
		drill.Judge(r)
		var md bytes.Buffer
		_ = Markdown(&md, r)
		if !strings.Contains(md.String(), tc.row) {
			t.Errorf("markdown lacks %q:\n%s", tc.row, md.String())
		}
		if got := r.Verdict == drill.Fail; got != tc.fail {
			t.Errorf("verdict %s, reasons %q", r.Verdict, r.Reasons)
		}
		_, section, _ := strings.Cut(md.String(), "## Evidence")
		if ev := rowOf(section, "| Standby proven identical |"); !strings.Contains(ev, "canary topic proven identical") {
			t.Errorf("the Evidence section does not file the proof under Standby proven identical: %q", ev)
		}
	}
}
