package topicsync

import (
	"errors"
	"strconv"
)

// ErrNotSettled marks a topic whose target changes were made but not yet
// visible (missing, short of partitions, or partitions without a leader)
// when the settle deadline passed. The next pass checks it again.
var ErrNotSettled = errors.New("target topic not settled")

// Report is the outcome of one Sync pass: one result per selected source
// topic, sorted by name. Target topics the source does not have are not
// listed (drctl never deletes them).
type Report struct {
	Topics []TopicResult
}

// TopicResult is what one pass found and did for one selected source topic.
type TopicResult struct {
	// Name is the topic's name on both clusters (identity naming).
	Name string
	// SourceID is the source topic's id (hex; "" when the source reports
	// none). A topic recreated on the source has a new id.
	SourceID string
	// MaxMessageBytes is the source topic's effective max.message.bytes
	// (0: not reported): the largest record batch the source accepts, which
	// the mirror's producer must be able to send.
	MaxMessageBytes int32
	// Partitions is the source's partition count: the partitions the mirror
	// copies once the topic is ready.
	Partitions int32
	// ReplicationFactor is the target topic's replication factor (0 when
	// the target topic does not exist).
	ReplicationFactor int16
	// Created: the target topic was created in this pass.
	Created bool
	// PartitionsAdded: partitions added to the target topic in this pass.
	PartitionsAdded int32
	// ConfigsChanged lists, sorted, the config keys set on the target topic
	// in this pass (at creation or by an alter). ConfigsRemoved lists the
	// keys removed from it because the source does not set them: they are
	// back to the target's broker default.
	ConfigsChanged []string
	ConfigsRemoved []string
	// Held maps the source settings deliberately not applied to the target
	// while it is a standby, because they would break the copy (see
	// configs.go), to the source's value. The failover applies them when it
	// promotes the target.
	Held map[string]string
	// Notes explain adjustments a person should know about, such as a
	// capped replication factor or min.insync.replicas.
	Notes []string
	// Conflict is empty when the topic is fine. Otherwise it says why the
	// topic must not be mirrored and how to fix it; drctl changed nothing on
	// such a topic.
	Conflict string
	// Err is the failure of this topic only (other topics went on). It names
	// the cluster side, "source" or "target", and the fix.
	Err error
}

// maxMessageBytes returns a topic's effective max.message.bytes, 0 when it is
// not reported.
func maxMessageBytes(o *observed) int32 {
	n, err := strconv.ParseInt(o.effective[keyMaxMessageBytes], 10, 32)
	if err != nil || n <= 0 {
		return 0
	}
	return int32(n)
}

// Ready reports whether the mirror may copy this topic now.
func (t TopicResult) Ready() bool {
	return t.Conflict == "" && t.Err == nil
}

// TopicPartitions is a topic the mirror may copy and its partition count.
type TopicPartitions struct {
	Topic      string
	Partitions int32
}

// Ready returns the topics the mirror may copy now, sorted by name: those
// without conflict or error. Each one's target topic exists with Partitions
// partitions (all of them led, when this pass created or grew them); the
// mirror copies source partitions 0 to Partitions-1 and picks up growth from
// a later pass.
func (r Report) Ready() []TopicPartitions {
	var out []TopicPartitions
	for _, t := range r.Topics {
		if t.Ready() {
			out = append(out, TopicPartitions{Topic: t.Name, Partitions: t.Partitions})
		}
	}
	return out
}

// Changed reports whether the pass wrote anything to the target.
func (r Report) Changed() bool {
	for _, t := range r.Topics {
		if t.Created || t.PartitionsAdded > 0 || len(t.ConfigsChanged) > 0 || len(t.ConfigsRemoved) > 0 {
			return true
		}
	}
	return false
}

// Problems returns the topics with a conflict or an error.
func (r Report) Problems() []TopicResult {
	var out []TopicResult
	for _, t := range r.Topics {
		if !t.Ready() {
			out = append(out, t)
		}
	}
	return out
}
