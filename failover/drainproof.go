package failover

import (
	"context"
	"fmt"
	"time"

	"github.com/drctl/drctl/internal/aclfence"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// fenceSettle is how long a proof of the drain must hold, with the same
// high-water marks, before the drain ends on it (or the quiet period, if
// that is shorter). A broker authorises a produce request and then appends
// it, and the high-water mark moves once the followers have the record: a
// request authorised just before the fence's ACL reached the broker may
// show a moment after the proof first holds. A second measurement this much
// later that finds the same high-water marks bounds that window (a follower
// slower than this would escape it: its records would show on the old
// active after the flip, where the reseed's salvage saves them). It is not
// a wait for producers to stop: the fence has stopped them.
const fenceSettle = 500 * time.Millisecond

// drainProof is one measurement's proof that the drain is complete: why
// not ("" when it is), and the source's high-water marks it saw (a second
// proof must see the same).
type drainProof struct {
	why  string
	ends string
}

// proveDrained proves, on the source of a link fenced with ACLs, that
// nothing more can reach its mirrored partitions and that the mirror has
// copied everything there is: the fence is in force on every broker for
// every principal but drctl's (aclfence.Prove), no transaction is open on
// any partition (its last stable offset equals its high-water mark: a
// producer the fence stopped may still commit an open one, since ending a
// transaction needs no WRITE on the topic), and every partition is mirrored
// to its last stable offset (rep, measured after the fence proof). An
// error means the proof could not be made this time.
func proveDrained(ctx context.Context, clusters *kafkaconn.Clusters, topo *topology.Topology, source string, fence aclfence.Proof, rep *linkstate.LagReport) (drainProof, error) {
	if !fence.Proven() {
		return drainProof{why: "the fence is not proven: " + fence.Why}, nil
	}
	src, err := clusters.Need(source)
	if err != nil {
		return drainProof{}, err
	}
	tps := make([]topology.TopicPartition, len(rep.Partitions))
	for i, p := range rep.Partitions {
		tps[i] = topology.TopicPartition{Topic: p.Topic, Partition: p.Partition}
	}
	high, err := kafkaread.HighWatermarks(ctx, src, tps)
	if err != nil {
		return drainProof{}, fmt.Errorf("high-water marks of %s: %w", source, err)
	}
	return drainProof{why: drainUnproven(rep, high), ends: highKey(rep, high)}, nil
}

// drainUnproven returns why the lag report rep, with the source's
// high-water marks measured after it, does not show a complete drain, or
// "" when it does. The rules, first match wins:
//
//  1. a partition that could not be measured;
//  2. a partition without a high-water mark (it appeared after rep);
//  3. a transaction open on a partition: last stable offset < high-water
//     mark (a high-water mark that moved on since rep reads the same way);
//  4. a partition not mirrored to its last stable offset.
//
// Example: orders/0 with last stable offset 40, high-water mark 42 and
// mirrored 40 is rule 3 (the open transaction holds records 40 and 41); at
// high-water mark 40 and mirrored 38 it is rule 4; at 40, 40, 40 it is
// drained.
func drainUnproven(rep *linkstate.LagReport, high map[topology.TopicPartition]int64) string {
	var open, behind []string
	for _, p := range rep.Partitions {
		tp := topology.TopicPartition{Topic: p.Topic, Partition: p.Partition}
		h, ok := high[tp]
		switch {
		case p.Error != "":
			return fmt.Sprintf("%s: %s", tp, p.Error)
		case !ok:
			return fmt.Sprintf("%s: no high-water mark", tp)
		case p.SourceEnd < h:
			open = append(open, fmt.Sprintf("%s (last stable offset %d, high-water mark %d)", tp, p.SourceEnd, h))
		case p.Records > 0:
			behind = append(behind, fmt.Sprintf("%s (%d records)", tp, p.Records))
		}
	}
	switch {
	case len(open) > 0:
		return fmt.Sprintf("a transaction is open on %d partition(s): %s", len(open), someNames(open))
	case len(behind) > 0:
		return fmt.Sprintf("%d partition(s) not mirrored to their last stable offset: %s", len(behind), someNames(behind))
	}
	return ""
}

func highKey(rep *linkstate.LagReport, high map[topology.TopicPartition]int64) string {
	b := make([]byte, 0, 16*len(rep.Partitions))
	for _, p := range rep.Partitions {
		b = fmt.Appendf(b, "%s/%d=%d;", p.Topic, p.Partition, high[topology.TopicPartition{Topic: p.Topic, Partition: p.Partition}])
	}
	return string(b)
}
