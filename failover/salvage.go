package failover

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// SalvagedPartition counts what one partition of the stale cluster held
// that never reached the active cluster.
type SalvagedPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// From and To bound the stale partition's offsets that were salvaged:
	// [From, To).
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Records counts the records of [From, To) that are in Into, read
	// back after they were written.
	Records int64 `json:"records"`
	// Into is the quarantine topic on the active cluster, or the file
	// (salvage to a directory).
	Into string `json:"into"`
}

// SalvageReport is the outcome of Salvage.
type SalvageReport struct {
	Stale  string `json:"stale"`
	Active string `json:"active"`
	// Dir is the directory the records were saved to instead of
	// quarantine topics ("": quarantine topics).
	Dir string `json:"dir,omitempty"`
	// Records counts the records salvaged: written and read back.
	Records int64 `json:"records"`
	// FromActive counts the records skipped because they carry the
	// active cluster's provenance (they came from it: it has them).
	FromActive int64               `json:"from_active"`
	Partitions []SalvagedPartition `json:"partitions"`
	// Identity is set when the stale cluster answers with another cluster
	// id than the plan recorded: it was rebuilt, and what only it held
	// (the RPO) is lost.
	Identity *inspect.IdentityChange `json:"identity_change,omitempty"`
}

// Sizes of the salvage's writes.
const (
	// salvageHeadroom is added to the source topic's max.message.bytes
	// for the quarantine topic: the salvage headers (about 120 bytes) make
	// a record that filled the source's limit larger than it.
	salvageHeadroom = 1024
	// salvageProducerBytes is the salvage producer's own limit per batch
	// (sarama builds requests of at most 100 MB). The broker judges each
	// batch against the quarantine topic's max.message.bytes; the salvage
	// keeps its batches below that itself.
	salvageProducerBytes = 64 << 20
	// salvageBatchRecords bounds the records sent in one batch.
	salvageBatchRecords = 500
	// kafkaDefaultMaxMessageBytes is Kafka's default max.message.bytes,
	// assumed for a source topic whose limit cannot be read.
	kafkaDefaultMaxMessageBytes = 1048588
)

// Salvage copies every committed record that the stale cluster holds but
// never mirrored to the active cluster (the records after the mirror's
// progress of the link stale -> active; all of them once a wipe retired
// that link, see forgetProgress) into quarantine topics on the active
// cluster (<topic><suffix>, same partition, created with the source
// topic's max.message.bytes plus room for the salvage headers), except the
// records that carry the active cluster's provenance (drctl.o: they came
// from it). Every salvaged record keeps its headers and gets the salvage's
// (topology.HeaderSalvagedFrom, HeaderSalvagedOffset, HeaderSalvagedTopicID).
//
// It counts only what it verified: a partition's records are salvaged
// when each of their offsets is in the quarantine partition (from the same
// cluster and topic id), read back after the writes. So it is idempotent,
// and a salvage resumed after a failed one writes every offset the
// quarantine does not hold, whatever came after it. A record it cannot
// write (too large, not authorised, ...) stops it with a *QuarantineError
// naming the record, the cause and the fix; a record written but not read
// back is an error too. Records salvaged from an earlier copy of the topic
// (before a wipe) never hide newer ones.
func Salvage(ctx context.Context, clusters *kafkaconn.Clusters, stale, active string) (*SalvageReport, error) {
	return salvage(ctx, clusters, stale, active, "")
}

// SalvageToDir is Salvage saving the records into files under dir instead
// of quarantine topics (see salvageFile): the way out when the active
// cluster cannot take them.
func SalvageToDir(ctx context.Context, clusters *kafkaconn.Clusters, stale, active, dir string) (*SalvageReport, error) {
	if dir == "" {
		return nil, errors.New("salvage to a directory: no directory given")
	}
	return salvage(ctx, clusters, stale, active, dir)
}

