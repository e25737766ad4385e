package failover

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/poll"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// WipeReport is the outcome of Wipe.
type WipeReport struct {
	Cluster       string   `json:"cluster"`
	TopicsDeleted []string `json:"topics_deleted"`
	GroupsDeleted []string `json:"groups_deleted"`
}

// MirrorStopTimeout bounds how long a wipe waits for drctl's own mirror
// of active -> stale to leave the stale cluster. The run's role state
// stops it, but a daemon reads the roles every few seconds (5s by
// default; 0.5 s once it has seen a run under way) and a process that
// died holds its membership until its session times out (10s by
// default).
const MirrorStopTimeout = time.Minute

// Wipe deletes, on the stale cluster, the mirrored topics, the selected
// consumer groups, and the internal topics and groups of the link that
// will copy into it (from the active cluster), and waits until the topics
// are gone. The mirror then re-creates the topics with the active
// cluster's shape and re-seeds them from the earliest offset. It refuses a
// selected group with members (stop those consumers first). Members of
// the link's own groups are drctl mirror processes, which the run's role
// state stops: Wipe waits up to MirrorStopTimeout for them to leave
// before it deletes anything (the healthy standby's mirror is still
// running when a forced reseed reaches its wipe). Idempotent.
func Wipe(ctx context.Context, clusters *kafkaconn.Clusters, stale, active string) (*WipeReport, error) {
	return wipe(ctx, clusters, stale, active, nil)
}

// wipe is Wipe reporting its wait for the mirror to rc (nil: none), whose
// first interrupt stops the wait with nothing deleted.
func wipe(ctx context.Context, clusters *kafkaconn.Clusters, stale, active string, rc *plans.RunContext) (*WipeReport, error) {
	topo := clusters.Topology()
	clusters.Redial(ctx, stale)
	client, err := clusters.Need(stale)
	if err != nil {
		return nil, fmt.Errorf("wipe: %w", err)
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return nil, fmt.Errorf("wipe %s: %w", stale, err)
	}
	rep := &WipeReport{Cluster: stale, TopicsDeleted: []string{}, GroupsDeleted: []string{}}
	link := topo.Link(active, stale)
	keep, groups, err := wipeTargets(admin, topo, link)
	if err != nil {
		return nil, fmt.Errorf("wipe %s: %w", stale, err)
	}
	if len(groups) > 0 {
		if err := waitGroupsLeft(ctx, admin, stale, link, groups, topo, rc); err != nil {
			return nil, err
		}
	}
	if err := deleteGroups(ctx, client, groups); err != nil {
		return nil, fmt.Errorf("wipe %s: %w", stale, err)
	}
	rep.GroupsDeleted = append(rep.GroupsDeleted, groups...)
	if err := deleteTopics(ctx, client, keep); err != nil {
		return nil, fmt.Errorf("wipe %s: %w", stale, err)
	}
	rep.TopicsDeleted = append(rep.TopicsDeleted, keep...)
	for _, t := range keep {
		if err := waitTopic(ctx, client, t, false); err != nil {
			return nil, fmt.Errorf("wipe %s: %w", stale, err)
		}
	}
	if err := forgetProgress(ctx, clusters, stale, active); err != nil {
		return nil, fmt.Errorf("wipe %s: %w", stale, err)
	}
	return rep, nil
}

