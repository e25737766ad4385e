package mirror

import (
	"context"
	"fmt"
	"sync"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/mirror/topicsync"
	"github.com/drctl/drctl/topology"
)

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
	changed func([]TopicChange)

	mu     sync.Mutex
	ledger TopicLedger
	prod   sarama.SyncProducer
}

func newTopicSyncer(src, dst sarama.Client, dstCluster *topology.Cluster, link topology.Link, mirrors func(topic string) bool) (*ledgerSyncer, error) {
	sa, err := sarama.NewClusterAdminFromClient(src)
	if err != nil {
		return nil, fmt.Errorf("source admin: %w", err)
	}
	da, err := sarama.NewClusterAdminFromClient(dst)
	if err != nil {
		return nil, fmt.Errorf("target admin: %w", err)
	}
	ls := &ledgerSyncer{dst: dst, cl: dstCluster, link: link, mirrors: mirrors, ledger: TopicLedger{}}
	s, err := topicsync.New(sa, da, mirrors, topicsync.Options{Ownership: ls.ownership})
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
		return false, recreatedMessage(a.link, name)
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

func (a *ledgerSyncer) record(rec TopicRecord) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.prod == nil {
		p, err := plainProducer(a.cl)
		if err != nil {
			return err
		}
		a.prod = p
	}
	if err := writeTopicRecord(a.prod, a.link, rec); err != nil {
		return err
	}
	a.ledger[rec.Topic] = rec
	return nil
}

func (a *ledgerSyncer) sync(ctx context.Context) (map[string]readyTopic, map[string]string, error) {
	// The ledger is read afresh every pass: `drctl mirror reseed-topic`
	// changes it from another process.
	ledger, err := ReadTopicLedger(ctx, a.dst, a.link)
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
	ready := map[string]readyTopic{}
	troubles := map[string]string{}
	ids := map[string]string{}
	for _, t := range rep.Topics {
		ids[t.Name] = t.SourceID
		switch {
		case t.Conflict != "":
			troubles[t.Name] = t.Conflict
		case t.Err != nil:
			troubles[t.Name] = t.Err.Error()
		}
		if _, known := ledger[t.Name]; !known && t.SourceID != "" && (t.Created || t.Ready()) {
			if err := a.record(TopicRecord{Topic: t.Name, SourceID: t.SourceID, Created: t.Created}); err != nil {
				// Without its record the topic is not copied: a later
				// recreation on the source would go unnoticed.
				troubles[t.Name] = err.Error()
				continue
			}
		}
		if t.Ready() {
			ready[t.Name] = readyTopic{Partitions: t.Partitions, MaxMessageBytes: t.MaxMessageBytes, SourceID: t.SourceID}
		}
	}
	changes := topicChanges(a.link, a.mirrors, ledger, ids)
	for _, c := range changes {
		if c.Kind == TopicDeleted {
			troubles[c.Topic] = c.Message
		}
	}
	if a.changed != nil {
		a.changed(changes)
	}
	return ready, troubles, nil
}