func salvage(ctx context.Context, clusters *kafkaconn.Clusters, stale, active, dir string) (*SalvageReport, error) {
	topo := clusters.Topology()
	w := within(ctx, clusters, stale, active)
	defer w.Close()
	src, err := w.Need(stale)
	if err != nil {
		return nil, fmt.Errorf("salvage: %w", err)
	}
	dst, err := w.Need(active)
	if err != nil {
		return nil, fmt.Errorf("salvage: %w", err)
	}
	link := topo.Link(stale, active)
	tps, err := linkstate.MirroredPartitions(src, topo)
	if err != nil {
		return nil, fmt.Errorf("salvage: list topics on %s: %w", stale, err)
	}
	progress, err := linkstate.ReadProgress(ctx, src, dst, link, tps)
	if err != nil {
		return nil, fmt.Errorf("salvage: mirror progress of %s on %s: %w", link, active, err)
	}
	staleID, err := kafkaconn.ClusterID(src)
	if err != nil {
		return nil, fmt.Errorf("salvage: %s: %w", stale, err)
	}
	activeID, err := kafkaconn.ClusterID(dst)
	if err != nil {
		return nil, fmt.Errorf("salvage: %s: %w", active, err)
	}
	rep := &SalvageReport{Stale: stale, Active: active, Dir: dir, Partitions: []SalvagedPartition{}}
	var producer sarama.SyncProducer
	defer func() {
		if producer != nil {
			_ = producer.Close()
		}
	}()
	// Every partition's ends in one request per leader broker each, after
	// the progress (as the lag reads them): one partition after the other,
	// 1,200 partitions took 2 s of a failover.
	starts, stable, err := partitionEnds(ctx, src, tps)
	if err != nil {
		return nil, fmt.Errorf("salvage: ends on %s: %w", stale, err)
	}
	limits := map[string]int{} // quarantine topic -> its max.message.bytes
	topicIDs := map[string]string{}
	for _, tp := range tps {
		from, ok := progress[tp]
		if !ok {
			from = starts[tp] // never mirrored: all of it is unmirrored
		}
		from = max(from, starts[tp])
		if from >= stable[tp] {
			continue
		}
		topicID, ok := topicIDs[tp.Topic]
		if !ok {
			info, err := kafkaread.Topic(ctx, src, tp.Topic)
			if err != nil {
				return nil, fmt.Errorf("salvage: %w", err)
			}
			topicID, topicIDs[tp.Topic] = info.ID, info.ID
		}
		part := partitionSalvage{tp: tp, from: from, to: stable[tp], staleID: staleID, activeID: activeID, topicID: topicID, stale: stale, active: active}
		var sp SalvagedPartition
		if dir != "" {
			sp, err = part.toFile(ctx, src, dir)
		} else {
			into := topo.SalvageTopic(tp.Topic)
			limit, ok := limits[into]
			if !ok {
				if limit, err = ensureSalvageTopic(ctx, src, dst, tp.Topic, into); err != nil {
					return nil, fmt.Errorf("salvage: %w", err)
				}
				limits[into] = limit
			}
			if producer == nil {
				if producer, err = salvageProducer(topo.Clusters[active]); err != nil {
					return nil, fmt.Errorf("salvage: producer on %s: %w", active, err)
				}
			}
			sp, err = part.toQuarantine(ctx, src, dst, producer, into, limit)
		}
		rep.FromActive += part.fromActive
		if err != nil {
			return nil, err
		}
		if sp.Records > 0 {
			rep.Partitions = append(rep.Partitions, sp)
			rep.Records += sp.Records
		}
	}
	return rep, nil
}

// partitionSalvage is the salvage of one partition of the stale cluster
// from offset from.
type partitionSalvage struct {
	tp topology.TopicPartition
	// [from, to) are the partition's unmirrored offsets.
	from, to                   int64
	staleID, activeID, topicID string
	stale, active              string
	// fromActive counts the records skipped for the active's provenance.
	fromActive int64
}

// each calls fn for every record of the partition from p.from to its last
// stable offset that did not come from the active cluster.
func (p *partitionSalvage) each(ctx context.Context, src sarama.Client, fn func(kafkaread.Record) error) error {
	_, err := kafkaread.ReadCommitted(ctx, src, p.tp.Topic, p.tp.Partition, p.from, func(r kafkaread.Record) error {
		if originOf(r) == p.activeID {
			p.fromActive++
			return nil // it came from the active cluster, which has it
		}
		return fn(r)
	})
	if err != nil {
		return fmt.Errorf("salvage: read %s on %s: %w", p.tp, p.stale, err)
	}
	return nil
}

