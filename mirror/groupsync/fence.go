package groupsync

import (
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/offsetcommit"
	"github.com/drctl/drctl/topology"
)

// ErrFenced is wrapped by the errors of a group sync whose groups
// transactional id was initialised by another process since it opened it
// (a failover fenced the link): it must not commit again.
var ErrFenced = errors.New("group sync fenced")

// fencedCommitter commits group offsets on the target, each group in a
// transaction of the link's groups transactional id (a known race: plain
// offset commits cannot be fenced). Opening it initialises the id, fencing
// any earlier holder; the caller checks the role state AFTER opening, as a
// shard does, so that either the failover's fence or its new epoch stops a
// stale process.
//
// Kafka accepts a transactional commit (no member, generation -1) for a
// group with members, where it refuses a plain one: the group sync only
// commits groups it found without members in the same round.
type fencedCommitter struct {
	cl     *topology.Cluster
	link   topology.Link
	config func(*sarama.Config) // the mirror's transactional producer settings
	prod   sarama.SyncProducer
}

func (f *fencedCommitter) open() error {
	if f.prod != nil {
		return nil
	}
	cfg, err := f.cl.SaramaConfig()
	if err != nil {
		return err
	}
	f.config(cfg)
	cfg.Producer.Transaction.ID = f.link.GroupsTransactionalID()
	cfg.Producer.Transaction.Timeout = 60 * time.Second
	p, err := sarama.NewSyncProducer(f.cl.Bootstrap, cfg)
	if err != nil {
		if kafkaread.IsFenced(err) {
			return fmt.Errorf("group sync: %w: %v", ErrFenced, err)
		}
		return fmt.Errorf("group sync: initialise %s on %s: %w", f.link.GroupsTransactionalID(), f.link.Target, err)
	}
	f.prod = p
	return nil
}

func (f *fencedCommitter) close() {
	if f.prod == nil {
		return
	}
	if f.prod.TxnStatus()&sarama.ProducerTxnFlagInTransaction != 0 {
		_ = f.prod.AbortTxn()
	}
	_ = f.prod.Close()
	f.prod = nil
}

// commit commits changes for group, in one transaction unless they are
// too many for the coordinator to write at once: then in one transaction
// per request's worth (internal/offsetcommit), in the order of changes.
// Each partition's offset is a translation of its own, so a commit that
// stops part way leaves a group that later rounds complete. Any failure
// closes the producer (a later round opens it again); a fenced producer's
// failure wraps ErrFenced, a group's members' refusal ErrGroupActive.
func (f *fencedCommitter) commit(group string, changes []OffsetChange) (err error) {
	if len(changes) == 0 {
		return nil
	}
	if err := f.open(); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	chunks := offsetcommit.Chunks(len(changes), func(i int) int {
		return offsetcommit.RecordBytes(group, changes[i].Topic, len(changes[i].Metadata))
	}, offsetcommit.MaxBytes)
	for _, ch := range chunks {
		if err := f.commitTxn(group, changes[ch[0]:ch[1]]); err != nil {
			if ch[0] > 0 {
				err = fmt.Errorf("%w (%d of the group's %d partitions were committed, in the transactions before)", err, ch[0], len(changes))
			}
			return err
		}
	}
	return nil
}

// commitTxn commits changes for group in one transaction.
func (f *fencedCommitter) commitTxn(group string, changes []OffsetChange) error {
	offsets := map[string][]*sarama.PartitionOffsetMetadata{}
	for _, c := range changes {
		md := c.Metadata
		offsets[c.Topic] = append(offsets[c.Topic], &sarama.PartitionOffsetMetadata{Partition: c.Partition, Offset: c.After, LeaderEpoch: -1, Metadata: &md})
	}
	classify := func(step string, err error) error {
		for _, k := range memberErrors {
			if errors.Is(err, k) {
				return fmt.Errorf("commit offsets of group %s: %w: the coordinator refused the commit: %v", group, ErrGroupActive, err)
			}
		}
		if kafkaread.ProducerFenced(f.prod, err) {
			return fmt.Errorf("commit offsets of group %s: %s: %w: %v", group, step, ErrFenced, err)
		}
		return fmt.Errorf("commit offsets of group %s: %s: %w", group, step, err)
	}
	if err := f.prod.BeginTxn(); err != nil {
		return classify("begin transaction", err)
	}
	if err := f.prod.AddOffsetsToTxn(offsets, group); err != nil {
		return classify("add offsets", err)
	}
	if err := f.prod.CommitTxn(); err != nil {
		return classify("commit transaction", err)
	}
	return nil
}
