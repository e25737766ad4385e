package mirror

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/aclfence"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror/topicsync"
	"github.com/drctl/drctl/topology"
)

// fenceNewTopics returns, when the standby is fenced by ACL (failover.fence
// acl with ACL sync on), the hook that fences the topics a topic pass is
// about to create on the target before it creates them: otherwise a grant
// by prefix already on the standby (ALLOW WRITE on "orders." for the
// application) would let the application write to a new topic there until
// the next ACL sync round fenced it. A literal DENY needs no topic. It
// acts only while the live roles still make the link's target the standby;
// otherwise it refuses, and the pass creates nothing.
func (e *Engine) fenceNewTopics(src, dst sarama.Client) func(ctx context.Context, names []string) error {
	if e.topo.Failover.Fence != topology.FenceACL || !e.topo.Mirror.ACLs.Enabled {
		return nil
	}
	return func(ctx context.Context, names []string) error {
		rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		st := rolestate.Resolve(rctx, e.topo, map[string]sarama.Client{e.link.Source: src, e.link.Target: dst}).Current
		if st.Active != e.link.Source || st.Standby != e.link.Target {
			return fmt.Errorf("the roles moved (%s active, %s standby), so %s is not fenced as a standby", st.Active, st.Standby, e.link.Target)
		}
		if _, err := aclfence.FenceTopics(ctx, dst, e.topo, e.link.Target, names); err != nil {
			return fmt.Errorf("the standby's fence must cover a new topic before it is created: %w", err)
		}
		return nil
	}
}

// topicSyncer keeps target topics in shape; sync returns the topics the
// mirror may copy now, and the topics it must not copy with the reason.
type topicSyncer interface {
	sync(ctx context.Context) (ready map[string]readyTopic, troubles map[string]string, err error)
}

// readyTopic is a topic the mirror may copy now.
type readyTopic struct {
	Partitions int32
	// MaxMessageBytes is the source topic's effective max.message.bytes
	// (0: unknown): the mirror's producer must be able to send a batch
	// that large.
	MaxMessageBytes int32
	// SourceID is the source topic's id ("": the source reports none): the
	// incarnation the mirror copies.
	SourceID string
}

// ledgerSyncer runs topicsync passes and keeps the link's topic ledger: it
// records the source incarnation of every topic it makes ready, holds back
// a topic recreated on the source, and reports one deleted there. A
// topic's trouble never stops the others.
type ledgerSyncer struct {
	s       *topicsync.Syncer
	dst     sarama.Client
	cl      *topology.Cluster
	link    topology.Link
	mirrors func(topic string) bool
	// changed receives, every pass, the topics deleted or recreated on the
	// source (nil: nobody listens).
	changed func([]linkstate.TopicChange)
	// early receives, during a pass, topics the pass made ready before its
	// end, admitted as the pass's own are (nil: nobody listens).
	early func(map[string]readyTopic)

	mu     sync.Mutex
	ledger linkstate.TopicLedger
	prod   sarama.SyncProducer
}

func newTopicSyncer(src, dst sarama.Client, dstCluster *topology.Cluster, link topology.Link, mirrors func(topic string) bool,
	beforeCreate func(ctx context.Context, names []string) error) (*ledgerSyncer, error) {
	sa, err := sarama.NewClusterAdminFromClient(src)
	if err != nil {
		return nil, fmt.Errorf("source admin: %w", err)
	}
	da, err := sarama.NewClusterAdminFromClient(dst)
	if err != nil {
		return nil, fmt.Errorf("target admin: %w", err)
	}
	ls := &ledgerSyncer{dst: dst, cl: dstCluster, link: link, mirrors: mirrors, ledger: linkstate.TopicLedger{}}
	s, err := topicsync.New(sa, da, mirrors, topicsync.Options{Ownership: ls.ownership, Version: dst.Config().Version, Ready: ls.readyEarly,
		BeforeCreate: beforeCreate})
	if err != nil {
		return nil, err
	}
	ls.s = s
	return ls, nil
}

