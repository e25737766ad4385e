package topicsync

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
)

// obs builds an observed topic; effective defaults to set plus
// cleanup.policy=delete and CreateTime, as a broker would report them.
func obs(parts int32, rf int16, set map[string]string, eff ...string) *observed {
	o := &observed{partitions: parts, rf: rf, set: set, effective: map[string]string{
		keyCleanupPolicy: "delete",
		keyTimestampType: createTime,
	}}
	maps.Copy(o.effective, set)
	for i := 0; i+1 < len(eff); i += 2 {
		o.effective[eff[i]] = eff[i+1]
	}
	return o
}

func TestDecideCreate(t *testing.T) {
	p := newPolicy([]string{"segment.jitter.ms"})
	src := obs(6, 3, map[string]string{
		"retention.ms":                          "3600000",
		"max.message.bytes":                     "2097152",
		"min.insync.replicas":                   "2",
		"cleanup.policy":                        "compact",
		"leader.replication.throttled.replicas": "0:1",
		"confluent.placement.constraints":       "{}",
		"remote.storage.enable":                 "true",
		"segment.jitter.ms":                     "10",
		"message.timestamp.type":                logAppendTime,
		"message.timestamp.before.max.ms":       "60000",
	})
	c := p.decide(src, nil, target{brokers: 1}, false)
	if !c.create || c.partitions != 6 || c.rf != 1 {
		t.Fatalf("create=%v partitions=%d rf=%d, want true 6 1", c.create, c.partitions, c.rf)
	}
	want := map[string]string{
		"retention.ms":           "3600000",
		"max.message.bytes":      "2097152",
		"min.insync.replicas":    "1",
		"cleanup.policy":         "compact",
		"message.timestamp.type": createTime,
	}
	if !reflect.DeepEqual(c.configs, want) {
		t.Errorf("configs = %v, want %v", c.configs, want)
	}
	wantHeld := map[string]string{"message.timestamp.type": logAppendTime, "message.timestamp.before.max.ms": "60000"}
	if !reflect.DeepEqual(c.held, wantHeld) {
		t.Errorf("held = %v, want %v", c.held, wantHeld)
	}
	notes := strings.Join(c.notes, "\n")
	for _, s := range []string{"replication factor 3 capped to 1", "min.insync.replicas 2 capped to 1", "message.timestamp.type=LogAppendTime held back", "before.max.ms=60000 held back"} {
		if !strings.Contains(notes, s) {
			t.Errorf("notes lack %q:\n%s", s, notes)
		}
	}
}

func TestDecideCreatePinsEffectivePolicy(t *testing.T) {
	// The source inherits compact from its broker default: the target must
	// not inherit whatever its own default is.
	c := newPolicy(nil).decide(obs(1, 1, map[string]string{}, keyCleanupPolicy, "compact"), nil, target{brokers: 3}, false)
	if c.configs[keyCleanupPolicy] != "compact" || c.rf != 1 {
		t.Fatalf("configs = %v rf = %d, want cleanup.policy=compact rf 1", c.configs, c.rf)
	}
}

