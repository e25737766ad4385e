package topicsync

import (
	"slices"
	"strconv"
	"strings"
)

// Topic config keys that need more than a plain copy.
const (
	keyCleanupPolicy = "cleanup.policy"
	keyTimestampType = "message.timestamp.type"
	keyMinISR        = "min.insync.replicas"
	// keyMaxMessageBytes is the largest record batch the topic accepts.
	keyMaxMessageBytes = "max.message.bytes"

	createTime    = "CreateTime"
	logAppendTime = "LogAppendTime"
	// noLimit is Long.MAX_VALUE, Kafka's "no limit" for the timestamp windows.
	noLimit = "9223372036854775807"
)

// droppedConfigs are never copied from the source and never touched on the
// target, with the reason. The target keeps whatever its own operators set.
var droppedConfigs = map[string]string{
	// Replication throttles list "partition:broker-id" pairs of the source
	// cluster. On the target they would throttle unrelated brokers, and they
	// are set and cleared by reassignment tooling, not by topic owners.
	"leader.replication.throttled.replicas":   "names brokers of the source cluster",
	"follower.replication.throttled.replicas": "names brokers of the source cluster",
	// The on-disk format version is a property of the broker version; Kafka
	// 4 removed the key, so copying it to a newer target would fail.
	"message.format.version": "depends on the broker version (removed in Kafka 4)",
	// Down-conversion serves old consumers; it does not change the data and
	// Kafka 4 removed it.
	"message.downconversion.enable": "depends on the broker version (removed in Kafka 4)",
}

// droppedPrefixes extend droppedConfigs to families of keys.
var droppedPrefixes = []struct{ prefix, reason string }{
	// Confluent Server features; plain Apache Kafka rejects these keys.
	{"confluent.", "Confluent Server only"},
	// Tiered storage needs a remote log manager configured on the brokers;
	// enabling it on a target without one makes topic creation fail.
	{"remote.", "tiered storage depends on the target's broker setup"},
}

// timestampWindows reject a record whose timestamp is too far from the
// broker's clock. A mirrored record keeps its original timestamp, which is as
// old as the mirror's lag (and as old as the retained history during the
// first copy), so a window on the target would reject it with
// INVALID_TIMESTAMP and stall the mirror.
var timestampWindows = []string{
	"message.timestamp.difference.max.ms",
	"message.timestamp.before.max.ms",
	"message.timestamp.after.max.ms",
}

// rule is how one config key is synchronised.
type rule int

const (
	// ruleCopy: the target carries the source's topic-level value; a
	// topic-level value the source does not set is removed from the target.
	ruleCopy rule = iota
	// ruleDrop: not drctl's business; neither read nor written.
	ruleDrop
	// ruleMatch (cleanup.policy): set at creation from the source's
	// effective value; on an existing topic the effective values must agree,
	// otherwise the topic is in conflict. Never altered on an existing topic:
	// turning compaction on or off under live data is an operator's call.
	ruleMatch
	// ruleTimestampType (message.timestamp.type): the target must use
	// CreateTime while it is a standby, so the broker keeps the timestamp the
	// mirror sets (with LogAppendTime it would overwrite it: the copy would
	// no longer carry the source's timestamps). A source using LogAppendTime is reported in Held, for the
	// failover to apply when the target is promoted.
	ruleTimestampType
	// ruleTimestampWindow: the target must accept any timestamp while it is
	// a standby (see timestampWindows); source values are reported in Held.
	ruleTimestampWindow
	// ruleCapMinISR (min.insync.replicas): copied, capped to the target
	// topic's replication factor so that acks=all writes can succeed.
	ruleCapMinISR
	// ruleSizeLimit (max.message.bytes): the target carries the source's
	// effective value, wherever the source's comes from (topic or broker
	// default), so that every record the source accepted fits the copy.
	// It is never removed from the target.
	ruleSizeLimit
)

// policy decides how each config key is synchronised.
type policy struct {
	exclude map[string]bool
}

func newPolicy(exclude []string) policy {
	p := policy{exclude: make(map[string]bool, len(exclude))}
	for _, k := range exclude {
		p.exclude[k] = true
	}
	return p
}

// rule returns the rule for key. Options.ExcludeConfigs wins over every
// other rule.
func (p policy) rule(key string) rule {
	if p.exclude[key] {
		return ruleDrop
	}
	if _, ok := droppedConfigs[key]; ok {
		return ruleDrop
	}
	for _, d := range droppedPrefixes {
		if strings.HasPrefix(key, d.prefix) {
			return ruleDrop
		}
	}
	switch key {
	case keyCleanupPolicy:
		return ruleMatch
	case keyTimestampType:
		return ruleTimestampType
	case keyMinISR:
		return ruleCapMinISR
	case keyMaxMessageBytes:
		return ruleSizeLimit
	}
	if slices.Contains(timestampWindows, key) {
		return ruleTimestampWindow
	}
	return ruleCopy
}

// wanted returns the topic-level configs of the copied keys (ruleCopy and
// ruleCapMinISR) that a target topic with replication factor rf must carry,
// given the source's topic-level configs set. A note explains each cap.
func (p policy) wanted(set map[string]string, rf int16) (map[string]string, []string) {
	want := make(map[string]string, len(set))
	var notes []string
	for k, v := range set {
		switch p.rule(k) {
		case ruleCopy:
			want[k] = v
		case ruleCapMinISR:
			if n, err := strconv.Atoi(v); err == nil && rf > 0 && n > int(rf) {
				notes = append(notes, k+" "+v+" capped to "+strconv.Itoa(int(rf))+", the target's replication factor")
				v = strconv.Itoa(int(rf))
			}
			want[k] = v
		}
	}
	slices.Sort(notes)
	return want, notes
}

// held returns the source settings that are deliberately not applied to the
// target while it is a standby, because they would break the copy. The
// failover applies them when it promotes the target.
func (p policy) held(src *observed) map[string]string {
	h := make(map[string]string)
	if p.rule(keyTimestampType) == ruleTimestampType && src.effective[keyTimestampType] == logAppendTime {
		h[keyTimestampType] = logAppendTime
	}
	for _, w := range timestampWindows {
		if v, ok := src.set[w]; ok && p.rule(w) == ruleTimestampWindow {
			h[w] = v
		}
	}
	if len(h) == 0 {
		return nil
	}
	return h
}

// samePolicy compares two cleanup.policy values as sets ("compact,delete"
// equals "delete, compact").
func samePolicy(a, b string) bool {
	return normPolicy(a) == normPolicy(b)
}

func normPolicy(v string) string {
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.ToLower(strings.TrimSpace(parts[i]))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}
