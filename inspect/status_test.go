package inspect

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

func TestStatusBothReachable(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\", \"payments\\\\..*\"]}\n  groups: {exclude: [\"ignored-.*\"]}"})
	east, west := kfaketest.Dial(t, p.Topology, "east"), kfaketest.Dial(t, p.Topology, "west")
	kfaketest.CreateTopicOn(t, east, "orders", 3, map[string]string{"retention.ms": "3600000"})
	kfaketest.CreateTopicOn(t, west, "orders", 3, map[string]string{"retention.ms": "7200000"})
	kfaketest.CreateTopicOn(t, east, "payments.eu", 2, nil)
	kfaketest.CreateTopicOn(t, west, "payments.eu", 2, nil)
	kfaketest.CreateTopicOn(t, east, "payments.us", 4, nil)
	kfaketest.CreateTopicOn(t, west, "payments.us", 2, nil)
	kfaketest.CreateTopicOn(t, east, "scratch", 1, nil)
	kfaketest.CommitOn(t, east, "billing", "orders", map[int32]int64{0: 0})
	kfaketest.CommitOn(t, east, "ignored-group", "orders", map[int32]int64{0: 0})

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	st, _ := CollectStatus(ctx, kfaketest.Session(t, p.Topology))

	if len(st.Unreachable()) != 0 {
		t.Fatalf("unreachable: %v (%+v)", st.Unreachable(), st.Clusters)
	}
	if st.Roles.Active != "east" || st.Roles.Standby != "west" || st.Roles.Epoch != 0 {
		t.Errorf("roles = %+v, want the file's home roles at epoch 0", st.Roles)
	}
	if st.Clusters[0].Name != "east" || st.Clusters[0].Role != "active" || st.Clusters[0].ClusterID != "kfake-east" || st.Clusters[1].ClusterID != "kfake-west" {
		t.Errorf("clusters = %+v", st.Clusters)
	}
	if len(st.Clusters[0].Brokers) != 1 {
		t.Errorf("brokers = %+v", st.Clusters[0].Brokers)
	}
	byName := map[string]TopicStatus{}
	for _, tp := range st.Topics {
		byName[tp.Name] = tp
	}
	if len(st.Topics) != 3 {
		t.Errorf("topics = %+v, want orders, payments.eu, payments.us (scratch is not selected)", st.Topics)
	}
	if o := byName["orders"]; o.InParity || len(o.ConfigDrift) != 1 || o.ConfigDrift[0] != (ConfigDrift{Key: "retention.ms", Active: "3600000", Standby: "7200000"}) {
		t.Errorf("orders = %+v, want drift on retention.ms", o)
	}
	if !byName["payments.eu"].InParity {
		t.Errorf("payments.eu = %+v, want parity", byName["payments.eu"])
	}
	if u := byName["payments.us"]; u.InParity || u.Active.Partitions != 4 || u.Standby.Partitions != 2 {
		t.Errorf("payments.us = %+v, want 4 vs 2 partitions, no parity", u)
	}
	if len(st.Groups) != 1 || st.Groups[0].Name != "billing" || !st.Groups[0].Active.Exists || st.Groups[0].Standby.Exists {
		t.Errorf("groups = %+v, want billing on east only", st.Groups)
	}
}

func TestStatusOneClusterDown(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{})
	p.Stop("west")
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Second)
	defer cancel()
	st, _ := CollectStatus(ctx, kfaketest.Session(t, p.Topology))
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("status took %v with a cluster down", took)
	}
	down := st.Unreachable()
	if len(down) != 1 || down[0] != "west" {
		t.Fatalf("unreachable = %v, want [west]", down)
	}
	w := st.Clusters[1]
	if w.Name != "west" || !strings.Contains(w.Error, "cluster west") {
		t.Errorf("west = %+v, want an error naming the cluster", w)
	}
	if !st.Clusters[0].Reachable {
		t.Errorf("east should be reachable: %+v", st.Clusters[0])
	}
	if len(st.Problems) == 0 {
		t.Error("no problem reported for the down cluster")
	}
}

func TestValidateOnline(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{SASL: true})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	v := ValidateOnline(ctx, kfaketest.Session(t, p.Topology))
	if v.Failed() {
		t.Fatalf("validation failed: %+v", v.Checks)
	}
	reach := 0
	for _, c := range v.Checks {
		if c.Name == "reachable" && c.Result == CheckOK {
			reach++
		}
	}
	if reach != 2 {
		t.Errorf("reachable checks = %d, want 2: %+v", reach, v.Checks)
	}
}

func TestValidateOnlineWrongPassword(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{SASL: true})
	data, err := os.ReadFile(p.Path)
	if err != nil {
		t.Fatal(err)
	}
	// Only west gets the wrong password.
	src := string(data)
	i := strings.LastIndex(src, "password: "+kfaketest.Password)
	src = src[:i] + "password: wrong-pass-123" + src[i+len("password: "+kfaketest.Password):]
	topo, err := topology.Parse(p.Path, []byte(src), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	v := ValidateOnline(ctx, kfaketest.Session(t, topo))
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("took %v", took)
	}
	var found bool
	for _, c := range v.Checks {
		if strings.Contains(c.Detail, "wrong-pass-123") || strings.Contains(c.Detail, kfaketest.Password) {
			t.Errorf("a password was printed: %+v", c)
		}
		if c.Cluster == "west" && c.Name == "reachable" {
			found = true
			if c.Result != CheckFail || !strings.Contains(c.Detail, "cluster west") || !strings.Contains(c.Detail, "authentication") {
				t.Errorf("west reachable = %+v, want a failure naming the cluster and authentication", c)
			}
		}
		if c.Cluster == "east" && c.Name == "reachable" && c.Result != CheckOK {
			t.Errorf("east = %+v", c)
		}
	}
	if !found || !v.Unreachable() {
		t.Errorf("no failed reachable check for west: %+v", v.Checks)
	}
}
