package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/drill"
)

// sample is a failed canary drill: one record missing, latency over the
// objective, the group position not exact.
func sample() *drill.Record {
	t0 := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	r := &drill.Record{ID: "drill-canary-20261201T030000-abc123", Drill: "nightly", Kind: "canary", Topology: "payments",
		TopologyDigest: "0123456789abcdef", By: "ops@host-1", StartedAt: t0, FinishedAt: t0.Add(4 * time.Second),
		Active: "east", Standby: "west", Objectives: drill.Objectives{MaxCanaryLatencyMS: 500, RPOSeconds: 30},
		Steps: []drill.Step{
			{Name: "canary-topic", Title: "Ensure the canary topic", StartedAt: t0, ElapsedMS: 40, Status: "done", Summary: "exists"},
			{Name: "canary", Title: "Write 3 canary records <east>", StartedAt: t0.Add(50 * time.Millisecond), ElapsedMS: 3000, Status: "done"},
			{Name: "group-sync", Title: "Check the group", StartedAt: t0.Add(3100 * time.Millisecond), ElapsedMS: 800, Status: "failed", Error: "boom & bust"},
			{Name: "rpo", Title: "Measure the RPO", Status: "skipped"},
		},
		Canary: &drill.CanaryResult{Topic: "drctl-canary.payments", Source: "east", Target: "west", Sent: 3, Received: 2, Missing: 1,
			LatencyP50MS: 120, LatencyP99MS: 700, LatencyMaxMS: 700, WaitedMS: 3000,
			Samples: []drill.Sample{{Seq: 0, SentAt: t0, LatencyMS: 120}, {Seq: 1, SentAt: t0.Add(time.Second), LatencyMS: 700}}},
		RPO: &drill.RPO{Records: 1, Seconds: 2, Link: "east->west", LossesRead: true},
	}
	drill.Judge(r)
	return r
}

func TestJUnitParses(t *testing.T) {
	var buf bytes.Buffer
	if err := JUnit(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests  int `xml:"tests,attr"`
		Fails  int `xml:"failures,attr"`
		Suites []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, buf.String())
	}
	if len(doc.Suites) != 1 || doc.Suites[0].Name != "drill-canary-20261201T030000-abc123" {
		t.Fatalf("suites: %+v", doc.Suites)
	}
	failed := map[string]bool{}
	for _, c := range doc.Suites[0].Cases {
		if c.Failure != nil {
			failed[c.Name] = true
		}
	}
	for _, want := range []string{"step group-sync: Check the group", "canary records replicated", "canary latency (p50 / p99 / max)", "verdict"} {
		if !failed[want] {
			t.Errorf("test case %q should fail; failed: %v", want, failed)
		}
	}
	if failed["canary duplicates"] || failed["RPO (east->west)"] {
		t.Errorf("passing checks reported as failures: %v", failed)
	}
	if doc.Tests != len(doc.Suites[0].Cases) || doc.Fails != len(failed) {
		t.Errorf("totals %d/%d, cases %d, failed %d", doc.Tests, doc.Fails, len(doc.Suites[0].Cases), len(failed))
	}
}