// wipeTargets are what a wipe of link's target deletes there: the selected
// (mirrored) topics and the link's internal topics that exist, and the
// selected groups and the link's own groups. The link's record of losses
// to source retention stays: those records are gone from the source too,
// the re-seeded link cannot bring them back, and they stay on record
// until an operator acknowledges them (drctl mirror ack-lost).
func wipeTargets(admin sarama.ClusterAdmin, topo *topology.Topology, link topology.Link) (topics, groups []string, err error) {
	topics, err = mirroredTopicNames(admin, topo)
	if err != nil {
		return nil, nil, fmt.Errorf("list topics: %w", err)
	}
	all, err := kafkaread.ListTopics(admin)
	if err != nil {
		return nil, nil, fmt.Errorf("list topics: %w", err)
	}
	for _, t := range link.InternalTopics() {
		if _, ok := all[t]; ok && t != link.LostTopic() {
			topics = append(topics, t)
		}
	}
	listed, err := admin.ListConsumerGroups()
	if err != nil {
		return nil, nil, fmt.Errorf("list groups: %w", err)
	}
	for g := range listed {
		if topo.SyncsGroup(g) || g == link.ProgressGroup() || g == link.WorkersGroup() {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	return topics, groups, nil
}

// waitGroupsLeft returns once no group of groups has a member on the
// stale cluster. Members of a selected (application) group are consumers
// the operator or their deployment must move: they are waited for up to
// failover.clients.timeout, and then refused naming each one (group,
// client id, host). Members of the link's own groups are drctl mirror
// processes of link, stopped by the run's role state: they are waited for,
// up to MirrorStopTimeout. Nothing is deleted while either waits.
func waitGroupsLeft(ctx context.Context, admin sarama.ClusterAdmin, stale string, link topology.Link, groups []string, topo *topology.Topology, rc *plans.RunContext) error {
	own := link.InternalGroups()
	w := poll.Wait{What: "the group members to leave " + stale, Every: 250 * time.Millisecond}
	if rc != nil {
		w.Stop = rc.Stopping()
		w.Progress = func(why string, _ time.Duration) { rc.Progress(why, -1) }
	}
	start := time.Now()
	err := poll.Until(ctx, w, func(context.Context) (bool, string, error) {
		descs, err := admin.DescribeConsumerGroups(groups)
		if err != nil {
			return false, "", fmt.Errorf("wipe %s: describe groups: %w", stale, err)
		}
		var mirrors *sarama.GroupDescription
		var apps []string
		for _, d := range descs {
			if len(d.Members) == 0 {
				continue
			}
			if slices.Contains(own, d.GroupId) {
				mirrors = d
				continue
			}
			apps = append(apps, membersOf(d)...)
		}
		waited := time.Since(start)
		switch {
		case mirrors == nil && len(apps) == 0:
			return true, "", nil
		case len(apps) > 0 && waited >= topo.Failover.ClientsTimeout:
			return false, "", fmt.Errorf("wipe %s: %d consumer(s) still in selected groups there after %v (failover.clients.timeout): %s; nothing was deleted: stop or move those consumers, then drctl resume",
				stale, len(apps), topo.Failover.ClientsTimeout.Round(time.Second), strings.Join(apps, "; "))
		case mirrors != nil && waited >= MirrorStopTimeout:
			return false, "", fmt.Errorf("wipe %s: group %s still has %d member(s) there after %v: a drctl mirror of %s still runs there although the role state stops it; stop it and resume", stale, mirrors.GroupId, len(mirrors.Members), MirrorStopTimeout, link)
		case len(apps) > 0:
			return false, fmt.Sprintf("waiting %v of %v for %d consumer(s) to leave %s: %s; nothing deleted yet", waited.Round(time.Second), topo.Failover.ClientsTimeout.Round(time.Second), len(apps), stale, strings.Join(apps, "; ")), nil
		default:
			return false, fmt.Sprintf("waiting for the mirror of %s to stop on %s (%d member(s) in %s); nothing deleted yet", link, stale, len(mirrors.Members), mirrors.GroupId), nil
		}
	})
	if errors.Is(err, poll.ErrStopped) {
		return fmt.Errorf("%w: stopped waiting for group members to leave %s, nothing deleted (drctl resume waits again)", plans.ErrInterrupted, stale)
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("wipe %s: waiting for group members to leave: %w", stale, ctx.Err())
	}
	return err
}

// membersOf names each member of a group as an operator finds it: the
// group, the client id and the host it connects from.
func membersOf(d *sarama.GroupDescription) []string {
	var out []string
	for _, m := range d.Members {
		out = append(out, fmt.Sprintf("group %s: client %s on %s", d.GroupId, orUnknown(m.ClientId), orUnknown(strings.TrimPrefix(m.ClientHost, "/"))))
	}
	slices.Sort(out)
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// forgetProgress deletes, on the active cluster, the progress of the old
// link stale -> active once the stale cluster's topics are gone: it
// describes topics that no longer exist. Kept, it would tell a later
// salvage of the rebuilt cluster that records at those offsets were
// mirrored, and records written there since (a producer that recreated
// a topic) would be wiped unsalvaged. The link is fenced and its
// direction retired by then; a future mirror of that direction starts
// from a wiped, re-seeded cluster.
func forgetProgress(ctx context.Context, clusters *kafkaconn.Clusters, stale, active string) error {
	topo := clusters.Topology()
	clusters.Redial(ctx, active)
	client, err := clusters.Need(active)
	if err != nil {
		return err
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return fmt.Errorf("%s: %w", active, err)
	}
	g := topo.Link(stale, active).ProgressGroup()
	if err := admin.DeleteConsumerGroup(g); err != nil && !errors.Is(err, sarama.ErrGroupIDNotFound) {
		return fmt.Errorf("%s: forget the progress of the retired link (delete group %s): %w", active, g, err)
	}
	return nil
}

// partitionEnds reads the log start and last stable offsets of every
// partition of tps, one request per leader broker each, retrying a
// transient failure (a leader that moved) with fresh metadata. A
// partition missing from an answer is an error, never "empty".
func partitionEnds(ctx context.Context, client sarama.Client, tps []topology.TopicPartition) (starts, stable map[topology.TopicPartition]int64, err error) {
	err = kafkaread.Do(ctx, kafkaread.Brief, func(attempt int) error {
		if attempt > 0 {
			topics := map[string]bool{}
			for _, tp := range tps {
				topics[tp.Topic] = true
			}
			_ = client.RefreshMetadata(slices.Collect(maps.Keys(topics))...)
		}
		var err error
		if starts, err = kafkaread.StartOffsets(ctx, client, tps); err != nil {
			return fmt.Errorf("log start offsets: %w", err)
		}
		if stable, err = kafkaread.StableOffsets(ctx, client, tps); err != nil {
			return fmt.Errorf("last stable offsets: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for _, tp := range tps {
		_, okStart := starts[tp]
		_, okStable := stable[tp]
		if !okStart || !okStable {
			return nil, nil, fmt.Errorf("%s: no offsets in the answer", tp)
		}
	}
	return starts, stable, nil
}

// topicWait bounds how long a topic's creation or deletion is waited for:
// brokers settle in seconds, and a topic that comes back after its deletion
// is being recreated by someone.
const topicWait = 2 * time.Minute

// waitTopic waits until the topic exists with leaders (exists) or is gone,
// up to topicWait.
func waitTopic(ctx context.Context, client sarama.Client, topic string, exists bool) error {
	err := poll.Until(ctx, poll.Wait{What: "topic " + topic, Within: topicWait}, func(ctx context.Context) (bool, string, error) {
		info, err := kafkaread.Topic(ctx, client, topic)
		return err == nil && info.Exists == exists, "", nil
	})
	switch {
	case errors.Is(err, poll.ErrTimeout) && !exists:
		return fmt.Errorf("topic %s still exists %s after its deletion (a client that auto-creates topics, or a mirror into this cluster, may have created it again): stop it, then drctl resume: %w",
			topic, topicWait, err)
	case errors.Is(err, poll.ErrTimeout):
		return fmt.Errorf("topic %s is not ready after %s: %w", topic, topicWait, err)
	}
	return err
}
