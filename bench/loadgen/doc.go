// Command loadgen is the data side of drctl's benchmark harness (bench/run.sh):
// it writes a source topic as fast as a plain producer can, waits until a
// mirror has copied all of it to a target topic, and checks the copy record by
// record.
//
//	loadgen produce -brokers B -topic T [-records N] [-size S] [-partitions P]
//	loadgen count   -src-brokers B1 -src-topic T1 -brokers B2 -topic T2 [-t0 MS]
//	loadgen verify  -src-brokers B1 -src-topic T1 -brokers B2 -topic T2
//	loadgen latency -src-brokers B1 -src-topic T1 -brokers B2 [-rate R] [-duration D]
//	loadgen create  -brokers B -topic T [-partitions P]
//	loadgen delete  -brokers B -topic T[,T2...]     (waits until they are gone)
//	loadgen topics  -brokers B [-prefix P]          (lists topic names)
//	loadgen exists  -brokers B -topic T             (exit 0 if T exists, 1 if not)
//	loadgen fanout  -brokers B -prefix P -topics N -partitions M -records R
//	loadgen fanout-wait -src-brokers B1 -brokers B2 -prefix P [-group G]
//
// Every mode prints progress on stderr and, at the end, one line on stdout that
// starts with "RESULT" and holds key=value pairs, for scripts to parse.
//
// Connection flags (all modes): -brokers/-src-brokers (comma-separated),
// -user, -password, -mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; empty
// for no SASL). The defaults match the e2e clusters of e2e/kafka.sh.
//
// loadgen shares no Kafka code path with the mirror it measures: it
// produces, consumes and compares with sarama directly. It borrows two
// leaves of drctl: topology's client configuration (so it logs in exactly
// as drctl does) and record header names, and kafkaread's retry policy
// (for the fan-out's topic creations). It targets loopback clusters only, and every loop in it is
// bounded by a record count or a duration.
package main
