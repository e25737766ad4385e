package inspect

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// Broker is one broker of a cluster as its metadata lists it.
type Broker struct {
	ID   int32  `json:"id" yaml:"id"`
	Addr string `json:"addr" yaml:"addr"`
}

// ClusterInfo is what a cluster says about itself.
type ClusterInfo struct {
	ClusterID  string   `json:"cluster_id" yaml:"cluster_id"`
	Brokers    []Broker `json:"brokers" yaml:"brokers"`
	Controller int32    `json:"controller" yaml:"controller"`
	// KafkaVersion is the broker software's release, inferred from the
	// highest metadata.version it supports ("" when it does not say, as
	// with kfake). MetadataVersion is the cluster's finalized level.
	KafkaVersion    string `json:"kafka_version" yaml:"kafka_version"`
	MetadataVersion int16  `json:"metadata_version" yaml:"metadata_version"`
}

// describeCluster asks one broker for the cluster id, brokers, controller
// and feature levels. It honours ctx through the client's own timeouts.
func describeCluster(ctx context.Context, client sarama.Client) (ClusterInfo, error) {
	var info ClusterInfo
	md, b, err := kafkaread.AnyBrokerMetadata(ctx, client, &sarama.MetadataRequest{Version: 7, AllowAutoTopicCreation: false, Topics: []string{}})
	if err != nil {
		return info, fmt.Errorf("metadata: %w", err)
	}
	if md.ClusterID != nil {
		info.ClusterID = *md.ClusterID
	}
	info.Controller = md.ControllerID
	for _, br := range md.Brokers {
		info.Brokers = append(info.Brokers, Broker{ID: br.ID(), Addr: br.Addr()})
	}
	slices.SortFunc(info.Brokers, func(a, b Broker) int { return cmp.Compare(a.ID, b.ID) })
	if err := ctx.Err(); err != nil {
		return info, err
	}
	av, err := b.ApiVersions(&sarama.ApiVersionsRequest{Version: 3, ClientSoftwareName: "drctl", ClientSoftwareVersion: "0"})
	if err != nil {
		return info, nil //nolint:nilerr // the version is a nicety; the cluster answered
	}
	for _, f := range av.SupportedFeatures {
		if f.Name == "metadata.version" {
			info.KafkaVersion = releaseForMetadataLevel(f.MaxVersion)
		}
	}
	for _, f := range av.FinalizedFeatures {
		if f.Name == "metadata.version" {
			info.MetadataVersion = f.MaxVersionLevel
		}
	}
	if embeddedKfake(info.ClusterID) {
		info.KafkaVersion = KfakeRelease
	}
	return info, nil
}

// KfakeRelease is the release reported for an embedded kfake cluster (the
// sandbox's, the tests'), which advertises feature levels no Apache Kafka
// release has.
const KfakeRelease = "kfake (embedded)"

// embeddedKfake recognises kfake by the cluster ids it is run with: its own
// default ("kfake"), the test harness's ("kfake-east") and the sandbox's.
func embeddedKfake(clusterID string) bool {
	return strings.HasPrefix(clusterID, "kfake") || strings.HasPrefix(clusterID, topology.SandboxClusterIDPrefix)
}

// releaseForMetadataLevel maps the highest metadata.version a broker
// supports to the Apache Kafka release that introduced that level. Levels
// beyond the table are reported as newer than the last known release.
func releaseForMetadataLevel(level int16) string {
	table := []struct {
		upTo    int16
		release string
	}{
		{7, "3.3"}, {8, "3.4"}, {11, "3.5"}, {14, "3.6"}, {19, "3.7"}, {20, "3.8"},
		{21, "3.9"}, {25, "4.0"}, {27, "4.1"}, {29, "4.2"},
	}
	if level <= 0 {
		return ""
	}
	for _, r := range table {
		if level <= r.upTo {
			return r.release
		}
	}
	return "newer than 4.2"
}