// toQuarantine writes every record of the partition that the quarantine
// partition does not hold yet, reads what it wrote back, and counts the
// records that are there.
func (p *partitionSalvage) toQuarantine(ctx context.Context, src, dst sarama.Client, producer sarama.SyncProducer, into string, limit int) (SalvagedPartition, error) {
	sp := SalvagedPartition{Topic: p.tp.Topic, Partition: p.tp.Partition, From: p.from, To: p.to, Into: into}
	have := map[int64]bool{}
	end, err := salvagedOffsets(ctx, dst, into, p.tp.Partition, 0, p.staleID, p.topicID, have)
	if err != nil {
		return sp, fmt.Errorf("salvage: %w", err)
	}
	var want []int64
	var batch []*sarama.ProducerMessage
	batchBytes, wrote := 0, 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := producer.SendMessages(batch)
		if err != nil {
			return p.quarantineError(err, batch, into)
		}
		wrote += len(batch)
		batch, batchBytes = batch[:0], 0
		return nil
	}
	err = p.each(ctx, src, func(r kafkaread.Record) error {
		want = append(want, r.Offset)
		if have[r.Offset] {
			return nil // salvaged by an earlier run, and read back now
		}
		m := p.message(r, into)
		n := salvageRecordBytes(m)
		if len(batch) > 0 && (len(batch) >= salvageBatchRecords || batchBytes+n > limit-salvageHeadroom) {
			if err := flush(); err != nil {
				return err
			}
		}
		batch, batchBytes = append(batch, m), batchBytes+n
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return sp, err
	}
	if wrote > 0 {
		if _, err := salvagedOffsets(ctx, dst, into, p.tp.Partition, end, p.staleID, p.topicID, have); err != nil {
			return sp, fmt.Errorf("salvage: read back: %w", err)
		}
	}
	var missing []int64
	for _, off := range want {
		if !have[off] {
			missing = append(missing, off)
		}
	}
	if len(missing) > 0 {
		return sp, fmt.Errorf("salvage %s from %s: %d of %d record(s) written to %s on %s are not there when read back (the first at offset %d); nothing was wiped: check %s and run the salvage again (drctl resume)",
			p.tp, p.stale, len(missing), len(want), into, p.active, missing[0], into)
	}
	sp.Records = int64(len(want))
	return sp, nil
}

// message is r as salvage writes it into quarantine: its key, value,
// timestamp and headers as they were, plus the salvage headers. Its
// Metadata is r's offset on the stale cluster.
func (p *partitionSalvage) message(r kafkaread.Record, into string) *sarama.ProducerMessage {
	var off [8]byte
	binary.BigEndian.PutUint64(off[:], uint64(r.Offset))
	headers := make([]sarama.RecordHeader, 0, len(r.Headers)+3)
	for _, h := range r.Headers {
		headers = append(headers, *h)
	}
	headers = append(headers, sarama.RecordHeader{Key: []byte(topology.HeaderSalvagedFrom), Value: []byte(p.staleID)},
		sarama.RecordHeader{Key: []byte(topology.HeaderSalvagedOffset), Value: off[:]},
		sarama.RecordHeader{Key: []byte(topology.HeaderSalvagedTopicID), Value: []byte(p.topicID)})
	m := &sarama.ProducerMessage{Topic: into, Partition: p.tp.Partition, Value: sarama.ByteEncoder(r.Value), Headers: headers, Timestamp: r.Timestamp, Metadata: r.Offset}
	if r.Key != nil {
		m.Key = sarama.ByteEncoder(r.Key)
	}
	return m
}

// salvageRecordBytes estimates a record's size in a batch (key, value,
// headers and framing), the measure a broker applies to max.message.bytes.
func salvageRecordBytes(m *sarama.ProducerMessage) int {
	n := 32
	if m.Key != nil {
		n += m.Key.Length()
	}
	if m.Value != nil {
		n += m.Value.Length()
	}
	for _, h := range m.Headers {
		n += len(h.Key) + len(h.Value) + 8
	}
	return n
}

// QuarantineError is a record salvage could not write into quarantine:
// the run stops there, before the wipe, with the cause and its fix.
type QuarantineError struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Offset is the record's offset on the stale cluster, Bytes its size.
	Offset int64 `json:"offset"`
	Bytes  int   `json:"bytes"`
	// Into is the quarantine topic on Active.
	Into   string `json:"into"`
	Active string `json:"active"`
	// Cause says what kind of failure it was (size, authorization, ...),
	// Fix what the operator does about it.
	Cause string `json:"cause"`
	Fix   string `json:"fix"`
	Err   error  `json:"-"`
}

