package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/aclfence"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror/aclsync"
	"github.com/drctl/drctl/mirror/groupsync"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

// Status is the snapshot that `drctl status` prints and the TUI renders.
// Its JSON form is a stable, documented schema (docs/status.md): fields are
// only ever added.
type Status struct {
	Topology  string          `json:"topology" yaml:"topology"`
	CheckedAt time.Time       `json:"checked_at" yaml:"checked_at"`
	Roles     Roles           `json:"roles" yaml:"roles"`
	Clusters  []ClusterStatus `json:"clusters" yaml:"clusters"`
	Topics    []TopicStatus   `json:"topics" yaml:"topics"`
	Groups    []GroupStatus   `json:"groups" yaml:"groups"`
	// Mirror is the live link active -> standby: its processes and lag
	// (absent when it was not read; MirrorNotRead then says why).
	Mirror        *linkstate.State `json:"mirror,omitempty" yaml:"mirror,omitempty"`
	MirrorNotRead string           `json:"mirror_not_read,omitempty" yaml:"mirror_not_read,omitempty"`
	// Pause is a pause that holds the live link now (a drill's; absent:
	// none, or the pauses could not be read).
	Pause *linkstate.Pause `json:"pause,omitempty" yaml:"pause,omitempty"`
	// ACLs is the ACL parity of the standby with the active, per
	// principal, and the standby's write fence (absent when a cluster is
	// unreachable or the roles are moving).
	ACLs *aclsync.Parity `json:"acls,omitempty" yaml:"acls,omitempty"`
	// LastDrill is the newest drill recorded in the clusters (absent: none).
	LastDrill *DrillStatus `json:"last_drill,omitempty" yaml:"last_drill,omitempty"`
	// Problems lists, in plain words, everything that needs an operator.
	Problems []string `json:"problems" yaml:"problems"`
	// Readiness is the "ready to fail over?" verdict of this snapshot
	// (Assess).
	Readiness Verdict `json:"readiness" yaml:"readiness"`
}

// Roles is the live role state that won (the highest epoch).
type Roles struct {
	Epoch   int64           `json:"epoch" yaml:"epoch"`
	Active  string          `json:"active" yaml:"active"`
	Standby string          `json:"standby" yaml:"standby"`
	Phase   rolestate.Phase `json:"phase" yaml:"phase"`
	// Source says where the roles came from: "cluster NAME" or
	// "topology file" when no cluster holds state yet.
	Source string         `json:"source" yaml:"source"`
	Run    *rolestate.Run `json:"run,omitempty" yaml:"run,omitempty"`
}

// ClusterStatus is one cluster as status sees it.
type ClusterStatus struct {
	Name        string   `json:"name" yaml:"name"`
	Role        string   `json:"role" yaml:"role"`
	Bootstrap   []string `json:"bootstrap" yaml:"bootstrap"`
	Reachable   bool     `json:"reachable" yaml:"reachable"`
	Error       string   `json:"error,omitempty" yaml:"error,omitempty"`
	ClusterInfo `yaml:",inline"`
	// StateEpoch is the epoch of the role state stored in this cluster
	// (-1 when it holds none); Stale is true when it lags the winner.
	StateEpoch int64 `json:"state_epoch" yaml:"state_epoch"`
	Stale      bool  `json:"stale" yaml:"stale"`
	// RecordedClusterID is the id the role state recorded for the cluster
	// (absent before any run); IdentityChanged is true when the cluster
	// answers with another id: it was rebuilt or replaced.
	RecordedClusterID string `json:"recorded_cluster_id,omitempty" yaml:"recorded_cluster_id,omitempty"`
	IdentityChanged   bool   `json:"identity_changed,omitempty" yaml:"identity_changed,omitempty"`
	// Fenced says whether drctl's fence is in place on the cluster (its
	// fence record holds ACLs not yet removed); absent when the topology
	// does not fence with ACLs or the record could not be read.
	Fenced *bool `json:"fenced,omitempty" yaml:"fenced,omitempty"`
	// FencePermitted says whether drctl's principal may Alter the
	// cluster's ACLs, which fencing needs (the check of validate --online);
	// absent without fence: acl or when the brokers do not report it.
	FencePermitted *bool `json:"fence_permitted,omitempty" yaml:"fence_permitted,omitempty"`
}