func TestHTMLSelfContained(t *testing.T) {
	var buf bytes.Buffer
	if err := HTML(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	for _, want := range []string{"<!DOCTYPE html>", `class="verdict fail"`, "aria-label=\"timeline of the drill's steps\"",
		`aria-label="canary latency over time"`, "stroke-dasharray", "boom &amp; bust", "Write 3 canary records &lt;east&gt;", "1 of 3 canary records not replicated"} {
		if !strings.Contains(s, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	for _, banned := range []string{"<script", "src=", "href=", "<link", "@import", "url("} {
		if strings.Contains(strings.ToLower(s), banned) {
			t.Errorf("HTML is not self-contained: it holds %q", banned)
		}
	}
	if err := xml.Unmarshal([]byte(svgOf(s, "timeline")), new(struct{})); err != nil {
		t.Errorf("timeline SVG is not well-formed XML: %v", err)
	}
}

func svgOf(s, label string) string {
	i := strings.Index(s, `<svg xmlns="http://www.w3.org/2000/svg"`)
	j := strings.Index(s[i:], "</svg>")
	return s[i : i+j+len("</svg>")]
}

func TestMarkdownAndJSON(t *testing.T) {
	r := sample()
	var md bytes.Buffer
	if err := Write(&md, r, "md"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Drill drill-canary-20261201T030000-abc123: FAIL", "| Run by | ops@host-1 |",
		"- 1 of 3 canary records not replicated to west within 3s", "| canary records replicated | 2 of 3 read on west | all | **FAIL** |",
		"| 3 | Check the group | 03:00:03.100 | 800ms | failed | boom & bust |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	var js bytes.Buffer
	if err := Write(&js, r, "json"); err != nil {
		t.Fatal(err)
	}
	var back drill.Record
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.ID != r.ID || back.Canary.Missing != 1 || back.Verdict != drill.Fail {
		t.Errorf("json round trip: %v %+v", err, back)
	}
	if err := Write(&js, r, "pdf"); err == nil || !strings.Contains(err.Error(), "use md, json, junit or html") {
		t.Errorf("unknown format: %v", err)
	}
}

// planned is a passed failover drill of a topology with fence: none, in
// one direction of 1,240 canary records.
func planned() *drill.Record {
	t0 := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	r := &drill.Record{ID: "drill-failover-20261201T030000-abc123", Drill: "failover", Kind: "failover", Topology: "payments",
		By: "ops@host-1", StartedAt: t0, FinishedAt: t0.Add(time.Minute), Active: "east", Standby: "west",
		Steps: []drill.Step{{Name: "drill-failover", Title: "Fail over to west", StartedAt: t0, ElapsedMS: 9000, Status: "done"}},
		Directions: []drill.Direction{{From: "east", To: "west", RunID: "failover-1", RTOWriteSeconds: 4.2, RTOConsumeSeconds: 5.1,
			Records: 1240, Tallied: true, FenceSkip: "fence: none: the run does not fence east", LossesRead: true,
			RunSteps: []drill.Step{{Name: "drain", Title: "Drain the mirror", StartedAt: t0, ElapsedMS: 1200, Status: "done", Summary: "drained"}}}},
	}
	drill.Judge(r)
	return r
}

// TestReportsNeverCallUncheckedOK: a check that did not happen (the fence
// with fence: none, an RTO estimate without any measurement) is n/a or not
// measured in every format, listed after the measured checks, never "ok";
// a JUnit test case for it is skipped, not passed.
func TestReportsNeverCallUncheckedOK(t *testing.T) {
	canary := sample()
	canary.RTO = &drill.RTO{Estimated: true} // no disruptive drill measured one yet
	for _, tc := range []struct {
		r          *drill.Record
		check, res string
	}{
		{planned(), "east → west: fence verified", "n/a"},
		{canary, "RTO estimate", "not measured"},
	} {
		var md bytes.Buffer
		if err := Markdown(&md, tc.r); err != nil {
			t.Fatal(err)
		}
		row := rowOf(md.String(), "| "+tc.check+" |")
		if !strings.HasSuffix(row, "| _"+tc.res+"_ |") || strings.Contains(row, "| ok |") {
			t.Errorf("markdown row %q, want %s:\n%s", row, tc.res, md.String())
		}
		// Apart from the passes: after every measured check.
		if m := withoutEvidence(md.String()); strings.Index(m, row) < strings.LastIndex(m, "| ok |") {
			t.Errorf("an unmeasured check is listed before a measured one:\n%s", md.String())
		}
		var h bytes.Buffer
		if err := HTML(&h, tc.r); err != nil {
			t.Fatal(err)
		}
		hrow := rowOf(h.String(), "<td>"+tc.check+"</td>")
		if !strings.Contains(hrow, `class="unmeasured"`) || !strings.Contains(hrow, `<span class="na">`+tc.res+`</span>`) {
			t.Errorf("HTML row %q, want %s apart", hrow, tc.res)
		}
		c := junitCaseOf(t, tc.r, tc.check)
		if c.Skipped == nil || c.Failure != nil || !strings.HasPrefix(c.Skipped.Message, tc.res+": ") {
			t.Errorf("JUnit case %q: %+v, want skipped as %s", tc.check, c, tc.res)
		}
	}
	var md bytes.Buffer
	_ = Markdown(&md, planned())
	if !strings.Contains(md.String(), "every check that was measured met its objective; 1 not measured or not applicable") {
		t.Errorf("a pass claims every check:\n%s", md.String())
	}
}

// TestReportsCountWithDenominators: each loss, duplicate and re-read
// figure says of how many.
func TestReportsCountWithDenominators(t *testing.T) {
	var md bytes.Buffer
	if err := Markdown(&md, planned()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| east → west: canary lost / duplicated / re-read | 0 / 0 / 0 of 1,240 canary records | 0 / 0 / 0 | ok |",
		"| east → west: RPO | 0 of 1,240 canary records left behind on east | 0 (planned) | ok |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	md.Reset()
	_ = Markdown(&md, sample())
	for _, want := range []string{"| canary duplicates | 0 among the 2 read |", "| canary order | 0 of 2 read out of order |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// TestJUnitPassesCarryTheirValues: a passing test case carries what was
// measured, against what, as properties.
func TestJUnitPassesCarryTheirValues(t *testing.T) {
	c := junitCaseOf(t, planned(), "east → west: canary lost / duplicated / re-read")
	if c.Failure != nil || c.Skipped != nil {
		t.Fatalf("case %+v", c)
	}
	props := map[string]string{}
	for _, p := range c.Props {
		props[p.Name] = p.Value
	}
	for k, v := range map[string]string{"lost": "0", "duplicated": "0", "re_read": "0", "records": "1240", "result": "ok",
		"measured": "0 / 0 / 0 of 1,240 canary records", "objective": "0 / 0 / 0"} {
		if props[k] != v {
			t.Errorf("property %s = %q, want %q (all: %v)", k, props[k], v, props)
		}
	}
	rto := junitCaseOf(t, planned(), "east → west: RTO (writes / consuming)")
	if len(rto.Props) == 0 || rto.Failure != nil {
		t.Errorf("RTO case %+v", rto)
	}
	// A step carries its summary; a case with nothing to carry has no
	// empty properties element.
	step := junitCaseOf(t, planned(), "Role change east → west, run failover-1, step drain: Drain the mirror")
	if len(step.Props) != 1 || step.Props[0].Name != "summary" || step.Props[0].Value != "drained" {
		t.Errorf("run step case %+v", step)
	}
	var buf bytes.Buffer
	if err := JUnit(&buf, planned()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "<properties></properties>") {
		t.Errorf("an empty properties element:\n%s", buf.String())
	}
}

// TestFailedUnplannedDrillReport: an unplanned drill whose failover run
// failed at its wipe still reports the RPO the run measured and the run's
// steps; its Measurements table is not empty, and what it could not
// measure says so.
func TestFailedUnplannedDrillReport(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 15, 20, 37, 0, time.UTC)
	wipe := "wipe east: group analytics has 1 member(s) there"
	r := &drill.Record{ID: "drill-unplanned-20261207T152037-f0690a", Drill: "unplanned", Kind: "unplanned", Topology: "sandbox",
		StartedAt: t0, FinishedAt: t0.Add(5 * time.Second), Active: "east", Standby: "west",
		Steps: []drill.Step{
			{Name: "canary-topic", Title: "Ensure the canary topic", StartedAt: t0, ElapsedMS: 40, Status: "done"},
			{Name: "pause-mirror", Title: "Pause the mirror", StartedAt: t0, ElapsedMS: 2000, Status: "done"},
			{Name: "drill-unplanned-failover", Title: "Fail over to west as if east were lost", StartedAt: t0.Add(2 * time.Second), ElapsedMS: 2500, Status: "failed",
				Error: "unplanned failover run failover-9 to west: step 10/13 (wipe) failed: " + wipe},
			{Name: "hold", Title: "Hold", Status: "skipped"},
		},
		Directions: []drill.Direction{{From: "east", To: "west", RunID: "failover-9", Unplanned: true, RunError: "unplanned failover run failover-9 to west: " + wipe,
			RPOReported: true, RPORecords: 31, RPOAllRecords: 33, RPOSeconds: 2.4, Held: 120, Written: 62, FenceSkip: "fence: none: the run does not fence east",
			RunSteps: []drill.Step{
				{Name: "rpo", Title: "Measure what is not mirrored", StartedAt: t0.Add(3 * time.Second), ElapsedMS: 300, Status: "done", Summary: "31 records"},
				{Name: "wipe", Title: "Wipe east", StartedAt: t0.Add(4 * time.Second), ElapsedMS: 200, Status: "failed", Error: wipe},
				{Name: "reseed", Title: "Re-seed east", Status: "skipped"},
			}}},
		RPO: &drill.RPO{Records: 33, Seconds: 2.4, Link: "east->west"},
	}
	drill.Judge(r)
	if r.Verdict != drill.Fail || len(r.Reasons) != 2 { // the failed step, and the step it skipped
		t.Errorf("verdict %s %q", r.Verdict, r.Reasons)
	}
	var md bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{
		"| RPO (east->west) | 2.4 s, 33 records behind | - | no objective |",
		"| east → west (unplanned): RPO the run reported | 31 canary records (33 over all topics, 2.4 s) | - | no objective |",
		"| east → west (unplanned): role change | failed: unplanned failover run failover-9 to west: " + wipe,
		"| east → west (unplanned): RTO | the run did not finish | - | _not measured_ |",
		"| east → west (unplanned): canary lost / duplicated / re-read | the drill stopped before the canary's tally | - | _not measured_ |",
		"| east → west (unplanned): fence verified | fence: none: the run does not fence east | - | _n/a_ |",
		"### Unplanned failover east → west: run failover-9",
		"| 2 | Wipe east | 15:20:41.000 | 200ms | failed | " + wipe + " |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
	var h bytes.Buffer
	if err := HTML(&h, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.String(), "<td>31 canary records (33 over all topics, 2.4 s)</td>") || !strings.Contains(h.String(), "run <code>failover-9</code>") {
		t.Errorf("HTML lacks the run's RPO or its steps")
	}
	// With a fence to check, a run that stopped before it did has not
	// checked it.
	r.Directions[0].FenceSkip = ""
	if c := junitCaseOf(t, r, "east → west (unplanned): fence verified"); c.Skipped == nil || c.Skipped.Message != "not measured: the run stopped before the fence was checked" {
		t.Errorf("fence of a stopped run: %+v", c)
	}
	c := junitCaseOf(t, r, "Unplanned failover east → west, run failover-9, step wipe: Wipe east")
	if c.Failure == nil || c.Failure.Message != wipe {
		t.Errorf("the run's failed step in JUnit: %+v", c)
	}
}

// TestNoMeasurementsIsNotEmpty: a disruptive drill that stopped before its
// first role change lists what it did not measure.
func TestNoMeasurementsIsNotEmpty(t *testing.T) {
	r := &drill.Record{ID: "drill-failover-1", Kind: "failover", Standby: "west", Steps: []drill.Step{{Name: "canary-topic", Status: "failed", Error: "boom"}}}
	drill.Judge(r)
	cs := checks(r)
	if len(cs) == 0 || cs[0].Result != resultNotMeasured {
		t.Errorf("checks %+v", cs)
	}
}

// withoutEvidence is a Markdown report without its Evidence section (which
// repeats the measurements, grouped by what they show).
func withoutEvidence(md string) string {
	i := strings.Index(md, "\n## Evidence\n")
	if i < 0 {
		return md
	}
	j := strings.Index(md[i+1:], "\n## ")
	return md[:i] + md[i+1+j:]
}

func rowOf(s, cell string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, cell) {
			return line
		}
	}
	return ""
}

type parsedCase struct {
	Name  string `xml:"name,attr"`
	Props []struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	} `xml:"properties>property"`
	Failure *struct {
		Message string `xml:"message,attr"`
	} `xml:"failure"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
}

func junitCaseOf(t *testing.T, r *drill.Record, name string) parsedCase {
	t.Helper()
	var buf bytes.Buffer
	if err := JUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Cases []parsedCase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("JUnit does not parse: %v", err)
	}
	for _, c := range doc.Suites[0].Cases {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no JUnit case %q in\n%s", name, buf.String())
	return parsedCase{}
}