func TestDecideExisting(t *testing.T) {
	base := map[string]string{"retention.ms": "1000", "cleanup.policy": "compact,delete"}
	tests := []struct {
		name       string
		exclude    []string
		src, dst   *observed
		conflict   string // substring; "" = none
		partitions int32
		set        map[string]string
		remove     []string
	}{
		{
			name: "equal",
			src:  obs(3, 1, base),
			dst:  obs(3, 1, map[string]string{"retention.ms": "1000", "cleanup.policy": "delete,compact", "message.timestamp.type": createTime}),
		},
		{
			name:     "target has more partitions",
			src:      obs(3, 1, base),
			dst:      obs(6, 1, map[string]string{"retention.ms": "5"}),
			conflict: "target has 6 partitions, source 3: delete or rename the target topic, or exclude it from mirror.topics",
		},
		{
			name:     "cleanup.policy differs",
			src:      obs(3, 1, base),
			dst:      obs(3, 1, map[string]string{"cleanup.policy": "delete"}),
			conflict: `cleanup.policy is "delete" on the target, "compact,delete" on the source`,
		},
		{
			name:     "cleanup.policy differs by broker default",
			src:      obs(3, 1, nil, keyCleanupPolicy, "compact"),
			dst:      obs(3, 1, nil),
			conflict: "cleanup.policy",
		},
		{
			name:       "source grew",
			src:        obs(5, 1, base),
			dst:        obs(3, 1, base),
			partitions: 5,
		},
		{
			name:   "changed, added and removed configs",
			src:    obs(3, 1, map[string]string{"retention.ms": "2000", "segment.ms": "10"}),
			dst:    obs(3, 1, map[string]string{"retention.ms": "1000", "segment.bytes": "9", "follower.replication.throttled.replicas": "0:2", "x.excluded": "1"}),
			set:    map[string]string{"retention.ms": "2000", "segment.ms": "10"},
			remove: []string{"segment.bytes"},
		},
		{
			// #8 case 7: a record the source accepted must fit the copy.
			name: "max.message.bytes follows the source's effective value, wherever it comes from",
			src:  obs(3, 1, nil, "max.message.bytes", "6291456"),
			dst:  obs(3, 1, nil, "max.message.bytes", "1048588"),
			set:  map[string]string{"max.message.bytes": "6291456"},
		},
		{
			name: "max.message.bytes set on the target is never removed while it matches",
			src:  obs(3, 1, nil, "max.message.bytes", "1048588"),
			dst:  obs(3, 1, map[string]string{"max.message.bytes": "1048588"}, "max.message.bytes", "1048588"),
		},
		{
			name:    "excluded key neither copied nor removed",
			exclude: []string{"retention.ms"},
			src:     obs(3, 1, map[string]string{"retention.ms": "2000"}),
			dst:     obs(3, 1, map[string]string{"retention.ms": "1"}),
		},
		{
			name: "target LogAppendTime forced back to CreateTime",
			src:  obs(3, 1, nil),
			dst:  obs(3, 1, map[string]string{"message.timestamp.type": logAppendTime}),
			set:  map[string]string{"message.timestamp.type": createTime},
		},
		{
			name: "target LogAppendTime by broker default",
			src:  obs(3, 1, nil),
			dst:  obs(3, 1, nil, keyTimestampType, logAppendTime),
			set:  map[string]string{"message.timestamp.type": createTime},
		},
		{
			name: "source LogAppendTime is held, target stays CreateTime",
			src:  obs(3, 1, map[string]string{"message.timestamp.type": logAppendTime}),
			dst:  obs(3, 1, map[string]string{"message.timestamp.type": createTime}),
		},
		{
			name: "timestamp window on the target lifted",
			src:  obs(3, 1, map[string]string{"message.timestamp.before.max.ms": "5"}),
			dst:  obs(3, 1, nil, "message.timestamp.before.max.ms", "3600000", "message.timestamp.after.max.ms", noLimit),
			set:  map[string]string{"message.timestamp.before.max.ms": noLimit},
		},
		{
			name: "min.insync.replicas capped to target rf",
			src:  obs(3, 3, map[string]string{"min.insync.replicas": "2"}),
			dst:  obs(3, 1, map[string]string{"min.insync.replicas": "2"}),
			set:  map[string]string{"min.insync.replicas": "1"},
		},
		{
			name: "min.insync.replicas already capped",
			src:  obs(3, 3, map[string]string{"min.insync.replicas": "2"}),
			dst:  obs(3, 1, map[string]string{"min.insync.replicas": "1"}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPolicy(append([]string{"x.excluded"}, tt.exclude...))
			c := p.decide(tt.src, tt.dst, target{}, false)
			if tt.conflict != "" {
				if !strings.Contains(c.conflict, tt.conflict) {
					t.Errorf("conflict = %q, want it to contain %q", c.conflict, tt.conflict)
				}
				if c.writes() {
					t.Errorf("a conflicting topic must not be written: %+v", c)
				}
				return
			}
			if c.conflict != "" {
				t.Fatalf("unexpected conflict %q", c.conflict)
			}
			if c.create || c.partitions != tt.partitions || !reflect.DeepEqual(c.set, tt.set) || !reflect.DeepEqual(c.remove, tt.remove) {
				t.Errorf("got create=%v partitions=%d set=%v remove=%v; want partitions=%d set=%v remove=%v",
					c.create, c.partitions, c.set, c.remove, tt.partitions, tt.set, tt.remove)
			}
		})
	}
}

func TestReportAssembly(t *testing.T) {
	r := Report{Topics: []TopicResult{
		{Name: "a", Partitions: 3, Created: true},
		{Name: "b", Partitions: 2, Conflict: "target has 4 partitions, source 2: ..."},
		{Name: "c", Partitions: 1, Err: errors.New("target: create topic: denied")},
		{Name: "d", Partitions: 8},
	}}
	want := []TopicPartitions{{"a", 3}, {"d", 8}}
	if got := r.Ready(); !reflect.DeepEqual(got, want) {
		t.Errorf("Ready() = %v, want %v", got, want)
	}
	if !r.Changed() {
		t.Error("Changed() = false with a created topic")
	}
	if got := r.Problems(); len(got) != 2 || got[0].Name != "b" || got[1].Name != "c" {
		t.Errorf("Problems() = %v, want b and c", got)
	}
	if (Report{Topics: []TopicResult{{Name: "d"}}}).Changed() {
		t.Error("Changed() = true with nothing done")
	}
}

func TestMergeKeys(t *testing.T) {
	got := mergeKeys([]string{"b", "d"}, []string{"c", "a", "d", "e"})
	if want := []string{"a", "b", "c", "d", "e"}; !reflect.DeepEqual(got, want) {
		t.Errorf("mergeKeys = %v, want %v", got, want)
	}
}

// TestDecideOwnedCleanupPolicy (#8 case 6a): a target topic drctl created
// follows the source's cleanup.policy; one it does not own is a conflict.
func TestDecideOwnedCleanupPolicy(t *testing.T) {
	src := obs(3, 1, map[string]string{"cleanup.policy": "compact"})
	dst := obs(3, 1, nil, "cleanup.policy", "delete")
	p := newPolicy(nil)
	if c := p.decide(src, dst, target{}, true); c.conflict != "" || c.set["cleanup.policy"] != "compact" {
		t.Errorf("owned: conflict %q set %v, want cleanup.policy=compact set", c.conflict, c.set)
	}
	if c := p.decide(src, dst, target{}, false); !strings.Contains(c.conflict, "cleanup.policy") || c.writes() {
		t.Errorf("not owned: conflict %q writes %v, want a cleanup.policy conflict and no write", c.conflict, c.writes())
	}
}