// TopicStatus compares one selected topic on both clusters.
type TopicStatus struct {
	Name    string    `json:"name" yaml:"name"`
	Active  TopicSide `json:"active" yaml:"active"`
	Standby TopicSide `json:"standby" yaml:"standby"`
	// InParity is true when the topic exists on both sides with the same
	// partition count and no config drift.
	InParity    bool          `json:"in_parity" yaml:"in_parity"`
	ConfigDrift []ConfigDrift `json:"config_drift,omitempty" yaml:"config_drift,omitempty"`
}

// TopicSide is a topic on one cluster. Configs holds only the settings made
// on the topic itself (not broker or default values).
type TopicSide struct {
	// Unknown is true when the side's cluster did not answer: Exists then
	// says nothing.
	Unknown           bool              `json:"unknown,omitempty" yaml:"unknown,omitempty"`
	Exists            bool              `json:"exists" yaml:"exists"`
	Partitions        int32             `json:"partitions" yaml:"partitions"`
	ReplicationFactor int16             `json:"replication_factor" yaml:"replication_factor"`
	Configs           map[string]string `json:"configs,omitempty" yaml:"configs,omitempty"`
	// effective holds every config's effective value, to compare sides.
	effective map[string]string
}

// ConfigDrift is one topic setting that differs between the clusters ("" =
// not set on the topic).
type ConfigDrift struct {
	Key     string `json:"key" yaml:"key"`
	Active  string `json:"active" yaml:"active"`
	Standby string `json:"standby" yaml:"standby"`
}

// GroupStatus compares one selected consumer group on both clusters.
type GroupStatus struct {
	Name    string    `json:"name" yaml:"name"`
	Active  GroupSide `json:"active" yaml:"active"`
	Standby GroupSide `json:"standby" yaml:"standby"`
	// Sync says whether the standby holds the translated position of the
	// group and how old it is (absent when the mirror never synced it).
	Sync *groupsync.Status `json:"sync,omitempty" yaml:"sync,omitempty"`
}

// GroupSide is a group on one cluster; State is Kafka's word (Empty,
// Stable, PreparingRebalance, Dead, ...).
type GroupSide struct {
	// Unknown is true when the side's cluster did not answer: Exists,
	// State and Members then say nothing.
	Unknown bool   `json:"unknown,omitempty" yaml:"unknown,omitempty"`
	Exists  bool   `json:"exists" yaml:"exists"`
	State   string `json:"state,omitempty" yaml:"state,omitempty"`
	Members int    `json:"members" yaml:"members"`
}

// Unreachable reports whether any cluster could not be reached.
func (s *Status) Unreachable() []string {
	var out []string
	for _, c := range s.Clusters {
		if !c.Reachable {
			out = append(out, c.Name)
		}
	}
	return out
}

// clusterView is what one cluster answered.
type clusterView struct {
	err    error
	info   ClusterInfo
	topics map[string]TopicSide
	groups map[string]GroupSide
}

