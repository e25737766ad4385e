// Package offsetcommit sizes offset commits so that a group coordinator can
// write them.
//
// A coordinator writes the offsets of one commit request (OffsetCommit, or
// TxnOffsetCommit in a transaction) to __consumer_offsets as one record
// batch, which must fit that topic's max.message.bytes (1 MiB unless the
// operator changed it). Kafka 4.1 refuses a larger one with
// UNKNOWN_SERVER_ERROR for every partition of the request, and refuses it
// again however often it is sent: a group of 10,000 partitions, or of a few
// hundred whose consumers store kilobytes of metadata with each offset, can
// never be committed in one request. Callers split a commit into requests
// of at most MaxBytes by RecordBytes (Chunks).
package offsetcommit

// MaxBytes bounds the estimated bytes of the offsets one commit request
// carries: half the default max.message.bytes of __consumer_offsets, so
// that the estimate's own error and a smaller configured limit leave room.
const MaxBytes = 512 << 10

// recordOverhead bounds what an offset's record takes besides the group,
// topic and metadata it names: the key's and value's fixed fields (version,
// partition, offset, leader epoch, timestamps: 34 bytes in the formats
// Kafka 4.1 writes) and the record's framing in a batch (at most 32), with
// room to spare for later formats.
const recordOverhead = 128

// RecordBytes bounds the bytes the record of one partition's offset takes
// in the coordinator's batch: group and topic are in its key, metadata (its
// length in bytes) in its value.
func RecordBytes(group, topic string, metadata int) int {
	return recordOverhead + len(group) + len(topic) + metadata
}

// Chunks splits the items 0..n-1 into consecutive ranges [from, to) whose
// sizes add up to at most max each; an item larger than max on its own is
// a range of its own (the coordinator then refuses that one alone).
func Chunks(n int, size func(i int) int, max int) [][2]int {
	var out [][2]int
	from, sum := 0, 0
	for i := range n {
		s := size(i)
		if i > from && sum+s > max {
			out = append(out, [2]int{from, i})
			from, sum = i, 0
		}
		sum += s
	}
	if n > from {
		out = append(out, [2]int{from, n})
	}
	return out
}
