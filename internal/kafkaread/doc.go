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
// CommittedRecords, the decoder of one read_committed fetch response block,
// is shared with the mirror's own fetcher; TopicIDs tells two incarnations
// of a topic name apart.
//
// The package never creates a topic (metadata requests disable automatic
// topic creation), joins no consumer group and commits nothing. Every call
// takes a context and returns when it ends, even though a sarama request in
// flight cannot be cancelled: that request finishes in the background,
// bounded by the client's network timeouts.
//
// The package also holds drctl's one retry policy and one error classifier.
// Classify sorts an error into Transient (send the request again), Final or
// Fenced (a transactional producer that must never be used again) from
// Kafka's error codes and error values alone, never from message text;
// Retry runs an operation again while Classify says Transient, within a
// Policy (Brief for a single request, Patient for group coordinators) and
// the context. WithCoordinator and AwaitLeaders are the two waits built on
// them that several packages share.
package kafkaread
