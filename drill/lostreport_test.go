package drill_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/drill/report"
	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// seedLoss makes the mirror east->west record a loss to source retention
// of orders/0 offsets 10-24, as the mirror's own tests do: it copies 10
// records, stops; 20 more arrive and the first 25 are removed; the mirror
// started again finds 15 gone. The mirror runs on when it returns.
func seedLoss(t *testing.T, topo *topology.Topology) {
	t.Helper()
	kfaketest.CreateTopic(t, topo, "east", "orders", 1, nil)
	kfaketest.Produce(t, topo, "east", "orders", 10)
	link := topo.Link("east", "west")
	stop := drill.StartTestMirror(t, topo)
	kfaketest.Wait(t, 30*time.Second, "the mirror copied orders", func() (bool, string) {
		rep, err := linkstate.MeasureLag(kfaketest.Ctx(t, 10*time.Second), kfaketest.Session(t, topo), link)
		if err != nil {
			return false, err.Error()
		}
		for _, p := range rep.Partitions {
			if p.Topic == "orders" {
				return rep.TotalRecords == 0, fmt.Sprintf("%d behind", rep.TotalRecords)
			}
		}
		return false, "orders not mirrored yet"
	})
	stop()
	kfaketest.Produce(t, topo, "east", "orders", 20)
	if err := kfaketest.Admin(t, kfaketest.Dial(t, topo, "east")).DeleteRecords("orders", map[int32]int64{0: 25}); err != nil {
		t.Fatal(err)
	}
	drill.StartTestMirror(t, topo)
	west := kfaketest.Dial(t, topo, "west")
	kfaketest.Wait(t, 30*time.Second, "the mirror recorded the loss", func() (bool, string) {
		lost, err := linkstate.ReadLost(kfaketest.Ctx(t, 10*time.Second), west, link)
		return err == nil && len(lost) == 1, fmt.Sprintf("%v %v", lost, err)
	})
}

func render(t *testing.T, rec *drill.Record, format string) string {
	t.Helper()
	var b bytes.Buffer
	if err := report.Write(&b, rec, format); err != nil {
		t.Fatalf("%s report: %v", format, err)
	}
	return b.String()
}

