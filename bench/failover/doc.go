// Command failover measures how long a planned `drctl failover` takes once
// producers have stopped, at scale: by default 100 topics of 12 partitions
// and 50 consumer groups with committed positions on east, on the two real
// clusters of e2e/kafka.sh, with `drctl mirror run` running and caught up.
//
//	e2e/kafka.sh start all && go run ./bench/failover
//
// It builds drctl from this checkout, creates the topics (named after a
// fresh topology, "fobench-<random>"), writes the data and the groups'
// positions, starts the mirror and waits until it has copied everything,
// then runs `drctl -o json failover --to west --yes` and reports the elapsed
// time of every step from the JSON event stream: the time to the flip
// (preflight .. translate-groups: after it, applications can move to west)
// apart from the reseed tail (unfence-new-active .. finish: east is wiped
// and re-seeded as the new standby). Everything it created is deleted at the
// end (-keep keeps it; -cleanup NAME deletes it later). See bench/README.md,
// "Planned failover at scale".
//
// It is a measurement, not a test: it changes the e2e clusters it is
// pointed at (loopback only) and reads no drctl package; it drives the drctl
// binary as an operator would, so the figure includes process start, plan and
// every step as shipped.
package main
