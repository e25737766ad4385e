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
		RPO: &drill.RPO{Records: 1, Seconds: 2, Link: "east->west"},
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
		"- 1 of 3 canary records not replicated to west within 3s", "| canary records replicated | 2 of 3 | all | **FAIL** |",
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
