package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
)

// runProduce writes -records records of -size bytes into -topic, spread over
// -partitions partitions, with -producers idempotent producers in parallel.
//
// sarama's idempotent producer allows one request in flight per broker
// connection, so parallelism comes from several producers (each with its own
// connections), each owning a fixed subset of the partitions (partition p
// belongs to producer p % producers), which keeps every partition in order.
func runProduce(args []string) error {
	fs := newFlags("produce")
	var c conn
	connFlags(fs, &c, "", "target", "127.0.0.1:39092")
	topic := fs.String("topic", "", "topic to write (required)")
	records := fs.Int64("records", 2_000_000, "number of records")
	size := fs.Int("size", 1024, "value size in bytes")
	partitions := fs.Int("partitions", 12, "partitions (the topic is created with this many if missing; an existing topic must have exactly this many)")
	producers := fs.Int("producers", 4, "parallel producers, each with its own connections")
	flushBytes := fs.Int("flush-bytes", 1<<20, "sarama Producer.Flush.Bytes: buffered bytes that trigger a request")
	linger := fs.Duration("linger", 5*time.Millisecond, "sarama Producer.Flush.Frequency: the longest a record waits for a batch")
	maxBatch := fs.Int("max-batch-bytes", 1_000_000, "sarama Producer.MaxMessageBytes: the largest record batch per partition")
	seed := fs.Uint64("seed", 1, "data seed: the same seed, size and partitions give the same keys, values and headers")
	noCreate := fs.Bool("no-create", false, "fail if the topic does not exist instead of creating it")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *topic == "" || *records < 1 || *producers < 1 {
		logf("produce: -topic is required; -records and -producers must be positive")
		return errUsage
	}
	if *producers > *partitions {
		*producers = *partitions
	}
	gen, err := newDataGen(*seed, *size, *partitions)
	if err != nil {
		logf("produce: %v", err)
		return errUsage
	}
	wallStart := time.Now()

	admin, err := c.client()
	if err != nil {
		return err
	}
	err = ensureTopic(admin, *topic, *partitions, !*noCreate)
	admin.Close()
	if err != nil {
		return err
	}

	cfg, err := c.saramaConfig()
	if err != nil {
		return err
	}
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Retry.Max = 50
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Compression = sarama.CompressionNone
	cfg.Producer.Flush.Bytes = *flushBytes
	cfg.Producer.Flush.Frequency = *linger
	cfg.Producer.MaxMessageBytes = *maxBatch
	cfg.ChannelBufferSize = 4096
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("producer configuration: %w", err)
	}

	prods := make([]sarama.AsyncProducer, *producers)
	for k := range prods {
		p, err := sarama.NewAsyncProducer(splitList(c.brokers), cfg)
		if err != nil {
			for _, q := range prods[:k] {
				q.Close()
			}
			return fmt.Errorf("producer %d: %w", k, err)
		}
		prods[k] = p
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var acked atomic.Int64
	var firstErr error
	var errOnce sync.Once
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}

	logf("produce: %d records of %d bytes into %s (%d partitions) with %d producers", *records, *size, *topic, *partitions, *producers)
	start := time.Now()
	var wg sync.WaitGroup
	for k, p := range prods {
		mine := int64(0) // records this producer sends
		for q := k; q < *partitions; q += *producers {
			if int64(q) < *records {
				mine += (*records-int64(q)-1)/int64(*partitions) + 1
			}
		}
		wg.Add(2)
		go func() { // acknowledgements
			defer wg.Done()
			for n := int64(0); n < mine; {
				select {
				case <-p.Successes():
					n++
					acked.Add(1)
				case perr := <-p.Errors():
					fail(fmt.Errorf("producer %d: %w", k, perr.Err))
					return
				case <-ctx.Done():
					return
				}
			}
		}()
		go func() { // records
			defer wg.Done()
			send(ctx, p, gen, *topic, k, *producers, *records)
		}()
	}

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	last, lastT := int64(0), start
loop:
	for {
		select {
		case <-done:
			break loop
		case now := <-tick.C:
			n := acked.Load()
			logf("produce: %d/%d acknowledged, %.0f records/s now", n, *records, float64(n-last)/now.Sub(lastT).Seconds())
			last, lastT = n, now
		}
	}
	elapsed := time.Since(start)
	for _, p := range prods {
		p.AsyncClose()
	}
	for _, p := range prods { // drain until closed
		for range p.Successes() {
		}
		for range p.Errors() {
		}
	}
	if firstErr != nil {
		return firstErr
	}
	n := acked.Load()
	if n != *records {
		return fmt.Errorf("only %d of %d records were acknowledged", n, *records)
	}
	payload := n * int64(16+*size)
	r := newResult("produce")
	r.set("topic", *topic)
	r.set("records", n)
	r.set("size", *size)
	r.set("partitions", *partitions)
	r.set("producers", *producers)
	r.set("payload_bytes", payload)
	r.set("elapsed_s", elapsed)
	r.set("wall_s", time.Since(wallStart))
	r.set("records_per_s", float64(n)/elapsed.Seconds())
	r.set("mb_per_s", float64(payload)/1e6/elapsed.Seconds())
	hwm, cpu := selfUsage()
	r.set("peak_rss_kb", hwm)
	r.set("cpu_s", cpu)
	logf("produce: %d records in %.2fs: %.0f records/s, %.1f MB/s", n, elapsed.Seconds(), float64(n)/elapsed.Seconds(), float64(payload)/1e6/elapsed.Seconds())
	r.print()
	return nil
}

// send feeds producer k (of k producers) its records in order: partition p
// belongs to producer p % producers, record i to partition i % partitions.
func send(ctx context.Context, p sarama.AsyncProducer, gen *dataGen, topic string, k, producers int, records int64) {
	parts := int64(gen.partitions)
	const slabRecords = 256
	var slab []byte
	for j := int64(0); ; j++ {
		sent := false
		for q := int64(k); q < parts; q += int64(producers) {
			i := j*parts + q
			if i >= records {
				continue
			}
			sent = true
			if len(slab) < gen.size {
				slab = make([]byte, gen.size*slabRecords)
			}
			v := slab[:gen.size:gen.size]
			slab = slab[gen.size:]
			gen.value(i, v)
			msg := &sarama.ProducerMessage{
				Topic:     topic,
				Partition: gen.partition(i),
				Key:       sarama.ByteEncoder(gen.key(i)),
				Value:     sarama.ByteEncoder(v),
				Headers: []sarama.RecordHeader{
					{Key: []byte("bench-seq"), Value: gen.seqHeader(i)},
					{Key: []byte("bench-origin"), Value: originHeader},
				},
				Timestamp: time.Now(),
			}
			select {
			case p.Input() <- msg:
			case <-ctx.Done():
				return
			}
		}
		if !sent {
			return
		}
	}
}