// ownership answers topicsync: a topic recreated on the source is held;
// a topic drctl created for this very incarnation is owned.
func (a *ledgerSyncer) ownership(name, sourceID string) (bool, string) {
	a.mu.Lock()
	rec, ok := a.ledger[name]
	a.mu.Unlock()
	if !ok || sourceID == "" || rec.SourceID == "" {
		return false, ""
	}
	if rec.SourceID != sourceID {
		return false, linkstate.RecreatedMessage(a.link, name)
	}
	return rec.Created, ""
}

func (a *ledgerSyncer) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.prod != nil {
		_ = a.prod.Close()
		a.prod = nil
	}
}

// recordAll records recs in the ledger (one batch of requests) and returns
// the failures by topic.
func (a *ledgerSyncer) recordAll(recs []linkstate.TopicRecord) map[string]error {
	if len(recs) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.prod == nil {
		p, err := kafkaconn.NewSyncProducer(a.cl, kafkaconn.ManualPartitions)
		if err != nil {
			failed := map[string]error{}
			for _, rec := range recs {
				failed[rec.Topic] = err
			}
			return failed
		}
		a.prod = p
	}
	failed := linkstate.WriteTopicRecords(a.prod, a.link, recs)
	for _, rec := range recs {
		if failed[rec.Topic] == nil {
			a.ledger[rec.Topic] = rec
		}
	}
	return failed
}

// admit returns the topics of ts the mirror may copy now, having recorded
// in the ledger the source incarnation of each one it did not know, and
// the troubles of the others.
func (a *ledgerSyncer) admit(ts []topicsync.TopicResult) (map[string]readyTopic, map[string]string) {
	ready := map[string]readyTopic{}
	troubles := map[string]string{}
	var recs []linkstate.TopicRecord
	a.mu.Lock()
	for _, t := range ts {
		switch {
		case t.Conflict != "":
			troubles[t.Name] = t.Conflict
		case t.Err != nil:
			troubles[t.Name] = t.Err.Error()
		}
		if _, known := a.ledger[t.Name]; !known && t.SourceID != "" && (t.Created || t.Ready()) {
			recs = append(recs, linkstate.TopicRecord{Topic: t.Name, SourceID: t.SourceID, Created: t.Created})
		}
	}
	a.mu.Unlock()
	// Without its record a topic is not copied: a later recreation on the
	// source would go unnoticed.
	failed := a.recordAll(recs)
	for _, t := range ts {
		if err := failed[t.Name]; err != nil {
			troubles[t.Name] = err.Error()
			continue
		}
		if t.Ready() {
			ready[t.Name] = readyTopic{Partitions: t.Partitions, MaxMessageBytes: t.MaxMessageBytes, SourceID: t.SourceID}
		}
	}
	return ready, troubles
}

// readyEarly admits topics a pass found ready before its end (recording
// each new one in the ledger first, as admit does) and hands them to
// early.
func (a *ledgerSyncer) readyEarly(ts []topicsync.TopicResult) {
	if a.early == nil {
		return
	}
	if ready, _ := a.admit(ts); len(ready) > 0 {
		a.early(ready)
	}
}

func (a *ledgerSyncer) sync(ctx context.Context) (map[string]readyTopic, map[string]string, error) {
	// The ledger is read afresh every pass: `drctl mirror reseed-topic`
	// changes it from another process.
	ledger, err := linkstate.ReadTopicLedger(ctx, a.dst, a.link)
	if err != nil {
		return nil, nil, fmt.Errorf("target %s: %w", a.link.Target, err)
	}
	a.mu.Lock()
	a.ledger = ledger
	a.mu.Unlock()
	rep, err := a.s.Sync(ctx)
	if err != nil {
		return nil, nil, err
	}
	ready, troubles := a.admit(rep.Topics)
	ids := map[string]string{}
	for _, t := range rep.Topics {
		ids[t.Name] = t.SourceID
	}
	changes := linkstate.TopicChanges(a.link, a.mirrors, ledger, ids)
	for _, c := range changes {
		if c.Kind == linkstate.TopicDeleted {
			troubles[c.Topic] = c.Message
		}
	}
	if a.changed != nil {
		a.changed(changes)
	}
	return ready, troubles, nil
}
