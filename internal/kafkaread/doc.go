// Package kafkaread reads what a Kafka partition holds, as a read_committed
// consumer would see it, with raw protocol requests sent through a caller's
// sarama client: topic metadata, a partition's end offsets, and its
// committed records up to the last stable offset.
//
// sarama's consumer cannot be used for "read to the end" under
// read_committed: its high-water mark is not the last stable offset and
// control records are never delivered, so waiting for the high-water mark can
// hang. The readers here bound every read by the last stable offset instead,
// skip control batches and the records of aborted transactions themselves,
// and follow batch offsets (so compacted logs and transaction markers leave
// no gaps unaccounted for).
//
// The package never creates a topic (metadata requests disable automatic
// topic creation), joins no consumer group and commits nothing. Every call
// takes a context and returns when it ends, even though a sarama request in
// flight cannot be cancelled: that request finishes in the background,
// bounded by the client's network timeouts.
package kafkaread