// CollectStatus builds the snapshot through the command's session: every
// read (topics, groups, roles, fences, drills, runs, the link's lag and
// group sync) goes through its one client per cluster, and a cluster the
// session has not dialled yet is dialled once. It also returns the
// per-partition lag of the live link it measured (nil when a cluster is
// unreachable or the lag could not be measured), so that a caller showing
// both (the TUI) measures it once. It returns within ctx's deadline even
// when a cluster does not answer; an unreachable cluster is part of the
// snapshot, not an error.
func CollectStatus(ctx context.Context, clusters *kafkaconn.Clusters) (*Status, *linkstate.LagReport) {
	var lag *linkstate.LagReport
	topo := clusters.Topology()
	clusters.Connect(ctx)
	names := topo.ClusterNames()
	views := make(map[string]*clusterView, len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Go(func() {
			v := readCluster(ctx, topo, clusters, name)
			mu.Lock()
			views[name] = v
			mu.Unlock()
		})
	}
	clients := clusters.Clients()
	view := rolestate.Resolve(ctx, topo, clients)
	// The link's state is the slowest read with thousands of partitions
	// (the lag of every one): it runs while the rest is read.
	var linkRead *linkView
	linkDone := make(chan struct{})
	if len(clients) == len(names) && view.Lost == "" {
		active, standby := view.Current.Active, view.Current.Standby
		if !anyReachable(view) {
			active, standby = RoleUnknown, RoleUnknown
		}
		link := topo.Link(active, standby)
		go func() {
			defer close(linkDone)
			linkRead = readLink(ctx, clusters, clients[standby], link)
		}()
	} else {
		close(linkDone)
	}
	wg.Wait()
	st := assemble(topo, views, view)
	if view.Lost != "" {
		st.MirrorNotRead = "not read: the live roles are lost, so the link's direction is unknown"
	} else if len(clients) != len(names) {
		var down []string
		for _, c := range st.Clusters {
			if !c.Reachable {
				down = append(down, c.Name+" ("+c.Role+")")
			}
		}
		st.MirrorNotRead = "not read: the link's state needs both clusters, and " + strings.Join(down, " and ") + " did not answer"
	}
	readFences(ctx, topo, st, clients)
	readACLParity(topo, st, clients)
	st.LastDrill = lastDrill(ctx, topo, clients, time.Now())
	st.Problems = append(st.Problems, drillProblems(topo, st.LastDrill)...)
	readPause(ctx, topo, st, clients)
	var lost int64 = -1
	if st.Roles.Run != nil {
		lost = runProblem(ctx, st, clients)
	}
	for _, c := range st.Clusters {
		if c.IdentityChanged {
			ch := IdentityChange{Cluster: c.Name, Recorded: c.RecordedClusterID, Now: c.ClusterID, LostRecords: lost}
			st.Problems = append(st.Problems, ch.String())
		}
	}
	<-linkDone
	if linkRead != nil {
		ls := linkRead.state
		st.Mirror, lag = &ls, linkRead.lag
		if syncs := linkRead.syncs; syncs != nil {
			for i := range st.Groups {
				if gs, ok := syncs[st.Groups[i].Name]; ok {
					st.Groups[i].Sync = &gs
					if !gs.InSync && gs.Reason != "" {
						st.Problems = append(st.Problems, "group "+gs.Group+" is not in sync on "+st.Roles.Standby+": "+gs.Reason)
					}
				}
			}
		}
		switch {
		case ls.Error != "":
			st.Problems = append(st.Problems, "mirror "+ls.Link+": "+ls.Error)
		case ls.LostRecords > 0:
			st.Problems = append(st.Problems, fmt.Sprintf("mirror %s: %d source records were removed by retention before they were mirrored (see drctl mirror lag)", ls.Link, ls.LostRecords))
		case !ls.Running:
			st.Problems = append(st.Problems, "no mirror process runs for "+ls.Link+": start drctl mirror run")
		}
		st.Problems = append(st.Problems, ls.Problems()...)
	}
	st.Readiness = Assess(st)
	return st, lag
}

// linkView is what status reads of the link from the active to the
// standby: its state and lag, and the sync of its groups (nil when it
// could not be read).
type linkView struct {
	state linkstate.State
	lag   *linkstate.LagReport
	syncs map[string]groupsync.Status
}

func readLink(ctx context.Context, clusters *kafkaconn.Clusters, standby sarama.Client, link topology.Link) *linkView {
	v := &linkView{}
	var wg sync.WaitGroup
	wg.Go(func() {
		if syncs, err := groupsync.StatusFrom(ctx, standby, clusters.Topology(), link); err == nil {
			v.syncs = syncs
		}
	})
	v.state, v.lag = linkstate.DescribeLag(ctx, clusters, link)
	wg.Wait()
	return v
}

