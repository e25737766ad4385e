package sandbox

import (
	"errors"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/topology"
)

// demoTopic is a topic of the demo data set on the home active cluster.
type demoTopic struct {
	name       string
	partitions int32
	configs    map[string]*string
}

//go:fix inline

// Retention keeps a long-running in-memory sandbox bounded; the compacted
// topic keeps the latest record of each of its 50 keys instead.
var (
	deleteConfigs  = map[string]*string{"retention.ms": new("10800000")} // 3h
	compactConfigs = map[string]*string{"cleanup.policy": new("compact")}
)

// demoTopics are created on east at start. The standby (west) stays empty:
// its topics are the mirror's to create.
var demoTopics = []demoTopic{
	{name: "orders", partitions: 6, configs: deleteConfigs},
	{name: "payments.eu", partitions: 3, configs: deleteConfigs},
	{name: "payments.us", partitions: 3, configs: deleteConfigs},
	{name: "customers", partitions: 3, configs: compactConfigs},
	// scratch is not selected by the topology's mirror.topics.
	{name: "scratch", partitions: 1, configs: deleteConfigs},
}

// createDemoTopics creates the demo topics on c; topics that already exist
// (a restart with a data directory) are left as they are.
func createDemoTopics(c *topology.Cluster) error { return createTopics(c, demoTopics) }

// createTopics creates topics on c, leaving those that exist as they are.
func createTopics(c *topology.Cluster, topics []demoTopic) error {
	if len(topics) == 0 {
		return nil
	}
	// sarama's admin looks up the controller with a metadata request for
	// "every topic"; with Metadata.Full off (the topology's default) and no
	// topic named yet, that request fails with "no specific topics".
	cfg, err := saramaConfig(c, "drctl-sandbox-admin", func(cfg *sarama.Config) { cfg.Metadata.Full = true })
	if err != nil {
		return fmt.Errorf("sandbox: create demo topics: %w", err)
	}
	admin, err := sarama.NewClusterAdmin(c.Bootstrap, cfg)
	if err != nil {
		return fmt.Errorf("sandbox: create demo topics on %s: connect: %w", c.Name, err)
	}
	defer admin.Close()
	for _, t := range topics {
		detail := &sarama.TopicDetail{NumPartitions: t.partitions, ReplicationFactor: 1, ConfigEntries: t.configs}
		err := admin.CreateTopic(t.name, detail, false)
		if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
			return fmt.Errorf("sandbox: create demo topic %s on %s: %w", t.name, c.Name, err)
		}
	}
	return nil
}
