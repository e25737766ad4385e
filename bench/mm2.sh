#!/usr/bin/env bash
# bench/mm2.sh - MirrorMaker 2 (the dedicated MM2 driver, Kafka Connect inside)
# as drctl's benchmark baseline, on the e2e clusters of e2e/kafka.sh.
#
#   mm2.sh props alo|eos TOPIC NAME   print an mm2.properties that mirrors TOPIC
#                                     east -> west; NAME prefixes MM2's own topics
#                                     and its Connect group (use a fresh one per run)
#   mm2.sh run PROPS LOG              run MM2 in the foreground (exec: the pid is
#                                     the JVM's), logging to LOG
#
# Both variants: clusters east and west (SASL PLAIN as drctl), only east->west,
# only TOPIC, IdentityReplicationPolicy (same topic name on west), replication
# factor 1 for everything it creates, topic config and ACL sync on (MM2's
# defaults), offset-syncs and checkpoints on but limited to groups named NAME-*
# (none exist), heartbeats off. tasks.max is $BENCH_MM2_TASKS (default 2).
#
# eos adds exactly-once source support (KIP-618, for dedicated MM2 since Kafka
# 3.5): west.exactly.once.source.support=enabled on the worker (every source
# task then writes in transactions), the internal REST server that dedicated
# mode needs for it (dedicated.mode.enable.internal.rest, listeners on a free
# loopback port), and a read_committed source consumer (without it
# MirrorSourceConnector reports that it cannot support exactly-once).
# Not set: east->west.exactly.once.support=required. In dedicated mode a
# source->target property reaches all three MM2 connectors, and the heartbeat
# and checkpoint connectors then fail their preflight check ("The connector
# does not implement the API required for preflight validation of exactly-once
# source support"); the default, "requested", runs them all transactionally.
#
# Throughput tuning (BENCH_MM2_TUNING=tuned, the default): MM2's task
# producers batch up to 512 KiB per partition and linger 20 ms (defaults 16 KiB
# and 5 ms), and its source consumers return up to 2000 records per poll
# (default 500; with exactly-once, one poll is one transaction). On this
# machine that roughly doubled MM2's rate in both modes, so the baseline is
# MM2 as an operator would tune it for bulk replication. BENCH_MM2_TUNING=default
# leaves Kafka's defaults.
#
# Knobs: BENCH_MM2_TASKS (2), BENCH_MM2_HEAP (2g, as connect-mirror-maker.sh),
# BENCH_MM2_TUNING (tuned | default), BENCH_MM2_EXTRA (extra properties lines,
# appended verbatim),
# DRCTL_E2E_JAVA / JAVA_HOME, DRCTL_E2E_EAST / DRCTL_E2E_WEST,
# DRCTL_E2E_USER / DRCTL_E2E_PASSWORD.
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$BENCH_DIR/.." && pwd)"
KAFKA_SH="$REPO/e2e/kafka.sh"

EAST="${DRCTL_E2E_EAST:-127.0.0.1:39092}"
WEST="${DRCTL_E2E_WEST:-127.0.0.1:49092}"
USER_NAME="${DRCTL_E2E_USER:-drctl}"
PASSWORD="${DRCTL_E2E_PASSWORD:-drctl-secret}"
TASKS="${BENCH_MM2_TASKS:-2}"
TUNING="${BENCH_MM2_TUNING:-tuned}"
HEAP="${BENCH_MM2_HEAP:-2g}"

if [[ -n "${DRCTL_E2E_JAVA:-}" ]]; then
	JAVA="$DRCTL_E2E_JAVA"
elif [[ -n "${JAVA_HOME:-}" && -x "${JAVA_HOME}/bin/java" ]]; then
	JAVA="$JAVA_HOME/bin/java"
else
	JAVA=java
fi

die() {
	printf 'mm2.sh: %s\n' "$*" >&2
	exit 1
}

# free_port: a loopback TCP port nobody listens on (for MM2's internal REST
# server), below the kernel's ephemeral range so that no client connection
# takes it between this check and MM2's bind.
free_port() {
	local p lo
	lo="$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)"
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % (lo - 20000)))
		if ! timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$p" 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	die "no free port found"
}

