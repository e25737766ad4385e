// Command verifykfake measures `drctl verify` on two in-process kfake
// clusters: how fast a full verify reads a mirrored backlog against how fast
// the mirror copied it, what a sampled verify reads and how long it takes,
// and the verify process's peak memory with many partitions.
//
//	go run ./bench/verifykfake                                    # 60,000 records of 1 KiB, 4 partitions
//	go run ./bench/verifykfake -partitions 10000 -records 100000 -size 100   # the memory of 10,000 partitions
//
// It starts the two clusters in this process (kfake keeps the data in
// memory), writes the topology, writes the backlog into east, and then
// drives the drctl binary as an operator would (built from this checkout
// unless -drctl names one): `drctl mirror run` copies the backlog (timed
// from launch until `drctl mirror lag` reports nothing behind), is
// stopped, and `drctl verify -o json` runs in full and with each -sample.
// Each verify is a child process: its wall time and its peak resident set
// (getrusage's ru_maxrss of the child) are its own, apart from kfake's.
//
// The figures go to standard output as one markdown table and RESULT lines.
// kfake is not real Kafka: it serves fetches from memory, in this process,
// on the same cores; bench/run.sh's verify scenario measures the same on
// real Kafka.
package main