func (e *QuarantineError) Error() string {
	return fmt.Sprintf("salvage %s/%d: the record at offset %d (%d bytes) could not be written to %s on %s: %s: %v; %s; nothing was wiped",
		e.Topic, e.Partition, e.Offset, e.Bytes, e.Into, e.Active, e.Cause, e.Err, e.Fix)
}

func (e *QuarantineError) Unwrap() error { return e.Err }

// quarantineError explains a failed SendMessages of batch: the first
// record (lowest offset) that failed, why, and the fix.
func (p *partitionSalvage) quarantineError(err error, batch []*sarama.ProducerMessage, into string) error {
	qe := &QuarantineError{Topic: p.tp.Topic, Partition: p.tp.Partition, Offset: -1, Into: into, Active: p.active, Err: err}
	if perrs, ok := errors.AsType[sarama.ProducerErrors](err); ok {
		for _, pe := range perrs {
			off, _ := pe.Msg.Metadata.(int64)
			if qe.Offset < 0 || off < qe.Offset {
				qe.Offset, qe.Bytes, qe.Err = off, salvageRecordBytes(pe.Msg), pe.Err
			}
		}
	}
	if qe.Offset < 0 && len(batch) > 0 {
		qe.Offset, _ = batch[0].Metadata.(int64)
		qe.Bytes = salvageRecordBytes(batch[0])
	}
	var cfgErr sarama.ConfigurationError
	switch {
	case errors.Is(qe.Err, sarama.ErrMessageSizeTooLarge), errors.Is(qe.Err, sarama.ErrInvalidMessageSize), errors.As(qe.Err, &cfgErr):
		qe.Cause = "too large"
		qe.Fix = fmt.Sprintf("raise max.message.bytes of topic %s on %s to at least %d (kafka-configs.sh --alter --entity-type topics --entity-name %s --add-config max.message.bytes=%d)",
			into, p.active, qe.Bytes+salvageHeadroom, into, qe.Bytes+salvageHeadroom)
	case errors.Is(qe.Err, sarama.ErrTopicAuthorizationFailed):
		qe.Cause = "not authorized"
		qe.Fix = fmt.Sprintf("allow drctl's principal WRITE, DESCRIBE and CREATE on topic %s on %s (kafka-acls.sh --add --allow-principal User:<drctl> --operation Write --operation Describe --operation Create --topic %s)", into, p.active, into)
	case errors.Is(qe.Err, sarama.ErrClusterAuthorizationFailed), errors.Is(qe.Err, sarama.ErrTransactionalIDAuthorizationFailed):
		qe.Cause = "not authorized"
		qe.Fix = fmt.Sprintf("allow drctl's principal IDEMPOTENT_WRITE on the cluster %s (kafka-acls.sh --add --allow-principal User:<drctl> --operation IdempotentWrite --cluster)", p.active)
	default:
		qe.Cause = "the write failed"
		qe.Fix = fmt.Sprintf("fix what the error says on %s", p.active)
	}
	return qe
}

func salvageProducer(c *topology.Cluster) (sarama.SyncProducer, error) {
	return kafkaconn.NewSyncProducer(c, func(cfg *sarama.Config) {
		kafkaconn.ManualPartitions(cfg)
		cfg.Producer.MaxMessageBytes = salvageProducerBytes
	})
}