# regex_quote STRING: STRING as a Java regular expression that matches only itself.
regex_quote() { printf '%s' "$1" | sed 's/[][\\.^$*+?(){}|]/\\&/g'; }

cmd_props() {
	local mode=${1:-} topic=${2:-} name=${3:-}
	[[ "$mode" == alo || "$mode" == eos ]] || die "usage: mm2.sh props alo|eos TOPIC NAME"
	[[ -n "$topic" && -n "$name" ]] || die "usage: mm2.sh props alo|eos TOPIC NAME"
	local jaas="org.apache.kafka.common.security.plain.PlainLoginModule required username=\"$USER_NAME\" password=\"$PASSWORD\";"
	cat <<EOF
# Written by bench/mm2.sh ($mode) for the drctl benchmark: $topic east -> west.
clusters = east, west
east.bootstrap.servers = $EAST
west.bootstrap.servers = $WEST
east.security.protocol = SASL_PLAINTEXT
east.sasl.mechanism = PLAIN
east.sasl.jaas.config = $jaas
west.security.protocol = SASL_PLAINTEXT
west.sasl.mechanism = PLAIN
west.sasl.jaas.config = $jaas

# One flow, one topic, same name on the target.
east->west.enabled = true
west->east.enabled = false
east->west.topics = $(regex_quote "$topic")
replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy
tasks.max = $TASKS

# Offsets, configs and ACLs: MM2's defaults (offset-syncs, checkpoints, topic
# config and ACL sync on), but no consumer group matches, and no heartbeats.
east->west.groups = $(regex_quote "$name")-.*
emit.checkpoints.enabled = true
sync.group.offsets.enabled = false
sync.topic.configs.enabled = true
sync.topic.acls.enabled = true
emit.heartbeats.enabled = false

# Single-broker clusters: replication factor 1 for all that MM2 creates.
replication.factor = 1
offset-syncs.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
offset.storage.replication.factor = 1
status.storage.replication.factor = 1
config.storage.replication.factor = 1

# Fresh Connect state per run: another run's source offsets must not be reused.
west.group.id = $name
offset.storage.topic = $name-offsets
status.storage.topic = $name-status
config.storage.topic = $name-configs
EOF
	if [[ "$mode" == eos ]]; then
		cat <<EOF

# Exactly-once (KIP-618 / KIP-656): transactional writes to west, read_committed
# reads from east; dedicated mode needs its internal REST server for it.
west.exactly.once.source.support = enabled
dedicated.mode.enable.internal.rest = true
listeners = http://127.0.0.1:$(free_port)
east.consumer.isolation.level = read_committed
EOF
	fi
	case "$TUNING" in
	tuned)
		cat <<EOF

# Throughput tuning (BENCH_MM2_TUNING=tuned): bigger producer batches, more
# records per poll (and so per transaction with exactly-once).
west.producer.batch.size = 524288
west.producer.linger.ms = 20
east.consumer.max.poll.records = 2000
EOF
		;;
	default) ;;
	*) die "BENCH_MM2_TUNING must be tuned or default, not '$TUNING'" ;;
	esac
	if [[ -n "${BENCH_MM2_EXTRA:-}" ]]; then
		printf '\n# BENCH_MM2_EXTRA\n%s\n' "$BENCH_MM2_EXTRA"
	fi
}

cmd_run() {
	local props=${1:-} logfile=${2:-} cp dir
	[[ -f "$props" && -n "$logfile" ]] || die "usage: mm2.sh run PROPS LOG"
	cp="$("$KAFKA_SH" classpath)" || die "no Kafka jars: run e2e/kafka.sh fetch"
	dir="$(dirname "$logfile")"
	cat >"$dir/mm2-log4j2.properties" <<EOF
status = warn
name = drctl-bench-mm2
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $logfile
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d{ISO8601}] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
EOF
	# The JVM settings of Kafka's connect-mirror-maker.sh / kafka-run-class.sh.
	exec "$JAVA" -Xms256m -Xmx"$HEAP" -server \
		-XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
		-XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true \
		-Dlog4j2.configurationFile="$dir/mm2-log4j2.properties" \
		-cp "$cp" org.apache.kafka.connect.mirror.MirrorMaker "$props" --clusters west
}

case "${1:-}" in
props) shift && cmd_props "$@" ;;
run) shift && cmd_run "$@" ;;
*)
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
