package drill

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

func unplannedDrill() *topology.NamedDrill {
	d := topology.DefaultDrill(topology.DrillUnplanned)
	d.Params.Records, d.Params.Rate, d.Params.Hold = 30, 50, time.Second
	return d
}

// TestUnplannedDrill: with the mirror paused while the canary writes, the
// unplanned failover reports as its RPO exactly the canary records that
// never reached the standby, its salvage holds exactly those records (each
// from the offset the old active acknowledged), nothing is lost for good,
// and the drill ends with the home roles, no pause holding and the mirror
// copying again.
func TestUnplannedDrill(t *testing.T) {
	p := newPair(t, "drills: {allow_disruptive: true}\n")
	topo := p.Topology
	startMirror(t, topo)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	d := unplannedDrill()
	rec, err := Run(ctx, kfaketest.Session(t, topo), d, Options{JournalDir: t.TempDir(), Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Verdict != Pass {
		t.Fatalf("verdict %s: %v\nsteps: %+v\ndirections: %+v", rec.Verdict, rec.Reasons, rec.Steps, rec.Directions)
	}
	if len(rec.Directions) != 2 {
		t.Fatalf("directions: %+v", rec.Directions)
	}
	u, back := rec.Directions[0], rec.Directions[1]
	t.Logf("unplanned: %+v", u)
	t.Logf("failback: %+v", back)
	for _, s := range rec.Steps {
		t.Logf("step %-26s %6d ms  %s", s.Name, s.ElapsedMS, s.Summary)
	}
	if !u.Unplanned || u.From != "east" || u.To != "west" || u.RunID == "" {
		t.Fatalf("unplanned direction %+v", u)
	}
	// The pause held while the canary wrote d.Params.Records records.
	if u.Unmirrored < d.Params.Records || u.UnmirroredAll != u.Unmirrored || u.RPORecords != int64(u.UnmirroredAll) || u.Salvaged != u.UnmirroredAll || u.SalvageMismatch != "" {
		t.Errorf("RPO %d, unmirrored %d (%d of the drill), salvaged %d (%s), want RPO = unmirrored = salvaged >= %d", u.RPORecords, u.UnmirroredAll, u.Unmirrored, u.Salvaged, u.SalvageMismatch, d.Params.Records)
	}
	if u.Lost != 0 || u.Duplicated != 0 || u.ReRead != 0 || u.RTOWriteSeconds <= 0 || u.RTOConsumeSeconds <= 0 {
		t.Errorf("unplanned direction %+v", u)
	}
	// The denominators: what the old active held, what this drill wrote
	// there, what was tallied; and the run's steps.
	if !u.RPOReported || u.Held < u.UnmirroredAll || u.Written < u.Unmirrored || !u.Tallied || u.Records < u.Written || len(u.RunSteps) == 0 {
		t.Errorf("unplanned direction %+v", u)
	}
	for _, s := range rec.Steps {
		if want := fmt.Sprintf("%d of the %d records east held never reached west (%d of the %d this drill wrote there)", u.UnmirroredAll, u.Held, u.Unmirrored, u.Written); s.Name == StepUnplannedFailover && !strings.Contains(s.Summary, want) {
			t.Errorf("step summary %q lacks %q", s.Summary, want)
		}
	}
	// At the flip, before the wipe: the canary topic on west proven
	// identical to what the link copied, every record of its range; the
	// records the pause held back are past the range (the RPO above), not
	// differences.
	for _, dir := range []Direction{u, back} {
		if pr := dir.Proof; !pr.Proven() || pr.Compared == 0 || pr.Compared != pr.SourceRecords {
			t.Errorf("%s -> %s: proof %+v", dir.From, dir.To, pr)
		}
	}
	t.Logf("proofs: %+v %+v", *u.Proof, *back.Proof)
	if back.Unplanned || back.To != "east" || back.Lost != 0 || back.Duplicated != 0 || back.ReRead != 0 || back.RPORecords != 0 || back.RTOWriteSeconds <= 0 {
		t.Errorf("failback direction %+v", back)
	}
	// No loss to source retention on record, and each direction read the
	// link's state to say so: the unplanned one as its run reported it.
	if !u.LossesRead || len(u.Losses) != 0 || u.LossesError != "" || !back.LossesRead || len(back.Losses) != 0 || back.LossesError != "" {
		t.Errorf("losses to source retention: unplanned read %v %v %q, failback read %v %v %q; want both read, none",
			u.LossesRead, u.Losses, u.LossesError, back.LossesRead, back.Losses, back.LossesError)
	}
	if rec.RPO == nil || !rec.RPO.LossesRead {
		t.Errorf("the record's RPO %+v does not carry the run's reading of the losses", rec.RPO)
	}
	if rec.RPO == nil || rec.RPO.Records < int64(u.Unmirrored) || rec.RPO.Link != "east->west" {
		t.Errorf("record RPO %+v", rec.RPO)
	}
	// Independently of the drill's own check: every canary record of the
	// drill is either on west's canary topic or in its quarantine, never
	// both, with no gap.
	west, err := kafkaconn.Dial(ctx, topo.Clusters["west"], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer west.Close()
	onWest := readSeqs(t, ctx, west, topo.CanaryTopic(), rec.ID)
	quarantined := readSeqs(t, ctx, west, topo.CanaryTopic()+topo.Failover.SalvageTopicSuffix, rec.ID)
	if len(quarantined) != u.Salvaged {
		t.Errorf("%d records of the drill in quarantine, the drill counted %d", len(quarantined), u.Salvaged)
	}
	n := 0
	for s := range onWest {
		n = max(n, s+1)
	}
	for s := 0; s < n; s++ {
		if onWest[s] == quarantined[s] {
			t.Errorf("canary record %d: on west %v, in quarantine %v", s, onWest[s], quarantined[s])
		}
	}
	// The home roles, no pause holding, and the mirror copies again.
	roles, err := inspect.CollectRoles(ctx, kfaketest.Session(t, topo))
	if err != nil || roles.Active != "east" || roles.Phase != "steady" || roles.Run != nil {
		t.Errorf("roles after the drill: %+v %v", roles, err)
	}
	ps, err := linkstate.Pauses(ctx, map[string]sarama.Client{"west": west}, topo.Name)
	if err != nil || len(ps) != 1 || !ps[0].Released || ps[0].ID != rec.ID {
		t.Errorf("pauses after the drill: %+v %v", ps, err)
	}
	if c := runDrill(t, topo, smallCanary(), t.TempDir()); c.Verdict != Pass {
		t.Errorf("a canary after the unplanned drill: %v", c.Reasons)
	}
}

// readSeqs returns the sequence numbers of drill id's canary records in
// topic.
func readSeqs(t *testing.T, ctx context.Context, c sarama.Client, topic, id string) map[int]bool {
	t.Helper()
	out := map[int]bool{}
	info, err := kafkaread.Topic(ctx, c, topic)
	if err != nil || !info.Exists {
		t.Fatalf("topic %s: %+v %v", topic, info, err)
	}
	if _, err := kafkaread.ReadCommitted(ctx, c, topic, 0, 0, func(r kafkaread.Record) error {
		if s, ok := canarySeq(r, id, 1<<30); ok {
			if out[s] {
				return fmt.Errorf("seq %d twice in %s", s, topic)
			}
			out[s] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestUnplannedDrillRepeated: unplanned drills back to back (each starts
// while the mirror may still be copying the last one's records, on an old
// active that the last one wiped and re-seeded) each pass: the RPO counts
// whatever the canary partition held that never reached the standby, and
// each run's salvage holds exactly that, from the offsets of the
// re-seeded partition.
func TestUnplannedDrillRepeated(t *testing.T) {
	p := newPair(t, "drills: {allow_disruptive: true}\n")
	topo := p.Topology
	startMirror(t, topo)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	d := unplannedDrill()
	d.Params.Hold = 10 * time.Millisecond
	for i := range 3 {
		rec, err := Run(ctx, kfaketest.Session(t, topo), d, Options{JournalDir: t.TempDir(), Yes: true})
		if err != nil {
			t.Fatal(err)
		}
		u := rec.Directions[0]
		t.Logf("drill %d: RPO %d, unmirrored %d (%d of the drill), salvaged %d", i, u.RPORecords, u.UnmirroredAll, u.Unmirrored, u.Salvaged)
		if rec.Verdict != Pass {
			t.Errorf("drill %d: %v", i, rec.Reasons)
		}
	}
}

// TestUnplannedDrillFencesTheActive: with fence: acl the unplanned drill's
// failover fences east although it "is lost" (it answers, so it can): the
// canary user's write to east, accepted before the pause, is refused while
// east is fenced; the failback's fence of west is verified the same way.
func TestUnplannedDrillFencesTheActive(t *testing.T) {
	const app, appPass = "app", "app-secret"
	var acls []kfake.ACL
	for _, r := range []kmsg.ACLResourceType{kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup} {
		acls = append(acls, kfake.ACL{Resource: r, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationAll, Allow: true})
	}
	acls = append(acls, kfake.ACL{Resource: kmsg.ACLResourceTypeCluster, Name: "kafka-cluster", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationIdempotentWrite, Allow: true})
	p := kfaketest.NewPair(t, kfaketest.Options{SASL: true, Mirror: testMirror,
		ClusterOpts: []kfake.Opt{kfake.EnableACLs(), kfake.User("SCRAM-SHA-512", app, appPass, acls...)},
		Extra: "failover: {fence: acl, drain_timeout: 30s, quiet_period: 300ms}\n" +
			"drills: {allow_disruptive: true, canary_user: {username: " + app + ", password: " + appPass + "}}\n"})
	topo := p.Topology
	startMirror(t, topo)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rec, err := Run(ctx, kfaketest.Session(t, topo), unplannedDrill(), Options{JournalDir: t.TempDir(), Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Verdict != Pass || len(rec.Directions) != 2 {
		t.Fatalf("verdict %s: %v\ndirections: %+v", rec.Verdict, rec.Reasons, rec.Directions)
	}
	for _, s := range rec.Steps {
		t.Logf("step %-26s %6d ms  %s", s.Name, s.ElapsedMS, s.Summary)
	}
	for _, d := range rec.Directions {
		if !d.FenceVerified || d.FenceNote != "" {
			t.Errorf("%s -> %s: fence verified %v (%s)", d.From, d.To, d.FenceVerified, d.FenceNote)
		}
	}
	roles, err := inspect.CollectRoles(ctx, kfaketest.Session(t, topo))
	if err != nil || roles.Active != "east" || roles.Phase != "steady" {
		t.Errorf("roles after the drill: %+v %v", roles, err)
	}
}