// readCluster reads what status shows of cluster name through the
// session's client.
func readCluster(ctx context.Context, topo *topology.Topology, clusters *kafkaconn.Clusters, name string) *clusterView {
	v := &clusterView{}
	c := topo.Clusters[name]
	client, err := clusters.Need(name)
	if err != nil {
		v.err = err
		return v
	}
	if v.info, err = describeCluster(ctx, client); err != nil {
		v.err = kafkaconn.Explain(c, err)
		return v
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		v.err = kafkaconn.Explain(c, err)
		return v
	}
	if v.topics, err = selectedTopics(admin, topo); err != nil {
		v.err = kafkaconn.Explain(c, err)
		return v
	}
	if v.groups, err = SelectedGroups(admin, topo); err != nil {
		v.err = kafkaconn.Explain(c, err)
	}
	return v
}

// selectedTopics lists the topics topo mirrors with their shape and
// topic-level configs.
func selectedTopics(admin sarama.ClusterAdmin, topo *topology.Topology) (map[string]TopicSide, error) {
	all, err := kafkaread.ListTopics(admin)
	if err != nil {
		return nil, err
	}
	out := map[string]TopicSide{}
	var resources []*sarama.ConfigResource
	for name, d := range all {
		if !topo.Mirrors(name) {
			continue
		}
		out[name] = TopicSide{Exists: true, Partitions: d.Partitions, ReplicationFactor: d.ReplicationFactor, Configs: map[string]string{}, effective: map[string]string{}}
		resources = append(resources, &sarama.ConfigResource{Type: sarama.TopicResource, Name: name})
	}
	if len(resources) == 0 {
		return out, nil
	}
	results, err := admin.DescribeConfigs(resources, sarama.DescribeConfigsOptions{})
	if err != nil {
		return nil, err
	}
	for _, r := range results {
		side, ok := out[r.Name]
		if !ok || r.ErrorCode != 0 {
			continue
		}
		for _, e := range r.Configs {
			if e.Sensitive {
				continue
			}
			side.effective[e.Name] = e.Value
			if e.Source == sarama.SourceTopic {
				side.Configs[e.Name] = e.Value
			}
		}
	}
	return out, nil
}

// SelectedGroups lists the groups topo syncs (topology.Topology.SyncsGroup)
// with their state and member count.
func SelectedGroups(admin sarama.ClusterAdmin, topo *topology.Topology) (map[string]GroupSide, error) {
	listed, err := admin.ListConsumerGroups()
	if err != nil {
		return nil, err
	}
	var names []string
	for g := range listed {
		if topo.SyncsGroup(g) {
			names = append(names, g)
		}
	}
	out := map[string]GroupSide{}
	if len(names) == 0 {
		return out, nil
	}
	slices.Sort(names)
	descs, err := admin.DescribeConsumerGroups(names)
	if err != nil {
		return nil, err
	}
	for _, d := range descs {
		out[d.GroupId] = GroupSide{Exists: true, State: d.State, Members: len(d.Members)}
	}
	return out, nil
}

// RoleUnknown is the role, phase and source status reports when no
// cluster answers: the live roles are kept in the clusters, and the
// topology file's home roles say nothing about them.
const RoleUnknown = "unknown"