// ensureSalvageTopic creates the quarantine topic into with the partition
// count of the stale topic and its max.message.bytes plus
// salvageHeadroom, or raises an existing quarantine topic's
// max.message.bytes to that (never lowers it; a raise the cluster refuses
// leaves it as it was). It returns the quarantine topic's
// max.message.bytes.
func ensureSalvageTopic(ctx context.Context, src, dst sarama.Client, topic, into string) (int, error) {
	parts, err := src.Partitions(topic)
	if err != nil {
		return 0, fmt.Errorf("partitions of %s: %w", topic, err)
	}
	srcAdmin, err := sarama.NewClusterAdminFromClient(src)
	if err != nil {
		return 0, err
	}
	srcLimit, err := maxMessageBytes(srcAdmin, topic)
	if err != nil {
		return 0, fmt.Errorf("max.message.bytes of %s: %w", topic, err)
	}
	want := max(srcLimit, kafkaDefaultMaxMessageBytes) + salvageHeadroom
	info, err := kafkaread.Topic(ctx, dst, into)
	if err != nil {
		return 0, err
	}
	admin, err := sarama.NewClusterAdminFromClient(dst)
	if err != nil {
		return 0, err
	}
	if info.Exists {
		have, err := maxMessageBytes(admin, into)
		if err != nil {
			return 0, fmt.Errorf("max.message.bytes of %s: %w", into, err)
		}
		if have >= want {
			return have, nil
		}
		v := strconv.Itoa(want)
		err = admin.IncrementalAlterConfig(sarama.TopicResource, into, map[string]sarama.IncrementalAlterConfigsEntry{
			"max.message.bytes": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v}}, false)
		if err != nil {
			// Not fatal (drctl may lack ALTER_CONFIGS there): a record the
			// topic cannot take stops the salvage with a QuarantineError
			// that names the limit to set, and no other record needs it.
			return have, nil //nolint:nilerr // see above
		}
		return want, nil
	}
	v := strconv.Itoa(want)
	rf := topology.InternalReplicas(len(dst.Brokers()))
	err = admin.CreateTopic(into, &sarama.TopicDetail{NumPartitions: int32(len(parts)), ReplicationFactor: rf,
		ConfigEntries: map[string]*string{"max.message.bytes": &v}}, false)
	if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return 0, fmt.Errorf("create %s: %w", into, err)
	}
	return want, waitTopic(ctx, dst, into, true)
}

// maxMessageBytes is topic's effective max.message.bytes (its own, or the
// broker's default); Kafka's default when the answer does not say.
func maxMessageBytes(admin sarama.ClusterAdmin, topic string) (int, error) {
	res, err := admin.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"max.message.bytes"}}}, sarama.DescribeConfigsOptions{})
	if err != nil {
		return 0, err
	}
	for _, r := range res {
		if r.ErrorCode != 0 {
			return 0, fmt.Errorf("%w: %s", r.ErrorCode, r.ErrorMsg)
		}
		for _, e := range r.Configs {
			if n, err := strconv.Atoi(e.Value); e.Name == "max.message.bytes" && err == nil && n > 0 {
				return n, nil
			}
		}
	}
	return kafkaDefaultMaxMessageBytes, nil
}

// salvagedOffsets adds to have the stale offsets of the records in the
// quarantine partition, from offset from, that were salvaged from the
// stale cluster staleID's topic with id topicID, and returns the offset
// to read on from. Records salvaged from another cluster, or from another
// copy of the topic (a different id: the topic was wiped and re-seeded, or
// deleted and created again, since), do not count: their offsets number
// other records, and counting them would skip unsalvaged records
// silently. A record salvaged by an older drctl (no topic id header)
// counts only when the cluster reports no topic ids; otherwise it may be
// salvaged twice, never lost.
func salvagedOffsets(ctx context.Context, dst sarama.Client, into string, partition int32, from int64, staleID, topicID string, have map[int64]bool) (int64, error) {
	return kafkaread.ReadCommitted(ctx, dst, into, partition, from, func(r kafkaread.Record) error {
		off, legacy := int64(-1), int64(-1)
		src, id, hasID := "", "", false
		for _, h := range r.Headers {
			switch string(h.Key) {
			case topology.HeaderSalvagedOffset:
				if len(h.Value) == 8 {
					off = int64(binary.BigEndian.Uint64(h.Value))
				}
			case topology.HeaderSalvagedFrom:
				src = string(h.Value)
			case topology.HeaderSalvagedTopicID:
				id, hasID = string(h.Value), true
			case topology.HeaderSourceOffset:
				if len(h.Value) == 8 {
					legacy = int64(binary.BigEndian.Uint64(h.Value))
				}
			}
		}
		if off < 0 {
			off = legacy
		}
		if src != "" && src != staleID {
			return nil // salvaged from another cluster
		}
		if id != topicID || (!hasID && topicID != "") {
			return nil // salvaged from another copy of the topic
		}
		if off >= 0 {
			have[off] = true
		}
		return nil
	})
}

// originOf returns the cluster id of a record's drctl.o provenance header
// ("" when it has none: it was written where it is).
func originOf(r kafkaread.Record) string {
	for _, h := range r.Headers {
		if string(h.Key) == topology.HeaderOrigin {
			return string(h.Value)
		}
	}
	return ""
}
