// Command wanproxy puts a simulated wide-area link between a Kafka client and
// a broker for drctl's benchmark (bench/run.sh, scenario wan): TCP proxies,
// each listening on one loopback address and forwarding to another, that delay
// every byte by a fixed one-way latency in both directions (toxiproxy's latency
// toxic, in process; no kernel netem, no root).
//
//	wanproxy -route 127.0.0.1:43103=127.0.0.1:43101 [-route ...] -latency 25ms [-jitter 0]
//
// It prints one "READY" line on stdout once every route listens, then runs
// until SIGTERM or SIGINT.
//
// Contracts:
//   - Each direction of each connection is a delay line: a chunk read at time t
//     is written on at t+latency (+/- jitter), chunks stay in order, and the
//     delay does not limit the bandwidth (toxiproxy's latency toxic buffers up
//     to 1024 chunks of up to 32 KiB per direction, about 32 MiB in flight).
//     A round trip through a route therefore takes at least 2 x latency.
//   - The proxy has no TCP window of its own between its two sides, so a real
//     WAN's bandwidth-delay limits (window sizes, loss) are not simulated: the
//     figures it gives isolate the cost of round trips in the client protocols.
//   - Only loopback addresses are accepted, on both ends of a route.
//
// A Kafka client follows the broker's advertised address from metadata, so a
// route only stays in the path if the broker advertises the proxy's address:
// e2e/kafka.sh's WAN listener (DRCTL_E2E_WAN=1) does that.
package main