func assemble(topo *topology.Topology, views map[string]*clusterView, rv rolestate.View) *Status {
	cur := rv.Current
	s := &Status{
		Topology:  topo.Name,
		CheckedAt: time.Now().UTC(),
		Roles:     Roles{Epoch: cur.Epoch, Active: cur.Active, Standby: cur.Standby, Phase: cur.Phase, Source: rv.Source, Run: cur.Run},
		Topics:    []TopicStatus{},
		Groups:    []GroupStatus{},
		Problems:  []string{},
	}
	order := []string{cur.Active, cur.Standby}
	unknown := !anyReachable(rv) || rv.Lost != ""
	if unknown {
		s.Roles = Roles{Epoch: -1, Active: RoleUnknown, Standby: RoleUnknown, Phase: RoleUnknown, Source: RoleUnknown}
		if rv.Lost != "" {
			s.Problems = append(s.Problems, rv.Lost)
		} else {
			s.Problems = append(s.Problems, "no cluster answers: the live roles are unknown (they are kept in the clusters; the topology file's home roles are "+
				topo.Active+" active, "+topo.Standby+" standby)")
		}
		order = topo.ClusterNames()
	}
	for _, name := range order {
		c, v := topo.Clusters[name], views[name]
		role := "standby"
		switch {
		case unknown:
			role = RoleUnknown
		case name == cur.Active:
			role = "active"
		}
		cs := ClusterStatus{Name: name, Role: role, Bootstrap: c.Bootstrap, Reachable: v.err == nil, ClusterInfo: v.info, StateEpoch: -1}
		if cs.Brokers == nil {
			cs.Brokers = []Broker{}
		}
		if v.err != nil {
			cs.Error = v.err.Error()
			if strings.HasPrefix(cs.Error, "cluster "+name+" ") { // the error names the cluster: once is enough
				s.Problems = append(s.Problems, cs.Error+" (role "+role+")")
			} else {
				s.Problems = append(s.Problems, "cluster "+name+" ("+role+") is unreachable: "+cs.Error)
			}
		}
		if rec := cur.ClusterIDs[name]; rec != "" && !unknown {
			cs.RecordedClusterID = rec
			cs.IdentityChanged = cs.Reachable && cs.ClusterID != "" && cs.ClusterID != rec
		}
		if st, ok := rv.Clusters[name]; ok {
			if st.Found {
				cs.StateEpoch = st.State.Epoch
			}
			cs.Stale = st.Stale
			if st.Stale {
				s.Problems = append(s.Problems, staleProblem(name, role, st, rv))
			}
		}
		s.Clusters = append(s.Clusters, cs)
	}
	if unknown {
		return s
	}
	act, stb := views[cur.Active], views[cur.Standby]
	// A side whose cluster did not answer is unknown, never "missing": its
	// topics and groups are listed from the side that answered.
	topicSide := func(v *clusterView, n string) TopicSide {
		if v.err != nil {
			return TopicSide{Unknown: true}
		}
		return v.topics[n]
	}
	groupSide := func(v *clusterView, n string) GroupSide {
		if v.err != nil {
			return GroupSide{Unknown: true}
		}
		return v.groups[n]
	}
	for _, n := range unionKeys(act.topics, stb.topics) {
		ts := TopicStatus{Name: n, Active: topicSide(act, n), Standby: topicSide(stb, n)}
		if ts.Active.Exists && ts.Standby.Exists {
			ts.ConfigDrift = configDrift(ts.Active, ts.Standby)
		}
		ts.InParity = ts.Active.Exists && ts.Standby.Exists && ts.Active.Partitions == ts.Standby.Partitions && len(ts.ConfigDrift) == 0
		s.Topics = append(s.Topics, ts)
	}
	for _, n := range unionKeys(act.groups, stb.groups) {
		gs := GroupStatus{Name: n, Active: groupSide(act, n), Standby: groupSide(stb, n)}
		if gs.Standby.Members > 0 {
			s.Problems = append(s.Problems, "group "+n+" has members on the standby "+cur.Standby+"; stop those consumers before a failover")
		}
		s.Groups = append(s.Groups, gs)
	}
	return s
}

// configDrift compares, for every setting made on the topic on either
// side, the effective values on both sides: a value set on one side that
// equals the other side's default is not drift.
func configDrift(a, b TopicSide) []ConfigDrift {
	value := func(s TopicSide, k string) string {
		if v, ok := s.effective[k]; ok {
			return v
		}
		return s.Configs[k]
	}
	var out []ConfigDrift
	for _, k := range unionKeys(a.Configs, b.Configs) {
		if mirrorIgnoredConfigs[k] {
			continue
		}
		if va, vb := value(a, k), value(b, k); va != vb {
			out = append(out, ConfigDrift{Key: k, Active: va, Standby: vb})
		}
	}
	return out
}

