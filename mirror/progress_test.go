package mirror

import (
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
)

// TestLagDoesNotWaitForTransactionsInDoubt: a transaction that committed
// progress and is not decided yet (with thousands of partitions and every
// shard committing, some partition nearly always has one) must not hold up
// the lag: it reports from the progress committed before it, at once.
// Before, the lag asked for stable offsets only and retried until its
// deadline (the engine's gauge failed with "unstable offsets" for 9 s at a
// time at 10,000 partitions, and `drctl status` waited).
func TestLagDoesNotWaitForTransactionsInDoubt(t *testing.T) {
	e, p, _, _, _ := copyingOneTopic(t, "doubt", 4, Options{Shards: 1})
	link := e.Link()
	dst := kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	// Another transactional id commits progress for "doubt" in a
	// transaction that stays open.
	const txnID = "in-doubt"
	coord, err := dst.TransactionCoordinator(txnID)
	if err != nil {
		t.Fatal(err)
	}
	id := txnID
	ip, err := coord.InitProducerID(&sarama.InitProducerIDRequest{Version: 1, TransactionalID: &id, TransactionTimeout: time.Minute})
	if err != nil || ip.Err != sarama.ErrNoError {
		t.Fatalf("init producer id: %v %v", err, ip)
	}
	group := link.ProgressGroup()
	ao, err := coord.AddOffsetsToTxn(&sarama.AddOffsetsToTxnRequest{Version: 1, TransactionalID: txnID, ProducerID: ip.ProducerID, ProducerEpoch: ip.ProducerEpoch, GroupID: group})
	if err != nil || ao.Err != sarama.ErrNoError {
		t.Fatalf("add offsets to transaction: %v %v", err, ao)
	}
	gc, err := dst.Coordinator(group)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := gc.TxnOffsetCommit(&sarama.TxnOffsetCommitRequest{Version: 1, TransactionalID: txnID, GroupID: group,
		ProducerID: ip.ProducerID, ProducerEpoch: ip.ProducerEpoch,
		Topics: map[string][]*sarama.PartitionOffsetMetadata{"doubt": {{Partition: 0, Offset: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ps := range tc.Topics {
		for _, pe := range ps {
			if pe.Err != sarama.ErrNoError {
				t.Fatalf("txn offset commit: %v", pe.Err)
			}
		}
	}

	began := time.Now()
	rep, err := linkstate.MeasureLag(kfaketest.Ctx(t, 5*time.Second), kfaketest.Session(t, p.Topology), link)
	if err != nil {
		t.Fatalf("lag with a transaction in doubt: %v", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("lag took %v: it waited for the transaction in doubt", took)
	}
	if rep.TotalRecords != 0 {
		t.Errorf("lag %d records, want 0: the progress committed before the transaction in doubt is the copy's (4 records)", rep.TotalRecords)
	}
}
