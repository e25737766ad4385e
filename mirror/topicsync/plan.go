package topicsync

import (
	"fmt"
	"slices"
	"strings"
)

// observed is what one cluster says about one topic.
type observed struct {
	// id is the topic's id (hex; "" when the cluster reports none): a
	// topic deleted and created again under the same name gets a new one.
	id         string
	partitions int32
	rf         int16
	// leaderless counts partitions without a leader.
	leaderless int
	// set holds the configs set on the topic itself (source
	// DYNAMIC_TOPIC_CONFIG); effective holds every reported value,
	// whatever its source. Sensitive entries are in neither.
	set       map[string]string
	effective map[string]string
	// asked: the configs were asked for (see observe's configs).
	asked bool
}

// change is what one pass must do to one target topic. The zero change
// does nothing.
type change struct {
	// create: the target topic is missing; create it with partitions,
	// rf and configs.
	create  bool
	rf      int16
	configs map[string]string
	// partitions is the count to create the topic with or, when > 0 on an
	// existing topic, to grow it to.
	partitions int32
	// set and remove are the config changes of an existing topic.
	set    map[string]string
	remove []string
	// conflict, when not empty, says why the topic must not be mirrored and
	// how to fix it; nothing else is done to the topic.
	conflict string
	held     map[string]string
	notes    []string
}

// writes reports whether c changes the target.
func (c change) writes() bool {
	return c.create || c.partitions > 0 || len(c.set) > 0 || len(c.remove) > 0
}

// target is what a pass knows of the target cluster when it creates topics.
type target struct {
	// brokers is the target's broker count, which caps the replication
	// factor of a topic to create (0: unknown, no cap).
	brokers int
	// limits are the timestamp windows (topic config keys) that the
	// target's brokers limit by default: a topic is created with them
	// lifted, instead of being created and then altered.
	limits []string
}

// decide compares the source topic with the target topic (nil when the
// target has none) and returns what makes the target match. tgt is used
// only for a topic to create. It is pure: same input, same change.
//
// owned says that drctl created the target topic for this very source topic
// (see Options.Ownership): its cleanup.policy then follows the source's
// instead of putting the topic in conflict.
func (p policy) decide(src *observed, dst *observed, tgt target, owned bool) change {
	c := change{held: p.held(src)}
	for k, v := range c.held {
		switch k {
		case keyTimestampType:
			c.notes = append(c.notes, fmt.Sprintf("%s=%s held back: the target uses %s so the broker keeps the timestamps the mirror copies; set %s when the target is promoted", k, v, createTime, v))
		default:
			c.notes = append(c.notes, fmt.Sprintf("%s=%s held back: mirrored records keep their original (older) timestamps, which this limit would reject; set it when the target is promoted", k, v))
		}
	}
	slices.Sort(c.notes)

	if dst == nil {
		p.decideCreate(&c, src, tgt)
		return c
	}

	var conflicts []string
	if dst.partitions > src.partitions {
		conflicts = append(conflicts, fmt.Sprintf("target has %d partitions, source %d: delete or rename the target topic, or exclude it from mirror.topics", dst.partitions, src.partitions))
	}
	if p.rule(keyCleanupPolicy) == ruleMatch {
		sv, sok := src.effective[keyCleanupPolicy]
		dv, dok := dst.effective[keyCleanupPolicy]
		if sok && dok && !samePolicy(sv, dv) && !owned {
			conflicts = append(conflicts, fmt.Sprintf("cleanup.policy is %q on the target, %q on the source: set it to %q on the target topic if that is intended, or exclude the topic from mirror.topics", dv, sv, sv))
		}
	}
	if len(conflicts) > 0 {
		c.conflict = strings.Join(conflicts, "; ")
		return c
	}

	if dst.partitions < src.partitions {
		c.partitions = src.partitions
	}
	if dst.rf < src.rf {
		c.notes = append(c.notes, fmt.Sprintf("replication factor is %d on the target, %d on the source; drctl does not reassign replicas", dst.rf, src.rf))
	}

	want, notes := p.wanted(src.set, dst.rf)
	c.notes = append(c.notes, notes...)
	c.set = make(map[string]string)
	for k, v := range want {
		if cur, ok := dst.set[k]; !ok || cur != v {
			c.set[k] = v
		}
	}
	for k := range dst.set {
		switch p.rule(k) {
		case ruleCopy, ruleCapMinISR:
			if _, ok := want[k]; !ok {
				c.remove = append(c.remove, k)
			}
		}
	}
	slices.Sort(c.remove)
	if p.rule(keyCleanupPolicy) == ruleMatch && owned {
		if sv, ok := src.effective[keyCleanupPolicy]; ok && !samePolicy(sv, dst.effective[keyCleanupPolicy]) {
			c.set[keyCleanupPolicy] = sv
		}
	}
	if p.rule(keyMaxMessageBytes) == ruleSizeLimit {
		if sv, ok := src.effective[keyMaxMessageBytes]; ok && sv != dst.effective[keyMaxMessageBytes] {
			c.set[keyMaxMessageBytes] = sv
		}
	}
	if p.rule(keyTimestampType) == ruleTimestampType {
		if v, ok := dst.effective[keyTimestampType]; ok && v != createTime {
			c.set[keyTimestampType] = createTime
		}
	}
	for _, w := range timestampWindows {
		if p.rule(w) != ruleTimestampWindow {
			continue
		}
		if v, ok := dst.effective[w]; ok && v != noLimit {
			c.set[w] = noLimit
		}
	}
	if len(c.set) == 0 {
		c.set = nil
	}
	return c
}

// decideCreate fills c for a topic the target lacks: the source's partition
// count, its replication factor capped to the target's brokers, the copied
// configs, cleanup.policy pinned to the source's effective value, and
// CreateTime, and the timestamp windows lifted that the target's brokers
// limit by default (tgt.limits: keys the target is known to have; an
// unknown key would make creation fail). Whatever else the target applies
// on its own, the settle step corrects.
func (p policy) decideCreate(c *change, src *observed, tgt target) {
	c.create = true
	c.partitions = src.partitions
	c.rf = src.rf
	if tgt.brokers > 0 && int(c.rf) > tgt.brokers {
		c.notes = append(c.notes, fmt.Sprintf("replication factor %d capped to %d: the target has %d broker(s)", src.rf, tgt.brokers, tgt.brokers))
		c.rf = int16(tgt.brokers)
	}
	want, notes := p.wanted(src.set, c.rf)
	c.notes = append(c.notes, notes...)
	if p.rule(keyCleanupPolicy) == ruleMatch {
		if v, ok := src.effective[keyCleanupPolicy]; ok {
			want[keyCleanupPolicy] = v
		}
	}
	if p.rule(keyMaxMessageBytes) == ruleSizeLimit {
		if v, ok := src.effective[keyMaxMessageBytes]; ok {
			want[keyMaxMessageBytes] = v
		}
	}
	if p.rule(keyTimestampType) == ruleTimestampType {
		want[keyTimestampType] = createTime
	}
	for _, w := range tgt.limits {
		if p.rule(w) == ruleTimestampWindow {
			want[w] = noLimit
		}
	}
	c.configs = want
}