// mirrorIgnoredConfigs are settings the mirror deliberately keeps
// different on the standby (see mirror/topicsync): they are not drift.
var mirrorIgnoredConfigs = map[string]bool{
	"message.timestamp.type":                  true,
	"message.timestamp.difference.max.ms":     true,
	"message.timestamp.before.max.ms":         true,
	"message.timestamp.after.max.ms":          true,
	"leader.replication.throttled.replicas":   true,
	"follower.replication.throttled.replicas": true,
}

// unionKeys returns the keys of a and b, sorted, each once.
func unionKeys[V any](a, b map[string]V) []string {
	keys := slices.AppendSeq(slices.Collect(maps.Keys(a)), maps.Keys(b))
	slices.Sort(keys)
	return slices.Compact(keys)
}

// CollectRoles reads only the live roles: from both clusters at once, the
// higher epoch wins. It fails only when no cluster can be reached.
func CollectRoles(ctx context.Context, clusters *kafkaconn.Clusters) (Roles, error) {
	clusters.Connect(ctx)
	v, err := rolestate.ResolveLive(ctx, clusters)
	if err != nil {
		return Roles{}, err
	}
	cur := v.Current
	return Roles{Epoch: cur.Epoch, Active: cur.Active, Standby: cur.Standby, Phase: cur.Phase, Source: v.Source, Run: cur.Run}, nil
}

// staleProblem says why cluster name (role) is stale and what to do. A
// cluster with an older role state missed a failover; one with none at
// all while the other holds one lost it: rebuilt empty, or its internal
// topics deleted. Only the standby can be re-seeded.
func staleProblem(name, role string, st rolestate.ClusterState, rv rolestate.View) string {
	if st.Found {
		return "cluster " + name + " holds an older role state (stale); a failover happened without it: reseed it with drctl reseed " + name
	}
	lost := fmt.Sprintf("cluster %s holds no role state (stale) while %s holds epoch %d: it was rebuilt empty or lost drctl's internal topics", name, rv.Source, rv.Current.Epoch)
	if role == "active" {
		return lost + "; it is the active cluster: check its data before anything else (a reseed applies only to the standby)"
	}
	return lost + "; reseed it with drctl reseed " + name + " to restore its role"
}

// anyReachable reports whether any cluster's role state could be read.
func anyReachable(v rolestate.View) bool {
	for _, c := range v.Clusters {
		if c.Reachable {
			return true
		}
	}
	return false
}

// runProblem reads the progress of the run in progress from the clusters,
// puts its real step into st.Roles.Run.Step, and lists the run as a
// problem naming the step and both ways out: resume, and abort before the
// point of no return.
// It returns the run's RPO in records when its rpo-report step ran (-1
// otherwise).
func runProblem(ctx context.Context, st *Status, clients map[string]sarama.Client) (rpo int64) {
	rpo = -1
	run := *st.Roles.Run
	st.Roles.Run = &run
	var rec *runrecord.Record
	for _, c := range clients {
		raw, found, err := kvstore.Get(ctx, c, topology.RunsTopic, run.ID)
		if err != nil || !found {
			continue
		}
		if r, err := runrecord.Decode(raw); err == nil && (rec == nil || r.Start().From > rec.Start().From) {
			rec = r
		}
	}
	if rec == nil {
		st.Problems = append(st.Problems, fmt.Sprintf("%s run %s is in progress (phase %s) and its progress record is missing: finish it with drctl resume %s, or undo it with drctl abort %s",
			run.Kind, run.ID, st.Roles.Phase, run.ID, run.ID))
		return rpo
	}
	for i, s := range rec.Plan.Steps {
		var rep RPOReport
		if s.Name == runrecord.StepRPO && rec.Outputs[i] != nil && json.Unmarshal(rec.Outputs[i], &rep) == nil {
			rpo = rep.Records
		}
	}
	next := rec.Start().From
	run.Step = next
	total := len(rec.Plan.Steps)
	at := "after its last step"
	if next < total {
		at = fmt.Sprintf("at step %d/%d (%s)", next+1, total, rec.Plan.Steps[next].Name)
	}
	how := fmt.Sprintf("drctl abort %s undoes it (before step %d/%d, %s)", run.ID, runrecord.PointOfNoReturn(rec.Plan)+1, total, rec.Plan.Steps[runrecord.PointOfNoReturn(rec.Plan)].Name)
	if max(rec.Started, next-1) >= runrecord.PointOfNoReturn(rec.Plan) {
		how = fmt.Sprintf("drctl abort %s cannot undo it any more (past step %d/%d, %s)", run.ID, runrecord.PointOfNoReturn(rec.Plan)+1, total, rec.Plan.Steps[runrecord.PointOfNoReturn(rec.Plan)].Name)
	}
	last := ""
	if rec.Error != "" {
		last = "; last error: " + rec.Error
	}
	st.Problems = append(st.Problems, fmt.Sprintf("%s run %s is not finished: it stopped %s%s. Unless a drctl is still running it, finish it with drctl resume %s; %s",
		run.Kind, run.ID, at, last, run.ID, how))
	return rpo
}

