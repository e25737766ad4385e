package report

import (
	"bytes"
	"encoding/json"
	"html"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/linkstate"
)

// TestReportsCarryUnacknowledgedLosses: records the link lost to source
// retention and no operator acknowledged appear in every report format,
// with their count and ranges.
func TestReportsCarryUnacknowledgedLosses(t *testing.T) {
	r := sample()
	r.RPO.LostRecords = 20
	r.RPO.Losses = []linkstate.LostRange{
		{Topic: "orders", Partition: 0, From: 10, To: 24, Records: 15, At: time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)},
		{Topic: "orders", Partition: 1, From: 0, To: 4, Records: 5, At: time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)},
	}
	for _, format := range []string{"markdown", "html", "junit", "json"} {
		var b bytes.Buffer
		if err := Write(&b, r, format); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		for _, want := range []string{"orders/0 offsets 10-24 (15 records)", "orders/1 offsets 0-4"} {
			if !strings.Contains(b.String(), want) && !(format == "json" && strings.Contains(b.String(), `"from": 10`)) {
				t.Errorf("%s report lacks %q", format, want)
			}
		}
	}
	var md bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "20 records in 2 range(s), not acknowledged") {
		t.Errorf("markdown report lacks the count of lost records:\n%s", md.String())
	}
}

// TestEveryKindReportsLossesPerLink: every drill kind's report says, per
// link (a canary's RPO link, each role change of a disruptive drill), the
// records lost to source retention on record: their ranges with count and
// when found, "none on record" only when the link's state was read, and
// "not measured" (with why) when it was not, or the record does not say.
func TestEveryKindReportsLossesPerLink(t *testing.T) {
	at := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	four := []linkstate.LostRange{
		{Topic: "orders", Partition: 0, From: 10, To: 24, Records: 15, At: at},
		{Topic: "orders", Partition: 1, From: 0, To: 4, Records: 5, At: at},
		{Topic: "payments.eu", Partition: 2, From: 1000, To: 1999, Records: 1000, At: at.Add(time.Hour)},
		{Topic: "payments.eu", Partition: 3, From: 7, To: 7, Records: 1, At: at.Add(2 * time.Hour)},
	}
	canary := func(f func(p *drill.RPO)) *drill.Record {
		r := sample()
		f(r.RPO)
		return r
	}
	disruptive := func(kind string, dirs ...drill.Direction) *drill.Record {
		r := planned()
		r.Kind, r.Directions = kind, dirs
		drill.Judge(r)
		return r
	}
	const unreadable = `_drctl.payments.east-west.lost: record "junk" is unreadable`
	type link struct{ check, measured, result, section string }
	for _, tc := range []struct {
		name  string
		r     *drill.Record
		links []link
	}{
		{"canary, none on record", canary(func(p *drill.RPO) { p.LossesRead = true }),
			[]link{{"lost to source retention (east->west)", "none on record", "no objective", "**east->west**: none on record."}}},
		{"canary, unreadable", canary(func(p *drill.RPO) { p.LossesRead, p.LossesError = false, unreadable }),
			[]link{{"lost to source retention (east->west)", unreadable, "_not measured_", "**east->west**: _not measured_: " + unreadable}}},
		{"canary, a record that does not say", canary(func(p *drill.RPO) { p.LossesRead = false }),
			[]link{{"lost to source retention (east->west)", notRead, "_not measured_", "**east->west**: _not measured_: " + notRead}}},
		{"canary, stopped before the RPO", canary(func(*drill.RPO) {}), nil},
		{"failover", disruptive("failover",
			drill.Direction{From: "east", To: "west", RunID: "failover-1", LossesRead: true, Losses: four, LostToRetention: 1021},
			drill.Direction{From: "west", To: "east", RunID: "failback-1", LossesError: unreadable}),
			[]link{
				{"east → west: lost to source retention", "1,021 records in 4 range(s), not acknowledged: orders/0 offsets 10-24 (15 records) found 2026-12-01 02:00:00 UTC, orders/1 offsets 0-4 (5 records) found 2026-12-01 02:00:00 UTC, payments.eu/2 offsets 1000-1999 (1000 records) found 2026-12-01 03:00:00 UTC, and 1 more range(s)",
					"no objective", "| payments.eu | 3 | 7-7 | 1 | 2026-12-01 04:00:00 UTC |"},
				{"west → east: lost to source retention", unreadable, "_not measured_", "**west → east (link west->east)**: _not measured_: " + unreadable},
			}},
		{"unplanned", disruptive("unplanned",
			drill.Direction{From: "east", To: "west", Unplanned: true, RunID: "failover-2", LossesRead: true, Losses: four[:1], LostToRetention: 15},
			drill.Direction{From: "west", To: "east", RunID: "failback-2", LossesRead: true}),
			[]link{
				{"east → west (unplanned): lost to source retention", "15 records in 1 range(s), not acknowledged: orders/0 offsets 10-24 (15 records) found 2026-12-01 02:00:00 UTC",
					"no objective", "**east → west (unplanned) (link east->west)**: 15 records in 1 range(s), not acknowledged."},
				{"west → east: lost to source retention", "none on record", "no objective", "**west → east (link west->east)**: none on record."},
			}},
		{"failover stopped before its first role change", disruptive("failover"),
			[]link{{"lost to source retention (east->west)", stopped, "_not measured_", "**east->west**: _not measured_: " + stopped}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.links == nil { // the canary stopped before its RPO
				tc.r.RPO = nil
				tc.links = []link{{"lost to source retention (east->west)", stopped, "_not measured_", "**east->west**: _not measured_: " + stopped}}
			}
			var md, h bytes.Buffer
			if err := Markdown(&md, tc.r); err != nil {
				t.Fatal(err)
			}
			if err := HTML(&h, tc.r); err != nil {
				t.Fatal(err)
			}
			for _, l := range tc.links {
				row := rowOf(md.String(), "| "+l.check+" |")
				if want := "| " + l.check + " | " + mdEscape(l.measured) + " | - | " + l.result + " |"; row != want {
					t.Errorf("markdown row\n  %s\nwant\n  %s", row, want)
				}
				if !strings.Contains(md.String(), l.section) {
					t.Errorf("markdown section lacks %q:\n%s", l.section, md.String())
				}
				c := junitCaseOf(t, tc.r, l.check)
				if notMeasured := l.result == "_not measured_"; notMeasured != (c.Skipped != nil) || c.Failure != nil {
					t.Errorf("JUnit case %q: %+v", l.check, c)
				}
				if l.result == "_not measured_" {
					if !strings.Contains(h.String(), `<td colspan="5"><span class="na">not measured</span>: `+html.EscapeString(l.measured)+`</td>`) {
						t.Errorf("HTML does not say %s is not measured", l.check)
					}
				} else if !strings.Contains(h.String(), "<td>"+html.EscapeString(l.measured)+"</td>") {
					t.Errorf("HTML measurements lack %q", l.measured)
				}
			}
			nones := 0
			for _, l := range tc.links {
				if l.measured == "none on record" {
					nones++
				}
			}
			if strings.Count(withoutEvidence(md.String()), "none on record") != 2*nones { // its row and its line in the section

				t.Errorf("markdown says none on record for a link not read:\n%s", md.String())
			}
			var js bytes.Buffer
			if err := JSON(&js, tc.r); err != nil {
				t.Fatal(err)
			}
			var back drill.Record
			if err := json.Unmarshal(js.Bytes(), &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.RPO, tc.r.RPO) || !reflect.DeepEqual(back.Directions, tc.r.Directions) {
				t.Errorf("JSON does not keep the losses:\n%s", js.String())
			}
		})
	}
}
