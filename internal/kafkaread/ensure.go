package kafkaread

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/topology"
)

// ensureWait bounds the wait for created topics to be led.
const ensureWait = 30 * time.Second

// EnsureTopics creates, in one request, those of drctl's own topics specs
// that the cluster behind client lacks (with topology.InternalReplicas of
// its brokers; a topic a concurrent creator made first is as good), waits
// until each of them is led, and refreshes client's metadata of them so
// the caller can write at once. Topics that exist are left as they are.
func EnsureTopics(ctx context.Context, client sarama.Client, specs ...topology.TopicSpec) error {
	if len(specs) == 0 {
		return nil
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	md, err := metadata(ctx, client, names...)
	if err != nil {
		return fmt.Errorf("look up %v: %w", names, err)
	}
	exists := map[string]bool{}
	for _, tm := range md.Topics {
		if tm.Err == sarama.ErrNoError {
			exists[tm.Name] = true
		}
	}
	rf := topology.InternalReplicas(len(md.Brokers))
	missing := map[string]*sarama.TopicDetail{}
	var created []string
	for _, s := range specs {
		if exists[s.Name] {
			continue
		}
		configs := make(map[string]*string, len(s.Configs))
		for k, v := range s.Configs {
			configs[k] = &v
		}
		missing[s.Name] = &sarama.TopicDetail{NumPartitions: s.Partitions, ReplicationFactor: rf, ConfigEntries: configs}
		created = append(created, s.Name)
	}
	if len(missing) == 0 {
		return nil
	}
	if err := CreateTopics(ctx, client, missing); err != nil {
		return err
	}
	if err := AwaitLeaders(ctx, client, ensureWait, created...); err != nil {
		return err
	}
	if err := client.RefreshMetadata(created...); err != nil {
		return fmt.Errorf("metadata of %v: %w", created, err)
	}
	return nil
}
