// Package kfakefault makes a kfake cluster answer as a real Kafka cluster
// does in a fault, for tests of how drctl reads such answers. It depends on
// nothing of drctl's, so that the tests of drctl's lowest packages can use
// it too.
package kfakefault

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// NoLiveBroker makes c answer its next n metadata requests that name
// topics with a list of no broker and, for each topic, one partition
// without a leader (LEADER_NOT_AVAILABLE): what a KRaft broker answers for
// a moment after it runs again from a pause longer than its controller
// session, until it has registered anew (seen on Kafka 4.1.1: the first
// answer after SIGCONT lists 0 brokers, the next one 1). Requests for
// every topic, as a client's dial sends, are answered as usual. The
// counter returned holds how many such answers are left (negative once
// they are used up and more requests came).
func NoLiveBroker(c *kfake.Cluster, n int32) *atomic.Int32 {
	left := &atomic.Int32{}
	left.Store(n)
	c.ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mreq := req.(*kmsg.MetadataRequest)
		if len(mreq.Topics) == 0 || left.Add(-1) < 0 {
			return nil, nil, false
		}
		resp := mreq.ResponseKind().(*kmsg.MetadataResponse)
		for _, rt := range mreq.Topics {
			st := kmsg.NewMetadataResponseTopic()
			st.Topic = rt.Topic
			sp := kmsg.NewMetadataResponseTopicPartition()
			sp.Leader, sp.ErrorCode = -1, kerr.LeaderNotAvailable.Code
			st.Partitions = append(st.Partitions, sp)
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	return left
}