// readACLParity fills st.ACLs (and its problems) when both clusters
// answer and the roles are steady. It only reads.
func readACLParity(topo *topology.Topology, st *Status, clients map[string]sarama.Client) {
	a, s := clients[st.Roles.Active], clients[st.Roles.Standby]
	steady := st.Roles.Phase == rolestate.PhaseSteady || st.Roles.Phase == ""
	if a == nil || s == nil || !steady {
		return
	}
	aa, err := sarama.NewClusterAdminFromClient(a)
	if err != nil {
		return
	}
	sa, err := sarama.NewClusterAdminFromClient(s)
	if err != nil {
		return
	}
	p := aclsync.ReadParity(topo, st.Roles.Active, st.Roles.Standby, aa, sa)
	st.ACLs = &p
	st.Problems = append(st.Problems, p.Problems()...)
}

// readFences fills each reachable cluster's Fenced from drctl's fence
// record (the read the mirror's drctl_cluster_fenced metric uses) and
// FencePermitted, only when the topology fences with ACLs. It only reads.
func readFences(ctx context.Context, topo *topology.Topology, st *Status, clients map[string]sarama.Client) {
	if topo.Failover.Fence != topology.FenceACL {
		return
	}
	for i := range st.Clusters {
		c := clients[st.Clusters[i].Name]
		if c == nil {
			continue
		}
		if held, err := aclfence.Held(ctx, c, topo.Name); err == nil {
			st.Clusters[i].Fenced = &held
		}
		st.Clusters[i].FencePermitted = mayAlterACLs(ctx, c)
	}
}

// readPause fills st.Pause with a pause that holds the live link now, and
// says so in the problems: the mirror runs but copies nothing.
func readPause(ctx context.Context, topo *topology.Topology, st *Status, clients map[string]sarama.Client) {
	if st.Roles.Active == RoleUnknown || len(clients) == 0 {
		return
	}
	ps, _ := linkstate.Pauses(ctx, clients, topo.Name)
	link, now := topo.Link(st.Roles.Active, st.Roles.Standby), time.Now()
	for _, p := range ps {
		if !p.Holds(link, st.Roles.Epoch, now) {
			continue
		}
		st.Pause = &p
		by := p.ID
		if p.Holder != "" {
			by += " (process " + p.Holder + ")"
		}
		st.Problems = append(st.Problems, fmt.Sprintf("the mirror %s is paused by %s since %s, until %s at the latest: it copies nothing meanwhile; unless that drill still runs (drctl drill history), drctl resume releases the pause",
			link, by, p.At.UTC().Format(time.RFC3339), p.Until.UTC().Format(time.RFC3339)))
		return
	}
}