// TestFailoverDrillReportsLossesToRetention: a failover drill's record and
// reports say, per role change, the records of its link lost to source
// retention on record when its run ended: east->west's range (topic,
// partition, offsets, count, when found) in the failover, none on record
// for west->east in the failback; in Markdown, HTML and JSON.
func TestFailoverDrillReportsLossesToRetention(t *testing.T) {
	p := drill.NewTestPair(t, "drills: {allow_disruptive: true}\n")
	topo := p.Topology
	before := time.Now()
	seedLoss(t, topo)
	d := topology.DefaultDrill(topology.DrillFailover)
	d.Params.Rate, d.Params.Hold = 20, time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rec, err := drill.Run(ctx, kfaketest.Session(t, topo), d, drill.Options{JournalDir: t.TempDir(), Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Verdict != drill.Pass || len(rec.Directions) != 2 {
		t.Fatalf("verdict %s %v, directions %+v", rec.Verdict, rec.Reasons, rec.Directions)
	}
	out, back := rec.Directions[0], rec.Directions[1]
	if !out.LossesRead || out.LostToRetention != 15 || len(out.Losses) != 1 || out.Losses[0].String() != "orders/0 offsets 10-24 (15 records)" ||
		out.Losses[0].At.Before(before) || out.Losses[0].At.After(time.Now()) {
		t.Fatalf("failover east->west: read %v, %d lost, %v (%s); want orders/0 offsets 10-24 found during the test", out.LossesRead, out.LostToRetention, out.Losses, out.LossesError)
	}
	if !back.LossesRead || back.LostToRetention != 0 || len(back.Losses) != 0 || back.LossesError != "" {
		t.Errorf("failback west->east: read %v, %d lost, %v (%s); want read, none", back.LossesRead, back.LostToRetention, back.Losses, back.LossesError)
	}
	found := out.Losses[0].At.UTC().Format("2006-01-02 15:04:05 UTC")

	md := render(t, rec, "md")
	for _, want := range []string{
		"| east → west: lost to source retention | 15 records in 1 range(s), not acknowledged: orders/0 offsets 10-24 (15 records) found " + found + " | - | no objective |",
		"| west → east: lost to source retention | none on record | - | no objective |",
		"## Lost to source retention",
		"**east → west (link east->west)**: 15 records in 1 range(s), not acknowledged.",
		"| orders | 0 | 10-24 | 15 | " + found + " |",
		"**west → east (link west->east)**: none on record.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	html := render(t, rec, "html")
	for _, want := range []string{
		"<h2>Lost to source retention</h2>",
		`<td class="link" rowspan="1">east → west<small>link east-&gt;west: 15 records in 1 range(s), not acknowledged</small></td><td>orders</td><td class="num">0</td><td class="num">10-24</td><td class="num">15</td><td>` + found + `</td>`,
		`<td class="link">west → east<small>link west-&gt;east</small></td><td colspan="5">none on record</td>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	var back2 struct {
		Directions []struct {
			LostToRetention int64                 `json:"lost_to_retention"`
			LossesRead      *bool                 `json:"losses_read"`
			Losses          []linkstate.LostRange `json:"losses"`
		} `json:"directions"`
	}
	if err := json.Unmarshal([]byte(render(t, rec, "json")), &back2); err != nil || len(back2.Directions) != 2 {
		t.Fatalf("json: %v %+v", err, back2)
	}
	j0, j1 := back2.Directions[0], back2.Directions[1]
	if j0.LossesRead == nil || !*j0.LossesRead || j0.LostToRetention != 15 || len(j0.Losses) != 1 || j0.Losses[0].From != 10 || j0.Losses[0].To != 24 || !j0.Losses[0].At.Equal(out.Losses[0].At) {
		t.Errorf("json failover direction: %+v", j0)
	}
	if j1.LossesRead == nil || !*j1.LossesRead || len(j1.Losses) != 0 {
		t.Errorf("json failback direction: %+v, want losses_read true and no losses", j1)
	}
}

// TestUnreadableLossesAreNotMeasured: when the link's state cannot be read
// (here its lost topic holds a record that is not a loss), neither a
// canary drill nor a failover drill's role change claims none on record:
// every report says not measured, and why.
func TestUnreadableLossesAreNotMeasured(t *testing.T) {
	p := drill.NewTestPair(t, "")
	topo := p.Topology
	drill.StartTestMirror(t, topo)
	link := topo.Link("east", "west")
	if err := kvstore.Put(kfaketest.Ctx(t, 10*time.Second), kfaketest.Dial(t, topo, "west"), link.LostTopic(), "junk", []byte("not a loss")); err != nil {
		t.Fatal(err)
	}
	d := topology.DefaultDrill(topology.DrillCanary)
	d.Params.Records, d.Params.Rate = 20, 100
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	canary, err := drill.Run(ctx, kfaketest.Session(t, topo), d, drill.Options{JournalDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if canary.RPO == nil || canary.RPO.LossesRead || !strings.Contains(canary.RPO.LossesError, `record "junk" is unreadable`) {
		t.Fatalf("canary RPO %+v; want the losses not read, and why", canary.RPO)
	}
	fo := &drill.Record{ID: "drill-failover-x", Drill: "failover", Kind: "failover", Topology: topo.Name, Active: "east", Standby: "west",
		StartedAt: time.Now(), FinishedAt: time.Now(),
		Directions: []drill.Direction{drill.ReadDirectionLosses(ctx, topo, "east", "west")}}
	if dir := fo.Directions[0]; dir.LossesRead || !strings.Contains(dir.LossesError, `record "junk" is unreadable`) {
		t.Fatalf("failover direction: read %v, %q; want not read, and why", dir.LossesRead, dir.LossesError)
	}
	drill.Judge(fo)
	for _, tc := range []struct {
		rec   *drill.Record
		check string
	}{{canary, "lost to source retention (east->west)"}, {fo, "east → west: lost to source retention"}} {
		md := render(t, tc.rec, "md")
		if row := rowOf(md, "| "+tc.check+" |"); !strings.Contains(row, "unreadable") || !strings.HasSuffix(row, "| _not measured_ |") {
			t.Errorf("%s markdown row %q, want not measured and why", tc.rec.Kind, row)
		}
		if !strings.Contains(md, "_not measured_: ") || strings.Contains(md, "none on record") {
			t.Errorf("%s markdown section claims none or lacks not measured:\n%s", tc.rec.Kind, md)
		}
		html := render(t, tc.rec, "html")
		if !strings.Contains(html, `<td colspan="5"><span class="na">not measured</span>: `) || strings.Contains(html, "none on record") {
			t.Errorf("%s HTML does not say not measured, or claims none", tc.rec.Kind)
		}
		js := render(t, tc.rec, "json")
		if !strings.Contains(js, `"losses_read": false`) || !strings.Contains(js, `"losses_error": `) {
			t.Errorf("%s JSON lacks losses_read false and the error:\n%s", tc.rec.Kind, js)
		}
	}
}

func rowOf(s, cell string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, cell) {
			return line
		}
	}
	return ""
}
