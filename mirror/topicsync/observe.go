package topicsync

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/IBM/sarama"
)

// view is one cluster's answer about a set of topics: each topic it
// describes, or the error that kept it from doing so. A topic in neither map
// does not exist there.
type view struct {
	topics map[string]*observed
	errs   map[string]error
}

// names returns every topic of v, sorted.
func (v view) names() []string {
	out := make([]string, 0, len(v.topics)+len(v.errs))
	for n := range v.topics {
		out = append(out, n)
	}
	for n := range v.errs {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// observe asks a cluster (side names it in errors: "source" or "target")
// about the topics in names (nil: every topic) that keep accepts, with one
// metadata and one describe-configs request. configs, when not nil, picks
// the listed topics whose configs are read; the others are in view.topics
// with their configs unread (set and effective nil): a settle step waiting
// for hundreds of new topics does not make the target describe the configs
// of those it still creates, several times a second. It returns an error
// only when a request as a whole fails; a topic's own failure lands in
// view.errs.
func observe(admin sarama.ClusterAdmin, side string, names []string, keep func(string) bool, configs func(string, *observed) bool) (view, error) {
	v := view{topics: make(map[string]*observed), errs: make(map[string]error)}
	md, err := admin.DescribeTopics(names)
	if err != nil {
		return v, fmt.Errorf("%s: list topics: %w", side, err)
	}
	var resources []*sarama.ConfigResource
	for _, tm := range md {
		if !keep(tm.Name) {
			continue
		}
		switch {
		case errors.Is(tm.Err, sarama.ErrUnknownTopicOrPartition):
			continue // does not exist (only when asked by name)
		case !errors.Is(tm.Err, sarama.ErrNoError):
			v.errs[tm.Name] = fmt.Errorf("%s: topic metadata: %w; %s", side, tm.Err, fixFor(tm.Err, "DESCRIBE"))
			continue
		case len(tm.Partitions) == 0:
			v.errs[tm.Name] = fmt.Errorf("%s: topic metadata lists no partitions; it is checked again on the next pass", side)
			continue
		}
		o := &observed{partitions: int32(len(tm.Partitions)), id: topicID(tm.Uuid)}
		first := tm.Partitions[0]
		for _, p := range tm.Partitions {
			if p.ID < first.ID {
				first = p
			}
			if p.Leader < 0 || errors.Is(p.Err, sarama.ErrLeaderNotAvailable) {
				o.leaderless++
			}
		}
		o.rf = int16(len(first.Replicas))
		v.topics[tm.Name] = o
		if configs != nil && !configs(tm.Name, o) {
			continue
		}
		o.asked = true
		resources = append(resources, &sarama.ConfigResource{Type: sarama.TopicResource, Name: tm.Name})
	}
	if len(resources) == 0 {
		return v, nil
	}
	cfgs, err := admin.DescribeConfigs(resources, sarama.DescribeConfigsOptions{})
	if err != nil {
		return v, fmt.Errorf("%s: describe topic configs: %w", side, err)
	}
	for _, res := range cfgs {
		o := v.topics[res.Name]
		if o == nil {
			continue
		}
		if !errors.Is(res.ErrorCode, sarama.ErrNoError) {
			err := error(res.ErrorCode)
			if res.ErrorMsg != "" {
				err = fmt.Errorf("%w: %s", res.ErrorCode, res.ErrorMsg)
			}
			delete(v.topics, res.Name)
			v.errs[res.Name] = fmt.Errorf("%s: describe configs: %w; %s", side, err, fixFor(res.ErrorCode, "DESCRIBE_CONFIGS"))
			continue
		}
		o.set = make(map[string]string)
		o.effective = make(map[string]string)
		for _, e := range res.Configs {
			if e.Sensitive {
				continue
			}
			o.effective[e.Name] = e.Value
			if e.Source == sarama.SourceTopic {
				o.set[e.Name] = e.Value
			}
		}
	}
	for n, o := range v.topics {
		if o.asked && o.set == nil {
			delete(v.topics, n)
			v.errs[n] = fmt.Errorf("%s: describe configs: no answer for the topic; it is checked again on the next pass", side)
		}
	}
	return v, nil
}

// topicID renders a topic id as hex ("" when the cluster reports none).
func topicID(u sarama.Uuid) string {
	if u == (sarama.Uuid{}) {
		return ""
	}
	return hex.EncodeToString(u[:])
}

// fixFor suggests the fix for a failed read of a topic; acl is the ACL
// operation the read needs.
func fixFor(err error, acl string) string {
	if errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		return "grant drctl's principal " + acl + " on the topic"
	}
	return "it is checked again on the next pass"
}
