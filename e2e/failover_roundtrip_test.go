//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/aclfence"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
)

// TestFailoverRoundTripRealKafka: a planned failover east -> west and a
// failback, on real Kafka, with `drctl mirror run` running and an
// application (principal app) producing and consuming throughout.
//
//   - After the fence, east refuses app's writes with an authorization
//     error, and no record app sent to east after the fence was
//     acknowledged; the producer moves to west when the roles flip.
//   - The consumer groups stop on east before the failover (with a lag)
//     and restart on west once the groups are translated; together they
//     read every acknowledged record exactly once. The same holds across
//     the failback.
//   - The reseed leaves east's topics holding exactly west's records, in
//     order (and west's exactly east's after the failback).
//   - ACLs: after the round trip east has exactly the ACLs it had before
//     the first fence (drctl's fence removed, the operators' own ACLs,
//     including a DENY WRITE the fence would have added, untouched). West,
//     now the standby, keeps drctl's fence (docs/failover.md: the fence of
//     the old active stays; unfence-new-active only clears the new
//     active), and `drctl unfence west` then leaves it exactly as before.
func TestFailoverRoundTripRealKafka(t *testing.T) {
	clock := newFoClock()
	// The mirror's own group sync is slowed down so that the failover's
	// translate-groups step is what moves the groups.
	ft := newFoTopo(t, "rt", "10m", `{fence: acl, producer_principals: ["User:app"], drain_timeout: 2m, quiet_period: 2s}`)
	orders, payments, ledger := ft.topic("orders"), ft.topic("payments"), ft.topic("ledger")
	createTopic(t, "east", orders, 3, nil)
	createTopic(t, "east", payments, 3, nil)
	createTopic(t, "east", ledger, 2, nil)

	// east's operators granted app its topics before drctl came along, and
	// froze the ledger against app (the very ACL drctl's fence adds there)
	// and orders against another principal.
	allow, deny := sarama.AclPermissionAllow, sarama.AclPermissionDeny
	read, write := sarama.AclOperationRead, sarama.AclOperationWrite
	ft.addACLs(t, "east",
		foTopicACL{orders, "User:app", read, allow}, foTopicACL{orders, "User:app", write, allow},
		foTopicACL{payments, "User:app", read, allow}, foTopicACL{payments, "User:app", write, allow},
		foTopicACL{ledger, "User:app", read, allow}, foTopicACL{ledger, "User:app", write, deny},
		foTopicACL{orders, "User:intruder", write, deny})
	eastBefore, westBefore := ft.acls(t, "east"), ft.acls(t, "west")
	t.Logf("east's ACLs before: %d, west's: %d", len(eastBefore), len(westBefore))
	ledgerProd := ft.mirrorTopo().producer(t, "east", "")
	for i := range 20 {
		if _, _, err := ledgerProd.SendMessage(&sarama.ProducerMessage{Topic: ledger, Partition: int32(i % 2), Value: sarama.StringEncoder("entry-" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	eastCl, westCl := ft.dial(t, "east"), ft.dial(t, "west")
	eastID, err := kafkaconn.ClusterID(eastCl)
	if err != nil {
		t.Fatal(err)
	}
	westID, err := kafkaconn.ClusterID(westCl)
	if err != nil {
		t.Fatal(err)
	}

	startMirror(t, ft.mirrorTopo(), "mirror", "--session-timeout", "6s")
	app := newFoApp(t, ft, orders, payments)
	billing := app.group(ft.topic("billing"), orders, payments)
	audit := app.group(ft.topic("audit"), orders)
	ctx, stopApp := context.WithCancel(context.Background())
	appDone := app.start(ctx)
	defer func() { stopApp(); appDone() }()
	bm, am := billing.start("east"), audit.start("east")
	clock.lap("setup: topics, ACLs, mirror, app and groups running")

	// The groups read for a while, then stop with a lag: their positions
	// on east are somewhere in the middle of the data.
	kfaketest.WaitFor(t, time.Minute, "the groups read on east", func() error {
		if billing.read() < 300 || audit.read() < 100 {
			return fmt.Errorf("billing %d, audit %d", billing.read(), audit.read())
		}
		return nil
	})
	am.stop()
	app.waitAcked(100, time.Minute)
	bm.stop()
	app.waitAcked(200, time.Minute)
	t.Logf("before the failover: %s; billing read %d, audit %d", app.summary(), billing.read(), audit.read())
	clock.lap("traffic on east; groups stopped with a lag")

	// Planned failover east -> west while the producer keeps trying.
	var fenceAt time.Time
	var onWest []*foMember
	fo := ft.run(t, 4*time.Minute, func(e plans.Event) {
		if e.Type != plans.EventStepDone {
			return
		}
		switch e.Name {
		case failover.StepFenceActive:
			fenceAt = e.Time
		case failover.StepTranslateGroups:
			// Consumers restart on the new active once their positions
			// are there.
			onWest = append(onWest, billing.start("west"), audit.start("west"))
		}
	}, "failover", "--to", "west", "--yes")
	if fo.Code != 0 || fo.outcome().Outcome != plans.OutcomeSucceeded {
		t.Fatalf("failover: exit %d, outcome %q: %s", fo.Code, fo.outcome().Outcome, fo.outcome().Error)
	}
	clock.lap("drctl failover --to west (whole plan, reseed included)")
	app.pause(true)
	if fenceAt.IsZero() || len(onWest) != 2 {
		t.Fatalf("the run reported no fence-active or translate-groups step: %v", fo.timings())
	}
	if e, _ := fo.stepDone(failover.StepTranslateGroups); strings.HasPrefix(e.Summary, "0 ") {
		t.Errorf("translate-groups moved no position (%s), yet both groups stopped on east with a lag", e.Summary)
	}
	roles := foRoles(t, ft)
	if roles.Active != "west" || roles.Phase != "steady" || roles.Run != nil {
		t.Fatalf("roles after the failover: %+v", roles)
	}
	authz, other := app.refusals("east")
	if authz == 0 {
		t.Errorf("app's producer was never refused by east after the fence: %s", app.summary())
	}
	if late := app.ackedAfter("east", fenceAt); len(late) > 0 {
		t.Errorf("east acknowledged %d records app sent after the fence (%v): the fence let writes through", len(late), foHead(late))
	}
	if err := app.probe("east", orders); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Errorf("app writing to the fenced old active: %v, want %v", err, sarama.ErrTopicAuthorizationFailed)
	}
	t.Logf("east refused %d of app's records with an authorization error after the fence (%d with other errors); %s", authz, other, app.summary())
	fenced := fenceACLs("User:app", orders, payments, ledger)
	// The mirror's ACL sync copied east's ACLs for app and intruder to
	// west, all but the ledger's DENY WRITE for app: that one is what
	// drctl's fence stands for, which the sync leaves to the fence.
	synced := map[foACL]bool{}
	for a := range eastBefore {
		if !fenced[a] {
			synced[a] = true
		}
	}
	if d := diffACLs(ft.acls(t, "east"), unionACLs(eastBefore, fenced)); d != "" {
		t.Errorf("east's ACLs after the failover are not its own plus drctl's fence: %s", d)
	}
	t.Log(billing.verify("after the failover to west", time.Minute))
	t.Log(audit.verify("after the failover to west", time.Minute))
	clock.lap("checks: fence, roles, exactly-once on west")

	// The reseed: east holds exactly west's records.
	ft.waitLinkCaught(t, "west", "east", time.Minute)
	for _, tp := range []string{orders, payments, ledger} {
		kfaketest.WaitFor(t, time.Minute, "east re-seeded with "+tp, func() error {
			n, err := sameTopic(westCl, eastCl, tp, westID)
			if err == nil {
				t.Logf("east's %s holds exactly west's %d records, in order", tp, n)
			}
			return err
		})
	}
	clock.lap("checks: east re-seeded with west's records")

	// Traffic on west; the groups stop with a lag again; failback.
	app.pause(false)
	app.waitAcked(150, time.Minute)
	onWest[1].stop()
	app.waitAcked(50, time.Minute)
	onWest[0].stop()
	app.waitAcked(150, time.Minute)
	clock.lap("traffic on west; groups stopped with a lag")
	var westFenceAt time.Time
	var onEast []*foMember
	fb := ft.run(t, 4*time.Minute, func(e plans.Event) {
		if e.Type != plans.EventStepDone {
			return
		}
		switch e.Name {
		case failover.StepFenceActive:
			westFenceAt = e.Time
		case failover.StepTranslateGroups:
			onEast = append(onEast, billing.start("east"), audit.start("east"))
		}
	}, "failback", "--yes")
	if fb.Code != 0 || fb.outcome().Outcome != plans.OutcomeSucceeded {
		t.Fatalf("failback: exit %d, outcome %q: %s", fb.Code, fb.outcome().Outcome, fb.outcome().Error)
	}
	clock.lap("drctl failback (whole plan, reseed included)")
	app.pause(true)
	if e, _ := fb.stepDone(failover.StepTranslateGroups); strings.HasPrefix(e.Summary, "0 ") || len(onEast) != 2 {
		t.Errorf("the failback's translate-groups moved no position (%s), yet both groups stopped on west with a lag", e.Summary)
	}
	roles = foRoles(t, ft)
	if roles.Active != "east" || roles.Phase != "steady" || roles.Epoch < 4 {
		t.Fatalf("roles after the failback: %+v", roles)
	}
	authz, _ = app.refusals("west")
	if authz == 0 {
		t.Errorf("app's producer was never refused by west after its fence: %s", app.summary())
	}
	if late := app.ackedAfter("west", westFenceAt); len(late) > 0 {
		t.Errorf("west acknowledged %d records app sent after its fence (%v)", len(late), foHead(late))
	}
	t.Log(billing.verify("after the failback to east", time.Minute))
	t.Log(audit.verify("after the failback to east", time.Minute))
	for _, m := range onEast {
		m.stop()
	}
	t.Logf("after the round trip: %s", app.summary())

	// ACLs: east exactly as before; west keeps drctl's fence until unfenced.
	if d := diffACLs(ft.acls(t, "east"), eastBefore); d != "" {
		t.Errorf("east's ACLs after the round trip differ from before the first fence: %s", d)
	}
	if d := diffACLs(ft.acls(t, "west"), unionACLs(unionACLs(westBefore, synced), fenced)); d != "" {
		t.Errorf("west's ACLs after the failback are not its own, east's (synced) and drctl's fence: %s", d)
	}
	if err := app.probe("west", orders); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Errorf("app writing to the fenced standby west: %v, want %v", err, sarama.ErrTopicAuthorizationFailed)
	}
	var removed []aclfence.ACL
	un := runDrctl(t, ft.env(), "-c", ft.Path, "-o", "json", "unfence", "west")
	if un.code != 0 || json.Unmarshal([]byte(un.stdout), &removed) != nil || len(removed) != 3 {
		t.Errorf("drctl unfence west: exit %d, %s; want the 3 ACLs of the fence removed", un.code, un.stdout)
	}
	if d := diffACLs(ft.acls(t, "west"), unionACLs(westBefore, synced)); d != "" {
		t.Errorf("west's ACLs after drctl unfence west are not its own and east's (synced): %s", d)
	}
	removed = nil
	un = runDrctl(t, ft.env(), "-c", ft.Path, "-o", "json", "unfence", "east")
	if un.code != 0 || json.Unmarshal([]byte(un.stdout), &removed) != nil || len(removed) != 0 {
		t.Errorf("drctl unfence east after the round trip: exit %d, %s; want nothing removed", un.code, un.stdout)
	}
	if d := diffACLs(ft.acls(t, "east"), eastBefore); d != "" {
		t.Errorf("east's ACLs after drctl unfence east differ from before: %s", d)
	}
	clock.lap("checks: roles, fence, exactly-once on east, ACLs")

	ft.waitLinkCaught(t, "east", "west", time.Minute)
	for _, tp := range []string{orders, payments, ledger} {
		kfaketest.WaitFor(t, time.Minute, "west re-seeded with "+tp, func() error {
			n, err := sameTopic(eastCl, westCl, tp, eastID)
			if err == nil {
				t.Logf("west's %s holds exactly east's %d records, in order", tp, n)
			}
			return err
		})
	}
	clock.lap("checks: west re-seeded with east's records")

	phases := func(r *foRun) string {
		return fmt.Sprintf("steps preflight..translate-groups %v (%v after the process started), steps unfence-new-active..finish %v (reseed), whole process %v",
			r.sumSteps(failover.StepPreflight, failover.StepTranslateGroups).Round(time.Millisecond),
			r.doneAt(failover.StepTranslateGroups).Round(time.Millisecond),
			r.sumSteps(failover.StepUnfenceNew, failover.StepFinish).Round(time.Millisecond), r.Took.Round(time.Millisecond))
	}
	t.Logf("timings:\n%s\n  failover: %s\n  failback: %s", clock.report(), phases(fo), phases(fb))
}

// foRoles reads the live roles.
func foRoles(t testing.TB, ft *foTopo) inspect.Roles {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := inspect.CollectRoles(ctx, session(t, ft.Topo))
	if err != nil {
		t.Fatalf("roles: %v", err)
	}
	return r
}
