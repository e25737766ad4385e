// Package kafkaconn opens sarama clients to the clusters of a topology with
// bounded time, and turns connection failures into errors that name the
// cluster and the fix. It never prints a secret.
//
// A command works through one session (Clusters): each cluster is dialled
// at most once per command, and the session closes every client. Producers
// start from one preset (IdempotentProducer) with one retry budget.
//
// # Contracts
//
//   - Dial returns within its context's deadline, whatever sarama's own
//     retries would do; a client it returns has fetched metadata once.
//   - Every failure to reach or authenticate to a cluster wraps
//     ErrUnreachable, and its message names the cluster, the cause and the
//     fix; Explain scrubs the cluster's password from any text it returns.
//   - A Clusters session dials each cluster at most once, however often it
//     is asked (Connect, Need); an unreachable cluster keeps its first error
//     and is not dialled again. Its clients belong to it: callers never
//     close them (nor a ClusterAdmin made from them), Close does.
//   - Every producer drctl opens starts from IdempotentProducer: acks from
//     all in-sync replicas, one request in flight, ProducerRetries retries
//     ProducerRetryBackoff apart.
package kafkaconn
