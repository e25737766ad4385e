#!/usr/bin/env bash
# bench/run.sh - drctl's replication benchmark, one command:
#
#   bench/run.sh                          the full run (see bench/README.md)
#   BENCH_RECORDS=200000 bench/run.sh     a quicker throughput run
#
# It runs on the two e2e clusters of e2e/kafka.sh (started here if they are not
# running; left running afterwards) and has these scenarios (BENCH_SCENARIOS):
#
# throughput: the data (BENCH_RECORDS x BENCH_SIZE bytes over BENCH_PARTITIONS
#   partitions) is written once into a source topic on east; then each
#   contender (BENCH_CONTENDERS) copies it to west, in turn:
#     copy       the copy limit: a plain producer (loadgen produce) writing the
#                same data into a fresh topic on west, the ceiling for a mirror
#     mm2-alo    MirrorMaker 2, dedicated driver, at-least-once (bench/mm2.sh)
#     mm2-eos    MirrorMaker 2 with exactly-once source support (KIP-618)
#     drctl-alo  drctl mirror run, mirror.delivery: at-least-once
#     drctl-eos  drctl mirror run, mirror.delivery: exactly-once
#   Measured: time from launching the mirror until west holds every record
#   (loadgen count), until the first record appeared (start-up), the rate in
#   between (steady), peak RSS (VmHWM) and CPU of the process, CPU of the
#   brokers and of everything else meanwhile; then, untimed, the copy is
#   checked record by record (loadgen verify).
# memory: a source topic with BENCH_MEM_PARTITIONS (1000) partitions holding
#   BENCH_MEM_RECORDS (200000) records is mirrored by each of BENCH_MEM_MIRRORS
#   (mm2-eos drctl-eos); after the copy is complete the mirror keeps running
#   BENCH_MEM_HOLD (15) seconds; its peak RSS is reported.
# scale: BENCH_SCALE_TOPICS (500) topics of BENCH_SCALE_PARTITIONS (20)
#   partitions with BENCH_SCALE_RECORDS (10) records each on east; drctl
#   (exactly-once) mirrors them all while a consumer group with offsets in
#   every partition is committed on east. Measured: the time until every
#   partition has records on west (started), until all are copied, until the
#   group's offsets are on west (a sample checked record by record), how long
#   drctl status and drctl mirror lag take meanwhile, the mirror's peak RSS,
#   and the CPU the mirror and the brokers use over BENCH_SCALE_IDLE (10)
#   seconds once everything is copied (the idle cost of a large link).
# latency: each of BENCH_LAT_MIRRORS (mm2-eos drctl-eos) mirrors a fresh
#   12-partition topic while loadgen latency writes BENCH_LAT_RATE (5000)
#   records/s into it for BENCH_LAT_DURATION (60s) after a warm-up, and reads
#   the target: latency percentiles from record timestamp to readable on west.
#   Each mirror's timeline (every 100 ms of the measurement: records, median
#   and largest latency) goes to latency-MIRROR.latency.timeline in the work
#   directory: it tells a tail made of a few stalls from a spread one.
# wan: the throughput measurement (BENCH_WAN_RECORDS records, default
#   BENCH_RECORDS if set, else 300000, over BENCH_PARTITIONS partitions,
#   written once) for each of BENCH_WAN_MIRRORS (drctl-alo drctl-eos mm2-alo
#   mm2-eos), first on the LAN (direct), then through bench/wanproxy at each
#   one-way latency of BENCH_WAN_LATENCIES ("0 25 50" ms, added in both
#   directions, so the round trip is twice that; jitter BENCH_WAN_JITTER (0)
#   ms; 0 means through the proxy without delay: the proxy's CPU without the
#   latency, which the report divides the others by). The mirror is placed near
#   the target (the proxy between the mirror and the source, the MirrorMaker 1
#   practice) and, for BENCH_WAN_SOURCE_MIRRORS (drctl-alo drctl-eos; empty
#   for none), also near the source (the proxy between the mirror and the
#   target; at BENCH_WAN_SOURCE_LATENCIES, default the same). The mirror
#   bootstraps at the proxy, and the brokers' WAN listener (e2e/kafka.sh,
#   DRCTL_E2E_WAN=1, set here) advertises the proxy, so every
#   connection of the mirror to that cluster crosses it; loadgen's count and
#   verify go direct. Needs clusters started with DRCTL_E2E_WAN=1 (run.sh says
#   so if they run without it).
# verify: drctl verify against the copy it checks. BENCH_VERIFY_RECORDS
#   (BENCH_RECORDS if set, else 1000000) records over BENCH_PARTITIONS
#   partitions are written once into east; drctl-eos mirrors them (timed as
#   in throughput: done after, start-up, steady rate); the mirror is stopped
#   and `drctl verify -o json` runs on the copy in full, then once per
#   BENCH_VERIFY_SAMPLES ("100 10000") with --sample N. Measured per verify:
#   its wall time from launch (process start and the offset map included),
#   the backlog's records over it (the verify rate), its ratio to the
#   mirror's steady rate, the records it read on each side, its peak RSS and
#   CPU, and the brokers' CPU meanwhile. The full verify must find every
#   partition identical.
# vcost: what the mirror's verifier (mirror.verify) costs the mirror.
#   BENCH_VCOST_RECORDS (BENCH_RECORDS if set, else 1000000) records over
#   BENCH_PARTITIONS partitions are written once into east; drctl-eos copies
#   them once per verifier setting of BENCH_VCOST_MODES ("off default
#   sample1000-1s sample10000-1s full-1s": mode off; the topology's defaults;
#   sampleN-INTERVAL: every Nth record, a round every INTERVAL; full-INTERVAL),
#   BENCH_VCOST_ROUNDS (2) rounds, each round in the reverse order of the one
#   before. Measured as in throughput
#   (steady rate, CPU of the mirror process until the copy is complete), then,
#   the mirror still running, until the verifier's watermarks reach the end of
#   every partition (sum of drctl_verify_proven_offset scraped from its
#   /metrics; at most 60 s): that time, the process's CPU then, and the records
#   it compared (drctl_verify_records_total). The report takes each setting's
#   best round and divides its steady rate by mode off's.
#
# Mirrors use identity topic naming: each writes a topic with the source's name
# on west, which is deleted (and gone) before the next mirror starts, so every
# mirror creates it afresh. Topics this run creates are deleted at the end.
#
# The report (markdown) goes to stdout and bench/results/<UTC time>.md (<UTC time>-2.md for a
# second run started in the same minute); logs,
# generated configs and raw RESULT lines to $BENCH_WORK (default
# ~/.cache/drctl-e2e/bench/<run id>).
#
# Knobs (environment):
#   BENCH_SCENARIOS ("throughput memory latency")
#   BENCH_RECORDS (2000000)  BENCH_SIZE (1024)  BENCH_PARTITIONS (12)
#   BENCH_CONTENDERS ("copy mm2-alo mm2-eos drctl-alo drctl-eos")
#   BENCH_ROUNDS (1): throughput rounds; every mirror contender runs once per
#     round, each round in the reverse order of the one before (a contender
#     first in one round is last in the next, so neither side gains from its
#     place), and the report takes each contender's best round
#   BENCH_VERIFY (full | sample: content of every 100th record | off)
#   BENCH_TIMEOUT (seconds per mirror run: 300 + records/5000)
#   BENCH_KEEP (0; 1 keeps the topics)   BENCH_PRODUCERS (4: loadgen produce)
#   (the copy limit is the best of its runs, one before each mirror contender
#   and one after the last)
#   BENCH_MEM_PARTITIONS, BENCH_MEM_RECORDS, BENCH_MEM_HOLD, BENCH_MEM_MIRRORS
#   BENCH_LAT_RATE, BENCH_LAT_DURATION, BENCH_LAT_WARMUP (10s), BENCH_LAT_MIRRORS
#   BENCH_SCALE_TOPICS, BENCH_SCALE_PARTITIONS, BENCH_SCALE_RECORDS
#   BENCH_VERIFY_RECORDS, BENCH_VERIFY_SAMPLES
#   BENCH_VCOST_RECORDS, BENCH_VCOST_MODES, BENCH_VCOST_ROUNDS
#   BENCH_WAN_RECORDS, BENCH_WAN_MIRRORS, BENCH_WAN_LATENCIES, BENCH_WAN_JITTER,
#   BENCH_WAN_SOURCE_MIRRORS, BENCH_WAN_SOURCE_LATENCIES
#   BENCH_MM2_TASKS, BENCH_MM2_HEAP, BENCH_MM2_TUNING, BENCH_MM2_EXTRA: see bench/mm2.sh
#   BENCH_DRCTL (a drctl binary; default: built from this checkout)
#   BENCH_DRCTL_ARGS (extra arguments for drctl mirror run; default
#     "--listen 127.0.0.1:0" when the command has that flag)
#   BENCH_DRCTL_MIRROR_YAML (extra lines for the topology's mirror: section,
#     indented by two spaces)
#   BENCH_RESULTS (bench/results)
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$BENCH_DIR/.." && pwd)"
KAFKA_SH="$REPO/e2e/kafka.sh"
MM2_SH="$BENCH_DIR/mm2.sh"

SCENARIOS="${BENCH_SCENARIOS:-throughput memory latency}"
RECORDS="${BENCH_RECORDS:-2000000}"
SIZE="${BENCH_SIZE:-1024}"
PARTITIONS="${BENCH_PARTITIONS:-12}"
CONTENDERS="${BENCH_CONTENDERS:-copy mm2-alo mm2-eos drctl-alo drctl-eos}"
ROUNDS="${BENCH_ROUNDS:-1}"
if ! [[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]]; then
	echo "bench/run.sh: BENCH_ROUNDS=$ROUNDS: give a whole number of rounds, 1 or more" >&2
	exit 2
fi
VERIFY="${BENCH_VERIFY:-full}"
TIMEOUT="${BENCH_TIMEOUT:-$((300 + RECORDS / 5000))}"
KEEP="${BENCH_KEEP:-0}"
PRODUCERS="${BENCH_PRODUCERS:-4}"
MEM_PARTITIONS="${BENCH_MEM_PARTITIONS:-1000}"
MEM_RECORDS="${BENCH_MEM_RECORDS:-200000}"
MEM_HOLD="${BENCH_MEM_HOLD:-15}"
MEM_MIRRORS="${BENCH_MEM_MIRRORS:-mm2-eos drctl-eos}"
LAT_RATE="${BENCH_LAT_RATE:-5000}"
LAT_DURATION="${BENCH_LAT_DURATION:-60s}"
LAT_WARMUP="${BENCH_LAT_WARMUP:-10s}"
LAT_MIRRORS="${BENCH_LAT_MIRRORS:-mm2-eos drctl-eos}"
SCALE_TOPICS="${BENCH_SCALE_TOPICS:-500}"
SCALE_PARTITIONS="${BENCH_SCALE_PARTITIONS:-20}"
SCALE_RECORDS="${BENCH_SCALE_RECORDS:-10}"
SCALE_IDLE="${BENCH_SCALE_IDLE:-10}"
VERIFY_RECORDS="${BENCH_VERIFY_RECORDS:-${BENCH_RECORDS:-1000000}}"
VERIFY_SAMPLES="${BENCH_VERIFY_SAMPLES-100 10000}"
VCOST_RECORDS="${BENCH_VCOST_RECORDS:-${BENCH_RECORDS:-1000000}}"
VCOST_MODES="${BENCH_VCOST_MODES:-off default sample1000-1s sample10000-1s full-1s}"
VCOST_ROUNDS="${BENCH_VCOST_ROUNDS:-2}"
WAN_RECORDS="${BENCH_WAN_RECORDS:-${BENCH_RECORDS:-300000}}"
WAN_MIRRORS="${BENCH_WAN_MIRRORS:-drctl-alo drctl-eos mm2-alo mm2-eos}"
WAN_LATENCIES="${BENCH_WAN_LATENCIES:-0 25 50}"
WAN_JITTER="${BENCH_WAN_JITTER:-0}"
WAN_SOURCE_MIRRORS="${BENCH_WAN_SOURCE_MIRRORS-drctl-alo drctl-eos}" # empty: none
WAN_SOURCE_LATENCIES="${BENCH_WAN_SOURCE_LATENCIES:-$WAN_LATENCIES}"
SEED=1

# The wan scenario needs the brokers' WAN listener (if this script starts them).
[[ " $SCENARIOS " == *" wan "* ]] && export DRCTL_E2E_WAN=1
eval "$("$KAFKA_SH" env)"
EAST="$DRCTL_E2E_EAST"
WEST="$DRCTL_E2E_WEST"
USER_NAME="$DRCTL_E2E_USER"
PASSWORD="$DRCTL_E2E_PASSWORD"

RUN_ID="$(date -u +%Y%m%d-%H%M%S)"
STAMP="$(date -u +%Y-%m-%dT%H%MZ)"
WORK="${BENCH_WORK:-$DRCTL_E2E_HOME/bench/$RUN_ID}"
RESULTS_DIR="${BENCH_RESULTS:-$BENCH_DIR/results}"
SRC_TOPIC="bench-$RUN_ID-src"
COPY_TOPIC="bench-$RUN_ID-copy"
MEM_TOPIC="bench-$RUN_ID-p$MEM_PARTITIONS"
SCALE_PREFIX="bench-$RUN_ID-s"
WAN_TOPIC="bench-$RUN_ID-wan"
VERIFY_TOPIC="bench-$RUN_ID-verify"
VCOST_TOPIC="bench-$RUN_ID-vcost"
CLK_TCK="$(getconf CLK_TCK)"
LOADGEN="$WORK/bin/loadgen"
DRCTL="${BENCH_DRCTL:-$WORK/bin/drctl}"
WANPROXY="$WORK/bin/wanproxy"
# How the mirror reaches each cluster: direct, or (wan scenario) through the proxy.
MIRROR_EAST="$EAST"
MIRROR_WEST="$WEST"

# `run.sh report WORKDIR` prints the report of an earlier run again (from
# WORKDIR/settings.env and WORKDIR/results.txt), e.g. after editing this script.
if [[ "${1:-}" == report ]]; then
	[[ -f "${2:-}/settings.env" ]] || {
		echo "usage: bench/run.sh report WORKDIR (a run's work directory)" >&2
		exit 2
	}
	WORK="$2"
	# shellcheck disable=SC1091 # written by an earlier run
	source "$WORK/settings.env"
	REPORT_ONLY=1
else
	mkdir -p "$WORK/bin" "$RESULTS_DIR"
	REPORT_ONLY=""
fi
RAW="$WORK/results.txt" # one line per measurement: SCENARIO/NAME key=value ...
NOTES="$WORK/notes.txt" # what failed or looked odd, for the report
if [[ -z "$REPORT_ONLY" ]]; then
	: >"$RAW"
	: >"$NOTES"
fi

log() { printf '[%s] %s\n' "$(date -u +%T)" "$*" >&2; }
die() {
	log "run.sh: $*"
	exit 1
}
note() {
	log "NOTE: $*"
	printf -- '- %s\n' "$*" >>"$NOTES"
}

now_ms() {
	local t=${EPOCHREALTIME/./}
	echo $((t / 1000))
}

# rget KEY LINE: the value of KEY in a "k=v k=v ..." line ("" if absent).
rget() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2" | head -n1; }

# calc EXPR: floating-point arithmetic (awk), printed with 3 decimals.
calc() { awk "BEGIN { printf \"%.3f\", $1 }"; }

# --- processes: CPU, memory, liveness ----------------------------------------------

# cpu_of PID: CPU seconds (user + system) the process has used so far.
cpu_of() {
	local f
	f="$(cat "/proc/$1/stat" 2>/dev/null)" || {
		echo 0
		return
	}
	f="${f##*) }" # the fields after "pid (comm) "; utime and stime are the 12th and 13th
	awk -v tck="$CLK_TCK" '{ printf "%.2f", ($12 + $13) / tck }' <<<"$f"
}

# busy_cpu: CPU seconds the whole machine has spent busy since boot (all cores).
busy_cpu() {
	awk -v tck="$CLK_TCK" '/^cpu / { printf "%.2f", ($2 + $3 + $4 + $7 + $8 + $9) / tck }' /proc/stat
}

# peak_rss_mb PID: the process's peak resident set size (VmHWM), MiB.
peak_rss_mb() {
	awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || true
}

broker_pid() { "$KAFKA_SH" status "$1" | sed -n 's/.*running pid=\([0-9]*\).*/\1/p'; }
# brokers_data: where each running broker keeps its log directories, and on
# which file system ("east on tmpfs (/dev/shm/...), west on ..."): a broker's
# disk sets how fast it creates and first writes thousands of partitions
# (e2e/kafka.sh, DRCTL_E2E_DATA_ROOT; bench/results/diary.md, "the brokers' disk").
brokers_data() {
	"$KAFKA_SH" status | sed -n 's/^\([a-z]*\): running .* data=\(.*\):\([^:]*\)$/\1 on \3 (\2)/p' | paste -sd';' - | sed 's/;/, /g'
}

brokers_cpu() { calc "$(cpu_of "$EAST_PID") + $(cpu_of "$WEST_PID")"; }

# brokers_mark: remembers each broker's CPU counter now (EAST0, WEST0);
# brokers_since sets BROKERS_S, EAST_S and WEST_S to
# the CPU each used since: the source's share (serving fetches) apart from
# the target's (taking the writes and transactions).
brokers_mark() {
	EAST0="$(cpu_of "$EAST_PID")" WEST0="$(cpu_of "$WEST_PID")"
}
brokers_since() {
	EAST_S="$(calc "$(cpu_of "$EAST_PID") - $EAST0")" WEST_S="$(calc "$(cpu_of "$WEST_PID") - $WEST0")"
	BROKERS_S="$(calc "$EAST_S + $WEST_S")"
}

# fd_room PID NEED: the broker can open NEED more files (one per partition's
# active segment, with room for its connections) under its open-files limit.
fd_room() {
	local open limit
	open="$(ls "/proc/$1/fd" 2>/dev/null | wc -l)"
	limit="$(awk '/^Max open files/ { print $4 }' "/proc/$1/limits" 2>/dev/null)"
	[[ "$limit" == unlimited ]] && return 0
	((open + $2 <= ${limit:-0}))
}

# wait_fd_room NEED: wait up to 3 minutes until both brokers have room for
# NEED more open files. A broker keeps a deleted partition's files open
# until file.delete.delay.ms (60 s) has passed, so a scale run started right
# after another one could take a broker past its limit ("Too many open
# files"), and the broker stops.
wait_fd_room() {
	local i
	for ((i = 0; i < 180; i++)); do
		if fd_room "$EAST_PID" "$1" && fd_room "$WEST_PID" "$1"; then
			return 0
		fi
		((i % 30 == 0)) && log "waiting for the brokers to close deleted partitions' files (room for $1 more needed)"
		sleep 1
	done
	return 1
}

# alive PID: the process exists and is not a zombie (kill -0 succeeds on one).
alive() {
	local s
	s="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
	s="${s##*) }"
	[[ "${s:0:1}" != Z ]]
}

# stop_pid PID NAME: SIGTERM, up to 30 s, then SIGKILL. Only processes this
# script started, by pid.
stop_pid() {
	local pid=$1 name=$2 _
	if alive "$pid"; then
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 300); do
			alive "$pid" || break
			sleep 0.1
		done
		if alive "$pid"; then
			note "$name (pid $pid) did not stop within 30 s of SIGTERM; killed"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	wait "$pid" 2>/dev/null || true
}

# --- topics -----------------------------------------------------------------------

lg() { "$LOADGEN" "$@"; }

delete_topics() { # delete_topics BROKERS T1,T2,...
	lg delete -brokers "$1" -topic "$2" >/dev/null
}

topic_exists() { lg exists -brokers "$1" -topic "$2" >/dev/null 2>&1; }

# MM2 creates these on its own and names them itself; they are deleted at the
# end only if they did not exist before this run (someone else's MM2 may use them).
MM2_SHARED_WEST="east.checkpoints.internal heartbeats"
MM2_SHARED_EAST="mm2-offset-syncs.west.internal"
declare -A PREEXISTING=()
snapshot_mm2_shared() {
	local t
	for t in $MM2_SHARED_WEST; do topic_exists "$WEST" "$t" && PREEXISTING["west/$t"]=1; done
	for t in $MM2_SHARED_EAST; do topic_exists "$EAST" "$t" && PREEXISTING["east/$t"]=1; done
	return 0
}
cleanup_mm2_shared() {
	local t
	for t in $MM2_SHARED_WEST; do
		[[ -n "${PREEXISTING["west/$t"]:-}" ]] || delete_topics "$WEST" "$t"
	done
	for t in $MM2_SHARED_EAST; do
		[[ -n "${PREEXISTING["east/$t"]:-}" ]] || delete_topics "$EAST" "$t"
	done
}

# Topics created on east by this run (deleted at the end).
EAST_TOPICS=()

RUNNING_PID=""
CLEANED=""
cleanup() {
	local rc=$? t
	[[ -z "$CLEANED" ]] || exit "$rc"
	CLEANED=1
	if [[ -n "$RUNNING_PID" ]]; then
		stop_pid "$RUNNING_PID" "mirror"
	fi
	[[ -z "${COUNT_PID:-}" ]] || stop_pid "$COUNT_PID" "loadgen count"
	[[ -z "${WAN_PROXY_PID:-}" ]] || stop_pid "$WAN_PROXY_PID" "wanproxy"
	if [[ "$KEEP" != 1 && -x "$LOADGEN" ]]; then
		log "deleting this run's topics"
		for t in "${EAST_TOPICS[@]}"; do
			delete_topics "$WEST" "$t" || true
			delete_topics "$EAST" "$t" || true
		done
		delete_topics "$WEST" "$COPY_TOPIC" || true
		scale_cleanup || true
		cleanup_mm2_shared || true
	fi
	exit "$rc"
}

# --- mirrors: start and clean up ------------------------------------------------------

# drctl_available: does this drctl have `mirror run`? (It may not be built yet.)
drctl_available() {
	[[ -x "$DRCTL" ]] && "$DRCTL" mirror run --help >/dev/null 2>&1
}

# drctl_topology DELIVERY NAME TOPIC: a topology file for `drctl mirror run`
# that mirrors TOPIC east -> west with the given delivery.
drctl_topology() {
	local delivery=$1 name=$2 topic=$3
	cat <<EOF
# Written by bench/run.sh for the drctl benchmark.
name: $name
clusters:
  east:
    bootstrap: [$MIRROR_EAST]
    sasl: {mechanism: PLAIN, username: $USER_NAME, password: "\${BENCH_DRCTL_PASSWORD}"}
  west:
    bootstrap: [$MIRROR_WEST]
    sasl: {mechanism: PLAIN, username: $USER_NAME, password: "\${BENCH_DRCTL_PASSWORD}"}
active: east
standby: west
mirror:
  topics: {include: ["$topic"]}
  groups: {include: ["$name-.*"]}
  delivery: $delivery
${BENCH_DRCTL_MIRROR_YAML:-}
EOF
}

# start_mirror MIRROR TOPIC TAG: start mm2-alo|mm2-eos|drctl-alo|drctl-eos
# mirroring TOPIC east -> west, in the background. Sets MIRROR_PID,
# MIRROR_LOG, MIRROR_NAME (unique per run: its state and topics carry it),
# MIRROR_T0 (launch, Unix ms), CPU0, EAST0 and WEST0 (CPU counters at launch).
# Returns 3 when the mirror is not available, 1 when it cannot start.
#
# THE HOOK for drctl's mirror is the drctl-* branch: `drctl mirror run -c
# <generated topology>` (see drctl_topology), stopped with SIGTERM by
# finish_mirror once the measurement is over.
start_mirror() {
	local mirror=$1 topic=$2 tag=$3 kind mode base
	kind="${mirror%%-*}"
	mode="${mirror#*-}"
	base="$WORK/$tag-$mirror"
	MIRROR_NAME="bench-$RUN_ID-$tag-$mirror"
	MIRROR_LOG="$base.log"
	case "$kind" in
	mm2)
		DRCTL_E2E_EAST="$MIRROR_EAST" DRCTL_E2E_WEST="$MIRROR_WEST" \
			"$MM2_SH" props "$mode" "$topic" "$MIRROR_NAME" >"$base.properties"
		log "$tag/$mirror: starting MirrorMaker 2 ($base.properties, log $MIRROR_LOG)"
		CPU0="$(busy_cpu)"
		brokers_mark
		MIRROR_T0="$(now_ms)"
		"$MM2_SH" run "$base.properties" "$MIRROR_LOG" </dev/null >"$base.stdout" 2>&1 &
		MIRROR_PID=$!
		;;
	drctl)
		if ! drctl_available; then
			log "$tag/$mirror: not available ('drctl mirror run --help' fails: the mirror is not built yet)"
			return 3
		fi
		local delivery=at-least-once args
		[[ "$mode" == eos ]] && delivery=exactly-once
		drctl_topology "$delivery" "$MIRROR_NAME" "$topic" >"$base.yaml"
		export BENCH_DRCTL_PASSWORD="$PASSWORD"
		if ! "$DRCTL" -c "$base.yaml" validate >"$base.validate" 2>&1; then
			note "$tag/$mirror: drctl validate rejects the generated topology: $(tail -n3 "$base.validate" | tr '\n' ' ')"
			return 1
		fi
		args="${BENCH_DRCTL_ARGS-}"
		if [[ -z "${BENCH_DRCTL_ARGS+set}" && "$("$DRCTL" mirror run --help 2>&1)" == *--listen* ]]; then
			args="--listen 127.0.0.1:0" # not the fixed default port, which another mirror may hold
		fi
		MIRROR_BEFORE="$(lg topics -brokers "$WEST")"
		log "$tag/$mirror: starting drctl mirror run -c $base.yaml $args (log $MIRROR_LOG)"
		CPU0="$(busy_cpu)"
		brokers_mark
		MIRROR_T0="$(now_ms)"
		# shellcheck disable=SC2086 # args is a list of words
		"$DRCTL" -c "$base.yaml" mirror run $args </dev/null >"$MIRROR_LOG" 2>&1 &
		MIRROR_PID=$!
		;;
	*)
		note "unknown mirror '$mirror'"
		return 1
		;;
	esac
	RUNNING_PID=$MIRROR_PID
	return 0
}

# finish_mirror MIRROR TOPIC TAG: stop the running mirror (if still running),
# report ERROR lines of its log, delete the target topic and its own topics.
finish_mirror() {
	local mirror=$1 topic=$2 tag=$3 t
	stop_pid "$MIRROR_PID" "$tag/$mirror"
	RUNNING_PID=""
	if grep -qE ' ERROR | level=ERROR ' "$MIRROR_LOG" 2>/dev/null; then
		note "$tag/$mirror: $(grep -cE ' ERROR | level=ERROR ' "$MIRROR_LOG") ERROR lines in $MIRROR_LOG, first: $(grep -m1 -E ' ERROR | level=ERROR ' "$MIRROR_LOG" | cut -c1-200)"
	fi
	[[ "$KEEP" == 1 ]] && return 0
	delete_topics "$WEST" "$topic" || true
	case "$mirror" in
	mm2-*) delete_topics "$WEST" "$MIRROR_NAME-offsets,$MIRROR_NAME-status,$MIRROR_NAME-configs" || true ;;
	drctl-*)
		# drctl's own topics for this mirror carry the unique topology name.
		for t in $(lg topics -brokers "$WEST"); do
			if [[ "$t" == *"$MIRROR_NAME"* ]] && ! grep -qxF -- "$t" <<<"$MIRROR_BEFORE"; then
				delete_topics "$WEST" "$t" || true
			fi
		done
		;;
	esac
}

# wait_copied NAME SRC_TOPIC OUT: run loadgen count against the running mirror
# until west holds every record of SRC_TOPIC; the RESULT line goes to OUT.
# Fails when the mirror process exits first, or on timeout.
wait_copied() {
	local name=$1 src=$2 out=$3 rc=0 cpid
	# Not through lg: a shell function in the background is a subshell, and
	# $! would be that subshell rather than loadgen.
	"$LOADGEN" count -src-brokers "$EAST" -brokers "$WEST" -src-topic "$src" -t0 "$MIRROR_T0" \
		-timeout "${COUNT_TIMEOUT:-$TIMEOUT}s" >"$out" 2> >(tee "$out.log" >&2) &
	cpid=$!
	COUNT_PID=$cpid # stopped by cleanup if this script is interrupted
	while alive "$cpid"; do
		if ! alive "$MIRROR_PID"; then
			note "$name: the mirror process exited before the target held all records (see $MIRROR_LOG)"
			kill -TERM "$cpid" 2>/dev/null || true
			break
		fi
		sleep 0.2
	done
	wait "$cpid" || rc=$?
	COUNT_PID=""
	if [[ $rc -ne 0 ]] || ! grep -q '^RESULT' "$out"; then
		note "$name: the copy did not complete (loadgen count exit $rc: $(tail -n1 "$out.log" | cut -c1-200); logs: $MIRROR_LOG, $out.log)"
		return 1
	fi
}

# usage_now: "rss_mb=.. cpu_s=.. brokers_cpu_s=.. other_cpu_s=.." of the
# running mirror since its launch.
usage_now() {
	local cpu busy
	cpu="$(cpu_of "$MIRROR_PID")"
	busy="$(calc "$(busy_cpu) - $CPU0")"
	brokers_since
	echo "rss_mb=$(peak_rss_mb "$MIRROR_PID") cpu_s=$cpu brokers_cpu_s=$BROKERS_S east_cpu_s=$EAST_S west_cpu_s=$WEST_S other_cpu_s=$(calc "$busy - $cpu - $BROKERS_S")"
}

# verify_copy NAME SRC_TOPIC EXACT: prints "verify=ok|FAILED|off ..." fields.
verify_copy() {
	local name=$1 src=$2 exact=$3 args=() line
	if [[ "$VERIFY" == off ]]; then
		echo "verify=off"
		return
	fi
	[[ "$VERIFY" == sample ]] && args+=(-every 100)
	[[ "$exact" == 1 ]] && args+=(-exactly-once)
	log "$name: verifying $src on west against east (untimed)"
	if line="$(lg verify -src-brokers "$EAST" -brokers "$WEST" -src-topic "$src" "${args[@]}" \
		2> >(tee "$WORK/$name.verify.log" >&2))"; then
		echo "verify=ok duplicates=$(rget duplicates "$line") extra_headers=$(rget extra_headers "$line")"
	else
		note "$name: verify FAILED: $(tail -n1 "$WORK/$name.verify.log" | cut -c1-300)"
		echo "verify=FAILED duplicates=$(rget duplicates "$line") missing=$(rget missing "$line") mismatches=$(rget mismatches "$line")"
	fi
}

# --- scenarios -------------------------------------------------------------------------

produce_source() { # produce_source TOPIC RECORDS PARTITIONS TAG
	local line
	log "$4: writing $2 records into $1 ($3 partitions) on east"
	EAST_TOPICS+=("$1")
	line="$(lg produce -brokers "$EAST" -topic "$1" -records "$2" -size "$SIZE" -partitions "$3" \
		-producers "$PRODUCERS" -seed "$SEED" 2> >(tee "$WORK/$4-source.log" >&2) | grep '^RESULT')" ||
		die "writing the source data failed (see $WORK/$4-source.log)"
	echo "$4/source status=ok ${line#RESULT }" >>"$RAW"
}

# The copy limit is measured several times, interleaved with the mirrors (a
# run before each mirror and one after the last), and the best run counts:
# the machine's load drifts during a full run, and a limit measured only at
# the start could read below a mirror measured later.
COPY_LINES=()
copy_round() {
	copy_once "$((${#COPY_LINES[@]} + 1))" && COPY_LINES+=("$COPY_LINE")
}

finish_copy() {
	local line best="" best_rate=0 rates="" rate
	for line in "${COPY_LINES[@]}"; do
		rate="$(rget records_per_s "$line")"
		rates="${rates:+$rates,}$(printf '%.0f' "$rate")"
		if awk "BEGIN { exit !($rate > $best_rate) }"; then
			best="$line"
			best_rate="$rate"
		fi
	done
	if [[ -z "$best" ]]; then
		echo "throughput/copy status=failed" >>"$RAW"
		return 1
	fi
	echo "throughput/copy status=ok $best copy_rates=$rates" >>"$RAW"
}

copy_once() {
	local n=$1 out line cpu0 busy cpu
	log "throughput/copy: plain producer writing the same data into $COPY_TOPIC on west (run $n)"
	out="$WORK/throughput-copy-$n.produce"
	cpu0="$(busy_cpu)"
	brokers_mark
	if ! lg produce -brokers "$WEST" -topic "$COPY_TOPIC" -records "$RECORDS" -size "$SIZE" \
		-partitions "$PARTITIONS" -producers "$PRODUCERS" -seed "$SEED" >"$out" 2> >(tee "$out.log" >&2); then
		note "throughput/copy: loadgen produce failed (see $out.log)"
		delete_topics "$WEST" "$COPY_TOPIC" || true
		return 1
	fi
	busy="$(calc "$(busy_cpu) - $cpu0")"
	brokers_since
	line="$(grep '^RESULT' "$out")"
	cpu="$(rget cpu_s "$line")"
	COPY_LINE="${line#RESULT } rss_mb=$(awk "BEGIN { printf \"%.0f\", $(rget peak_rss_kb "$line") / 1024 }") brokers_cpu_s=$BROKERS_S east_cpu_s=$EAST_S west_cpu_s=$WEST_S other_cpu_s=$(calc "$busy - $cpu - $BROKERS_S") verify=n/a"
	delete_topics "$WEST" "$COPY_TOPIC" # the next run (and the mirrors) start from a clean target
}

# best_rounds: for each mirror contender, the best of its throughput rounds
# (the highest steady rate) becomes its throughput/M line, with every round's
# rate in round_rates (in round order; "failed" for a round that did not
# complete).
best_rounds() {
	local m line best best_rate rates rate r tag
	for m in $CONTENDERS; do
		[[ "$m" == copy ]] && continue
		best="" best_rate=0 rates=""
		for ((r = 1; r <= ROUNDS; r++)); do
			tag=throughput
			((r > 1)) && tag="throughput-r$r"
			line="$(raw_of "$tag/$m")"
			if [[ "$(rget status "$line")" != ok ]]; then
				rates="${rates:+$rates,}failed"
				continue
			fi
			rate="$(rget steady_records_per_s "$line")"
			rates="${rates:+$rates,}$(printf '%.0f' "$rate")"
			if awk "BEGIN { exit !($rate > $best_rate) }"; then
				best="$line" best_rate="$rate"
			fi
		done
		[[ -n "$best" ]] || continue
		echo "throughput/$m ${best#* } round_rates=$rates" >>"$RAW"
	done
}

# run_throughput_mirror MIRROR [TAG [TOPIC [EXTRA]]]: MIRROR copies TOPIC
# (default the throughput scenario's source) to west; the result line is
# TAG/MIRROR (default tag throughput), with EXTRA fields appended.
run_throughput_mirror() {
	local m=$1 tag=${2:-throughput} topic=${3:-$SRC_TOPIC} extra=${4:-} rc=0 out line usage exact=0
	delete_topics "$WEST" "$topic" # identity naming: the mirror creates it
	start_mirror "$m" "$topic" "$tag" || rc=$?
	if [[ $rc -eq 3 ]]; then
		echo "$tag/$m status=unavailable" >>"$RAW"
		return 0
	elif [[ $rc -ne 0 ]]; then
		echo "$tag/$m status=failed" >>"$RAW"
		return 1
	fi
	out="$WORK/$tag-$m.count"
	if ! wait_copied "$tag/$m" "$topic" "$out"; then
		echo "$tag/$m status=failed" >>"$RAW"
		finish_mirror "$m" "$topic" "$tag"
		return 1
	fi
	usage="$(usage_now)"
	stop_pid "$MIRROR_PID" "$tag/$m"
	line="$(grep '^RESULT' "$out")"
	[[ "$m" == *-eos ]] && exact=1
	echo "$tag/$m status=ok ${line#RESULT } $usage${extra:+ $extra} $(verify_copy "$tag-$m" "$topic" "$exact")" >>"$RAW"
	log "$tag/$m: done after $(rget done_s "$line") s (first record after $(rget first_s "$line") s), steady $(rget steady_records_per_s "$line") records/s; $usage"
	finish_mirror "$m" "$topic" "$tag"
}

# --- wan: the mirror across a simulated WAN link ---------------------------------------

# wan_check: both clusters run with the WAN listener (e2e/kafka.sh,
# DRCTL_E2E_WAN=1); otherwise say how to get it.
wan_check() {
	local st
	st="$("$KAFKA_SH" status)"
	if [[ "$(grep -c ' wan=' <<<"$st")" != 2 || -z "${DRCTL_E2E_EAST_WAN:-}" ]]; then
		note "wan: skipped: the clusters run without the WAN listener; restart them with it: DRCTL_E2E_WAN=1 $KAFKA_SH restart (with this run's DRCTL_E2E_* settings)"
		return 1
	fi
}

# wan_proxy_start CLUSTER LATENCY_MS: bench/wanproxy in front of CLUSTER's WAN
# listener (LATENCY_MS each way, BENCH_WAN_JITTER); the mirror then reaches
# CLUSTER through it (MIRROR_EAST or MIRROR_WEST). Sets WAN_PROXY_PID.
wan_proxy_start() {
	local cluster=$1 ms=$2 listen upstream out _
	if [[ $cluster == east ]]; then
		listen="$DRCTL_E2E_EAST_WAN" upstream="$DRCTL_E2E_EAST_WAN_UPSTREAM"
	else
		listen="$DRCTL_E2E_WEST_WAN" upstream="$DRCTL_E2E_WEST_WAN_UPSTREAM"
	fi
	out="$WORK/wanproxy-$cluster-$ms.out"
	"$WANPROXY" -route "$listen=$upstream" -latency "${ms}ms" -jitter "${WAN_JITTER}ms" >"$out" 2>&1 </dev/null &
	WAN_PROXY_PID=$!
	for _ in $(seq 1 300); do
		grep -q '^READY' "$out" && break
		alive "$WAN_PROXY_PID" || break
		sleep 0.1
	done
	if ! grep -q '^READY' "$out"; then
		note "wan: wanproxy did not start: $(tail -n1 "$out" | cut -c1-200)"
		stop_pid "$WAN_PROXY_PID" wanproxy
		WAN_PROXY_PID=""
		return 1
	fi
	if [[ $cluster == east ]]; then MIRROR_EAST="$listen"; else MIRROR_WEST="$listen"; fi
}

wan_proxy_stop() {
	[[ -n "${WAN_PROXY_PID:-}" ]] && stop_pid "$WAN_PROXY_PID" wanproxy
	WAN_PROXY_PID=""
	MIRROR_EAST="$EAST"
	MIRROR_WEST="$WEST"
}

# run_wan_mirror MIRROR PLACEMENT LATENCY: MIRROR copies the wan topic with the
# proxy in front of the source (PLACEMENT target: the mirror runs near the
# target) or of the target (PLACEMENT source); LATENCY lan: no proxy.
run_wan_mirror() {
	local m=$1 place=$2 ms=$3 tag cpu0 rc=0
	if [[ $ms == lan ]]; then
		tag="wan-lan"
		log "=== wan/$m: on the LAN (no proxy)"
		run_throughput_mirror "$m" "$tag" "$WAN_TOPIC" "placement=lan latency_ms=0" || rc=$?
		return $rc
	fi
	tag="wan-$place-$ms"
	log "=== wan/$m: near the $place, ${ms} ms each way to the $([[ $place == target ]] && echo source || echo target)"
	wan_proxy_start "$([[ $place == target ]] && echo east || echo west)" "$ms" || {
		echo "$tag/$m status=failed" >>"$RAW"
		return 1
	}
	cpu0="$(cpu_of "$WAN_PROXY_PID")"
	run_throughput_mirror "$m" "$tag" "$WAN_TOPIC" "placement=$place latency_ms=$ms proxy_cpu_s=PROXYCPU" || rc=$?
	# The proxy's CPU during the run (it is one more process on the 2 cores).
	sed -i "s|^\($tag/$m .*\)proxy_cpu_s=PROXYCPU|\1proxy_cpu_s=$(calc "$(cpu_of "$WAN_PROXY_PID") - $cpu0")|" "$RAW"
	wan_proxy_stop
	return $rc
}

run_wan() {
	local m ms
	wan_check || return 0
	(cd "$REPO" && go build -o "$WANPROXY" ./bench/wanproxy) || {
		note "wan: bench/wanproxy did not build; scenario skipped"
		return 0
	}
	produce_source "$WAN_TOPIC" "$WAN_RECORDS" "$PARTITIONS" wan
	# Each mirror's runs follow each other (LAN, then every latency), so that
	# its ratio to its own LAN figure spans minutes, not the whole run.
	for m in $WAN_MIRRORS; do
		run_wan_mirror "$m" lan lan || true
		for ms in $WAN_LATENCIES; do
			run_wan_mirror "$m" target "$ms" || true
		done
		[[ " $WAN_SOURCE_MIRRORS " == *" $m "* ]] || continue
		for ms in $WAN_SOURCE_LATENCIES; do
			run_wan_mirror "$m" source "$ms" || true
		done
	done
}

run_memory_mirror() { # run_memory_mirror MIRROR
	local m=$1 rc=0 out line usage
	delete_topics "$WEST" "$MEM_TOPIC"
	start_mirror "$m" "$MEM_TOPIC" memory || rc=$?
	if [[ $rc -eq 3 ]]; then
		echo "memory/$m status=unavailable" >>"$RAW"
		return 0
	elif [[ $rc -ne 0 ]]; then
		echo "memory/$m status=failed" >>"$RAW"
		return 1
	fi
	out="$WORK/memory-$m.count"
	if ! COUNT_TIMEOUT=$((300 + MEM_RECORDS / 1000)) wait_copied "memory/$m" "$MEM_TOPIC" "$out"; then
		echo "memory/$m status=failed $(usage_now)" >>"$RAW"
		finish_mirror "$m" "$MEM_TOPIC" memory
		return 1
	fi
	log "memory/$m: copy complete; holding ${MEM_HOLD}s"
	sleep "$MEM_HOLD"
	if ! alive "$MIRROR_PID"; then
		note "memory/$m: the mirror exited while idle (see $MIRROR_LOG)"
	fi
	usage="$(usage_now)"
	line="$(grep '^RESULT' "$out")"
	echo "memory/$m status=ok ${line#RESULT } $usage" >>"$RAW"
	log "memory/$m: $usage"
	finish_mirror "$m" "$MEM_TOPIC" memory
}

# timed SECONDS_VAR CMD...: run CMD (output to $WORK/timed.out), store its wall time in s.
timed() {
	local var=$1 t0 rc=0
	shift
	t0="$(now_ms)"
	"$@" >"$WORK/timed.out" 2>&1 || rc=$?
	printf -v "$var" '%s' "$(calc "($(now_ms) - $t0) / 1000")"
	return $rc
}

run_scale() {
	local m=drctl-eos rc=0 out line usage status_s lag_s status_max=0 lag_max=0 lag_total="" i east_list west_list
	log "scale: $SCALE_TOPICS topics x $SCALE_PARTITIONS partitions, $SCALE_RECORDS records each, on east"
	if ! wait_fd_room $((SCALE_TOPICS * SCALE_PARTITIONS + 2000)); then
		note "scale: a broker has no room for $((SCALE_TOPICS * SCALE_PARTITIONS + 2000)) more open files (ulimit -n of the brokers; see /proc/<pid>/limits): not run"
		echo "scale/$m status=failed" >>"$RAW"
		return 1
	fi
	if ! lg fanout -brokers "$EAST" -prefix "$SCALE_PREFIX" -topics "$SCALE_TOPICS" -partitions "$SCALE_PARTITIONS" \
		-records "$SCALE_RECORDS" >"$WORK/scale-fanout.out" 2> >(tee "$WORK/scale-fanout.log" >&2); then
		note "scale: loadgen fanout failed: $(tail -n1 "$WORK/scale-fanout.log" | cut -c1-200)"
		echo "scale/$m status=failed" >>"$RAW"
		return 1
	fi
	SCALE_CREATED=1
	start_mirror "$m" "$SCALE_PREFIX-.*" scale || rc=$?
	if [[ $rc -ne 0 ]]; then
		echo "scale/$m status=failed" >>"$RAW"
		return 1
	fi
	out="$WORK/scale-$m.wait"
	if ! lg fanout-wait -src-brokers "$EAST" -brokers "$WEST" -prefix "$SCALE_PREFIX" -t0 "$MIRROR_T0" \
		-group "$MIRROR_NAME-g" -timeout 15m >"$out" 2> >(tee "$out.log" >&2); then
		note "scale/$m: loadgen fanout-wait failed: $(tail -n1 "$out.log" | cut -c1-200)"
		echo "scale/$m status=failed $(usage_now)" >>"$RAW"
		stop_pid "$MIRROR_PID" "scale/$m"
		return 1
	fi
	# status and mirror lag against the running mirror, three times each;
	# lag until it reads zero (the copy is complete by then).
	for i in 1 2 3 4 5 6 7 8 9 10; do
		if timed status_s "$DRCTL" -c "$WORK/scale-$m.yaml" -o json status; then
			status_max="$(awk "BEGIN { print ($status_s > $status_max) ? $status_s : $status_max }")"
		else
			note "scale/$m: drctl status failed: $(tail -n2 "$WORK/timed.out" | tr '\n' ' ' | cut -c1-200)"
		fi
		if timed lag_s "$DRCTL" -c "$WORK/scale-$m.yaml" -o json mirror lag; then
			lag_max="$(awk "BEGIN { print ($lag_s > $lag_max) ? $lag_s : $lag_max }")"
			lag_total="$(sed -n 's/.*"total_records": *\([0-9]*\).*/\1/p' "$WORK/timed.out" | head -n1)"
		else
			note "scale/$m: drctl mirror lag failed: $(tail -n2 "$WORK/timed.out" | tr '\n' ' ' | cut -c1-200)"
		fi
		[[ $i -ge 3 && "$lag_total" == 0 ]] && break
		sleep 1
	done
	# The idle cost: the mirror's and the brokers' CPU over SCALE_IDLE
	# seconds with every partition copied and no new record.
	local c0 b0 idle_cpu idle_brokers
	c0="$(cpu_of "$MIRROR_PID")" b0="$(brokers_cpu)"
	sleep "$SCALE_IDLE"
	idle_cpu="$(calc "$(cpu_of "$MIRROR_PID") - $c0")" idle_brokers="$(calc "$(brokers_cpu) - $b0")"
	log "scale/$m: idle for ${SCALE_IDLE}s: mirror CPU ${idle_cpu}s, brokers' CPU ${idle_brokers}s"
	usage="$(usage_now)"
	line="$(grep '^RESULT' "$out")"
	log "scale/$m: ${line#RESULT } status ${status_max}s, mirror lag ${lag_max}s (total lag ${lag_total:-?}); $usage"
	stop_pid "$MIRROR_PID" "scale/$m"
	RUNNING_PID=""
	mv "$MIRROR_LOG" "$MIRROR_LOG.first"
	# A restart, the usual case (the target topics exist): more records in
	# every partition while the mirror is down, then the time until every
	# partition copies again.
	local restart=""
	if lg fanout-wait -src-brokers "$EAST" -brokers "$WEST" -prefix "$SCALE_PREFIX" -save-baseline "$WORK/scale.baseline" 2>>"$out.log" &&
		lg fanout -brokers "$EAST" -prefix "$SCALE_PREFIX" -topics "$SCALE_TOPICS" -partitions "$SCALE_PARTITIONS" \
			-records "$SCALE_RECORDS" >>"$WORK/scale-fanout.out" 2>>"$WORK/scale-fanout.log" &&
		start_mirror "$m" "$SCALE_PREFIX-.*" scale &&
		lg fanout-wait -src-brokers "$EAST" -brokers "$WEST" -prefix "$SCALE_PREFIX" -t0 "$MIRROR_T0" \
			-baseline "$WORK/scale.baseline" -timeout 10m >"$out.restart" 2> >(tee -a "$out.log" >&2); then
		restart="$(rget started_all_s "$(grep '^RESULT' "$out.restart")")"
		log "scale/$m: after a restart every partition copies again after ${restart}s"
	else
		note "scale/$m: the restart measurement failed (see $out.log)"
	fi
	stop_pid "$MIRROR_PID" "scale/$m"
	RUNNING_PID=""
	echo "scale/$m status=ok ${line#RESULT } restart_started_all_s=${restart:-failed} status_s=$status_max lag_s=$lag_max lag_total=${lag_total:-?} idle_cpu_s=$idle_cpu idle_brokers_cpu_s=$idle_brokers $usage" >>"$RAW"
	scale_cleanup
}

# scale_cleanup: delete the scale scenario's topics on both clusters.
scale_cleanup() {
	local list
	[[ -n "${SCALE_CREATED:-}" && "$KEEP" != 1 ]] || return 0
	for b in "$WEST" "$EAST"; do
		list="$(lg topics -brokers "$b" -prefix "$SCALE_PREFIX-" | paste -sd, -)"
		[[ -z "$list" ]] || lg delete -brokers "$b" -topic "$list" -wait 5m >/dev/null || true
	done
	SCALE_CREATED=""
}

run_latency_mirror() { # run_latency_mirror MIRROR
	local m=$1 rc=0 out line usage topic="bench-$RUN_ID-lat-$1"
	EAST_TOPICS+=("$topic")
	lg create -brokers "$EAST" -topic "$topic" -partitions 12 >/dev/null
	start_mirror "$m" "$topic" latency || rc=$?
	if [[ $rc -eq 3 ]]; then
		echo "latency/$m status=unavailable" >>"$RAW"
		return 0
	elif [[ $rc -ne 0 ]]; then
		echo "latency/$m status=failed" >>"$RAW"
		return 1
	fi
	out="$WORK/latency-$m.latency"
	log "latency/$m: $LAT_RATE records/s for $LAT_DURATION after a $LAT_WARMUP warm-up"
	if ! lg latency -src-brokers "$EAST" -brokers "$WEST" -src-topic "$topic" -rate "$LAT_RATE" \
		-duration "$LAT_DURATION" -warmup "$LAT_WARMUP" -size "$SIZE" -timeline "$out.timeline" >"$out" 2> >(tee "$out.log" >&2); then
		note "latency/$m: loadgen latency failed: $(tail -n1 "$out.log" | cut -c1-200)"
		echo "latency/$m status=failed" >>"$RAW"
		finish_mirror "$m" "$topic" latency
		return 1
	fi
	usage="$(usage_now)"
	line="$(grep '^RESULT' "$out")"
	echo "latency/$m status=ok ${line#RESULT } $usage" >>"$RAW"
	finish_mirror "$m" "$topic" latency
	[[ "$KEEP" == 1 ]] || delete_topics "$EAST" "$topic" || true
}

# --- verify: drctl verify against the mirror's copy rate ------------------------------

# json_summary FILE KEY: the number KEY of the "summary" object of a drctl
# verify JSON report (the last object of the file).
json_summary() {
	sed -n '/"summary": {/,/}/p' "$1" | sed -n "s/.*\"$2\": \([0-9-]*\).*/\1/p" | head -n1
}

# time_verify YAML N: runs drctl verify on the copy (N > 1: --sample N) and
# appends its verify/sample-N line.
time_verify() {
	local yaml=$1 n=$2 name out t0 t1 pid rc=0 rss=0 cpu=0 r c status args=()
	name="verify/sample-$n"
	[[ $n == 1 ]] && name="verify/full"
	out="$WORK/${name//\//-}"
	args=(-c "$yaml" -o json verify --timeout 1h)
	((n > 1)) && args+=(--sample "$n")
	log "$name: drctl ${args[*]}"
	brokers_mark
	t0="$(now_ms)"
	"$DRCTL" "${args[@]}" >"$out.json" 2>"$out.log" </dev/null &
	pid=$!
	RUNNING_PID=$pid
	# VmHWM and the CPU counters are gone once the process has exited: the
	# last reading counts.
	while alive "$pid"; do
		r="$(peak_rss_mb "$pid")"
		c="$(cpu_of "$pid")"
		[[ -n "$r" && "$r" != 0 ]] && rss=$r
		[[ "$c" != 0 ]] && cpu=$c
		sleep 0.02
	done
	wait "$pid" || rc=$?
	t1="$(now_ms)"
	RUNNING_PID=""
	brokers_since
	status=ok
	case $rc in
	0) ;;
	1) status=differs ;;
	*) status=failed ;;
	esac
	[[ $status == ok ]] || note "$name: drctl verify exited $rc: $(tail -n2 "$out.log" | tr '\n' ' ' | cut -c1-300) (report: $out.json)"
	echo "$name status=$status exit=$rc wall_s=$(calc "($t1 - $t0) / 1000") rss_mb=$rss cpu_s=$cpu brokers_cpu_s=$BROKERS_S east_cpu_s=$EAST_S west_cpu_s=$WEST_S" \
		"partitions=$(json_summary "$out.json" partitions) identical=$(json_summary "$out.json" identical)" \
		"no_difference_seen=$(json_summary "$out.json" no_difference_seen) compared=$(json_summary "$out.json" compared)" \
		"source_read=$(json_summary "$out.json" source_read) target_read=$(json_summary "$out.json" target_read)" >>"$RAW"
	log "$name: $(raw_of "$name")"
}

run_verify() {
	local m=drctl-eos rc=0 out line usage n
	produce_source "$VERIFY_TOPIC" "$VERIFY_RECORDS" "$PARTITIONS" verify
	delete_topics "$WEST" "$VERIFY_TOPIC"
	start_mirror "$m" "$VERIFY_TOPIC" verify || rc=$?
	if [[ $rc -eq 3 ]]; then
		echo "verify/mirror status=unavailable" >>"$RAW"
		return 0
	elif [[ $rc -ne 0 ]]; then
		echo "verify/mirror status=failed" >>"$RAW"
		return 1
	fi
	out="$WORK/verify-$m.count"
	if ! COUNT_TIMEOUT=$((300 + VERIFY_RECORDS / 5000)) wait_copied "verify/$m" "$VERIFY_TOPIC" "$out"; then
		echo "verify/mirror status=failed" >>"$RAW"
		finish_mirror "$m" "$VERIFY_TOPIC" verify
		return 1
	fi
	usage="$(usage_now)"
	stop_pid "$MIRROR_PID" "verify/$m"
	line="$(grep '^RESULT' "$out")"
	echo "verify/mirror status=ok ${line#RESULT } $usage" >>"$RAW"
	log "verify/$m: copied in $(rget done_s "$line") s, steady $(rget steady_records_per_s "$line") records/s"
	for n in 1 $VERIFY_SAMPLES; do
		time_verify "$WORK/verify-$m.yaml" "$n" || true
	done
	finish_mirror "$m" "$VERIFY_TOPIC" verify
	[[ "$KEEP" == 1 ]] || delete_topics "$EAST" "$VERIFY_TOPIC" || true
}

# --- vcost: the mirror's verifier on and off ------------------------------------------

# vcost_yaml SETTING: the mirror.verify lines of a verifier setting: off,
# default (the topology's defaults), full-INTERVAL, sampleN-INTERVAL.
vcost_yaml() {
	case "$1" in
	off) echo "  verify: {mode: off}" ;;
	default) ;;
	full-*) echo "  verify: {mode: full, interval: ${1#full-}}" ;;
	sample[0-9]*-*)
		local n=${1%%-*}
		echo "  verify: {mode: sample, sample: ${n#sample}, interval: ${1#*-}}"
		;;
	*) return 1 ;;
	esac
}

# vcost_label SETTING: the setting in words.
vcost_label() {
	case "$1" in
	default) echo "default (sample every 10000th, a round every 10 s)" ;;
	full-*) echo "full, a round every ${1#full-}" ;;
	sample[0-9]*-*)
		local n=${1%%-*}
		echo "sample every ${n#sample}th, a round every ${1#*-}"
		;;
	*) echo "$1" ;;
	esac
}

# vcost_metric NAME: the sum of a series of the running mirror's /metrics
# (its address is in the mirror's log), or empty when not scraped.
vcost_metric() {
	local addr
	addr="$(sed -n 's/.*serving \/metrics.* addr=\([0-9.:]*\).*/\1/p' "$MIRROR_LOG" | head -n1)"
	[[ -n "$addr" ]] || return 0
	curl -fsS --max-time 2 "http://$addr/metrics" 2>/dev/null | awk -v n="$1" '$1 ~ "^"n"({|$)" { s += $2; seen = 1 } END { if (seen) printf "%.0f", s }'
}

# run_vcost_mirror MODE TAG: drctl-eos copies the vcost topic with the
# verifier set to MODE; the result line is TAG/MODE.
run_vcost_mirror() {
	local mode=$1 tag=$2 m=drctl-eos rc=0 out line usage yaml t1 proven caught_s="" compared differences cpu_caught
	yaml="$(vcost_yaml "$mode")" || {
		note "vcost: unknown verifier setting '$mode' skipped"
		return 0
	}
	delete_topics "$WEST" "$VCOST_TOPIC"
	BENCH_DRCTL_MIRROR_YAML="${BENCH_DRCTL_MIRROR_YAML:-}${yaml:+$'\n'$yaml}" start_mirror "$m" "$VCOST_TOPIC" "$tag-$mode" || rc=$?
	if [[ $rc -eq 3 ]]; then
		echo "$tag/$mode status=unavailable" >>"$RAW"
		return 0
	elif [[ $rc -ne 0 ]]; then
		echo "$tag/$mode status=failed" >>"$RAW"
		return 1
	fi
	out="$WORK/$tag-$mode.count"
	if ! COUNT_TIMEOUT=$((300 + VCOST_RECORDS / 5000)) wait_copied "$tag/$mode" "$VCOST_TOPIC" "$out"; then
		echo "$tag/$mode status=failed" >>"$RAW"
		finish_mirror "$m" "$VCOST_TOPIC" "$tag-$mode"
		return 1
	fi
	usage="$(usage_now)"
	line="$(grep '^RESULT' "$out")"
	if [[ "$mode" != off ]]; then
		# The verifier follows the copy: until its watermarks reach the end.
		t1=$(($(now_ms) + 60000))
		while (($(now_ms) < t1)); do
			proven="$(vcost_metric drctl_verify_proven_offset)"
			if [[ -n "$proven" ]] && ((proven >= VCOST_RECORDS)); then
				caught_s="$(calc "($(now_ms) - $MIRROR_T0) / 1000")"
				break
			fi
			sleep 0.2
		done
		[[ -n "$caught_s" ]] || note "$tag/$mode: the verifier's watermarks did not reach the end within 60 s of the copy (sum of drctl_verify_proven_offset: ${proven:-not scraped})"
	fi
	compared="$(vcost_metric drctl_verify_records_total)"
	differences="$(vcost_metric drctl_verify_differences_total)"
	cpu_caught="$(cpu_of "$MIRROR_PID")"
	stop_pid "$MIRROR_PID" "$tag/$mode"
	echo "$tag/$mode status=ok ${line#RESULT } $usage verifier_caught_s=${caught_s:-n/a} cpu_caught_s=$cpu_caught compared=${compared:-0} differences=${differences:-0}" >>"$RAW"
	log "$tag/$mode: steady $(rget steady_records_per_s "$line") records/s; $usage; verifier caught up after ${caught_s:-n/a} s, CPU then $cpu_caught s, $compared compared"
	finish_mirror "$m" "$VCOST_TOPIC" "$tag-$mode"
}

run_vcost() {
	local round mode order="$VCOST_MODES" tag
	produce_source "$VCOST_TOPIC" "$VCOST_RECORDS" "$PARTITIONS" vcost
	for ((round = 1; round <= VCOST_ROUNDS; round++)); do
		tag="vcost-r$round" # a mirror of round 2 must not resume from round 1's progress
		for mode in $order; do
			log "=== $tag/$mode"
			run_vcost_mirror "$mode" "$tag" || true
		done
		order="$(tr ' ' '\n' <<<"$order" | tac | paste -sd' ' -)"
	done
	[[ "$KEEP" == 1 ]] || delete_topics "$EAST" "$VCOST_TOPIC" || true
}

# --- report ----------------------------------------------------------------------------

raw_of() { grep "^$1 " "$RAW" | tail -n1 || true; }

delivery_of() {
	case "$1" in
	copy) echo "idempotent producer" ;;
	*-alo) echo "at-least-once" ;;
	*-eos) echo "exactly-once" ;;
	esac
}

check_of() {
	local v d
	v="$(rget verify "$1")"
	d="$(rget duplicates "$1")"
	case "$v" in
	ok) [[ -n "$d" && "$d" != 0 ]] && echo "ok, $d duplicates" || echo "ok" ;;
	FAILED) echo "**FAILED** (missing $(rget missing "$1"), duplicates $d, mismatched $(rget mismatches "$1"))" ;;
	*) echo "${v:-}" ;;
	esac
}

# brokers_split LINE: "total (east + west)" of a raw line's brokers' CPU,
# or the total alone for a line from before they were told apart.
brokers_split() {
	local east west
	east="$(rget east_cpu_s "$1")" west="$(rget west_cpu_s "$1")"
	if [[ -n "$east" && -n "$west" ]]; then
		printf '%.2f (%.2f + %.2f)' "$(rget brokers_cpu_s "$1")" "$east" "$west"
	else
		echo "$(rget brokers_cpu_s "$1")"
	fi
}

# machine_us LINE: the CPU of the whole machine (contender, brokers, the
# rest) per record copied, from a raw line.
machine_us() {
	printf "%.1f" "$(calc "($(rget cpu_s "$1") + $(rget brokers_cpu_s "$1") + $(rget other_cpu_s "$1")) * 1e6 / $RECORDS")"
}

report_throughput() {
	local c line status steady copy_rate base ratio_mm2 ratio_copy src
	src="$(raw_of throughput/source)"
	copy_rate="$(rget records_per_s "$(raw_of throughput/copy)")"
	echo "## Throughput"
	echo
	echo "$RECORDS records ($SIZE-byte values, 16-byte keys, 2 headers) over $PARTITIONS partitions, written once" \
		"to east by loadgen produce ($(printf '%.0f' "$(rget records_per_s "$src")") records/s, $(printf '%.1f' "$(rget mb_per_s "$src")") MB/s)," \
		"then copied to west by each contender in turn. MB = 10^6 bytes of key + value."
	echo
	echo "| contender | delivery | done after (s) | start-up (s) | records/s (steady) | MB/s (steady) | records/s (whole run) | vs MM2, same delivery | vs copy limit | peak RSS (MiB) | CPU (s) | CPU µs/record | brokers' CPU (s): east + west | other CPU (s) | machine CPU µs/record | check |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
	for c in $CONTENDERS; do
		line="$(raw_of "throughput/$c")"
		status="$(rget status "$line")"
		if [[ "$status" != ok ]]; then
			echo "| $c | $(delivery_of "$c") | ${status:-not run} | | | | | | | | | | | | | |"
			continue
		fi
		local wall first whole
		if [[ "$c" == copy ]]; then
			wall="$(rget elapsed_s "$line")"
			first=0
			steady="$(rget records_per_s "$line")"
			whole="$(calc "$RECORDS / $(rget wall_s "$line")")"
		else
			wall="$(rget done_s "$line")"
			first="$(rget first_s "$line")"
			steady="$(rget steady_records_per_s "$line")"
			whole="$(rget records_per_s "$line")"
		fi
		ratio_mm2=""
		case "$c" in
		mm2-*) ratio_mm2="1.00" ;;
		drctl-*)
			base="$(rget steady_records_per_s "$(raw_of "throughput/mm2-${c#drctl-}")")"
			[[ -n "$base" ]] && ratio_mm2="$(awk "BEGIN { printf \"%.2f\", $steady / $base }")"
			;;
		esac
		ratio_copy=""
		[[ -n "$copy_rate" ]] && ratio_copy="$(awk "BEGIN { printf \"%.0f%%\", 100 * $steady / $copy_rate }")"
		printf '| %s | %s | %.1f | %.1f | %.0f | %.1f | %.0f | %s | %s | %s | %s | %.1f | %s | %s | %s | %s |\n' \
			"$c" "$(delivery_of "$c")" "$wall" "$first" "$steady" "$(calc "$steady * ($SIZE + 16) / 1e6")" "$whole" \
			"$ratio_mm2" "$ratio_copy" "$(rget rss_mb "$line")" "$(rget cpu_s "$line")" "$(calc "$(rget cpu_s "$line") * 1e6 / $RECORDS")" \
			"$(brokers_split "$line")" "$(rget other_cpu_s "$line")" "$(machine_us "$line")" "$(check_of "$line")"
	done
	echo
	echo "- *done after*: from launching the mirror until every partition's last committed record on west"
	echo "  is the source's last record (polled every 100 ms, read_committed). *start-up*: until the first"
	echo "  record was visible on west. *steady* = records after the first visible ones / (done - start-up)."
	echo "  For *copy*: the producer's time from first send to last acknowledgement; *whole run* includes its"
	echo "  start (data generation, topic creation). Best of its runs, one before each mirror and one after the last"
	echo "  ($(rget copy_rates "$(raw_of throughput/copy)") records/s)."
	echo "- Ratios use the steady rates. *copy limit*: loadgen produce into west (same data, same brokers)."
	echo "- *CPU*: the contender's process from launch (user + system); *µs/record*: that CPU per record copied,"
	echo "  start-up included (less sensitive to other load than the rates). *brokers' CPU*: both Kafka JVMs"
	echo "  meanwhile, east (the source: serving fetches) + west (the target: taking the writes). *other CPU*:"
	echo "  the rest of the machine meanwhile (loadgen count and anything else that ran; a large figure means"
	echo "  the measurement was disturbed). The machine has $(nproc) cores."
	echo "- *machine CPU µs/record*: the contender's, the brokers' and the other CPU together, per record. While"
	echo "  the machine's cores are all busy, a contender's rate can reach the copy limit's share given by the"
	echo "  copy's figure over its own: a mirror at 90% of the copy limit may use at most 1/0.9 of the copy's"
	echo "  machine CPU per record, its brokers' included."
	echo "- *check*: loadgen verify ($VERIFY), untimed, after the mirror stopped: every source record on west"
	echo "  in the same partition and order, with the same key, value, headers and timestamp; duplicates are"
	echo "  errors for exactly-once."
	if ((ROUNDS > 1)); then
		local rates=""
		for c in $CONTENDERS; do
			[[ "$c" == copy ]] && continue
			rates="${rates:+$rates; }$c $(rget round_rates "$(raw_of "throughput/$c")" | sed 's/,/, /g')"
		done
		echo "- *rounds*: $ROUNDS, each in the reverse order of the one before; each mirror's row is its best"
		echo "  round. Steady records/s by round: $rates."
	fi
	echo
}

report_wan() {
	local m place ms line status steady lan zero mm2 ratio_lan ratio_zero ratio_mm2 src places
	src="$(raw_of wan/source)"
	echo "## Across a WAN"
	echo
	echo "$WAN_RECORDS records ($SIZE-byte values) over $PARTITIONS partitions, written once to east" \
		"($(printf '%.0f' "$(rget records_per_s "$src")") records/s); each mirror copies them to west on the LAN, then through" \
		"bench/wanproxy (toxiproxy's latency toxic, in process) adding the one-way latency in both directions" \
		"(jitter ${WAN_JITTER} ms). *near the target*: the proxy is between the mirror and the source (east);" \
		"*near the source*: between the mirror and the target (west). The mirror bootstraps at the proxy and the" \
		"brokers' WAN listener advertises it, so all its connections to that cluster cross it."
	echo
	echo "| mirror | delivery | mirror runs | one-way latency (ms) | done after (s) | start-up (s) | records/s (steady) | MB/s | vs its LAN figure | vs the proxy at 0 ms | vs MM2, same delivery and path | peak RSS (MiB) | CPU (s) | proxy CPU (s) | check |"
	echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
	for m in $WAN_MIRRORS; do
		places="lan"
		for ms in $WAN_LATENCIES; do places+=" target-$ms"; done
		if [[ " $WAN_SOURCE_MIRRORS " == *" $m "* ]]; then
			for ms in $WAN_LATENCIES; do places+=" source-$ms"; done
		fi
		lan="$(rget steady_records_per_s "$(raw_of "wan-lan/$m")")"
		for place in $places; do
			zero=""
			[[ $place == target-* || $place == source-* ]] && zero="$(rget steady_records_per_s "$(raw_of "wan-${place%%-*}-0/$m")")"
			line="$(raw_of "wan-$place/$m")"
			ms="${place#*-}"
			[[ $place == lan ]] && ms=0
			status="$(rget status "$line")"
			local where
			case "$place" in
			lan) where="LAN" ;;
			target-*) where="near the target" ;;
			source-*) where="near the source" ;;
			esac
			if [[ "$status" != ok ]]; then
				echo "| $m | $(delivery_of "$m") | $where | $ms | ${status:-not run} | | | | | | | | | | |"
				continue
			fi
			steady="$(rget steady_records_per_s "$line")"
			ratio_lan=""
			[[ -n "$lan" && $place != lan ]] && ratio_lan="$(awk "BEGIN { printf \"%.0f%%\", 100 * $steady / $lan }")"
			ratio_zero=""
			[[ -n "$zero" && $ms != 0 ]] && ratio_zero="$(awk "BEGIN { printf \"%.0f%%\", 100 * $steady / $zero }")"
			ratio_mm2=""
			case "$m" in
			drctl-*)
				mm2="$(rget steady_records_per_s "$(raw_of "wan-$place/mm2-${m#drctl-}")")"
				[[ -n "$mm2" ]] && ratio_mm2="$(awk "BEGIN { printf \"%.2f\", $steady / $mm2 }")"
				;;
			mm2-*) ratio_mm2="1.00" ;;
			esac
			printf '| %s | %s | %s | %s | %.1f | %.1f | %.0f | %.1f | %s | %s | %s | %s | %s | %s | %s |\n' \
				"$m" "$(delivery_of "$m")" "$where" "$ms" "$(rget done_s "$line")" "$(rget first_s "$line")" "$steady" \
				"$(calc "$steady * ($SIZE + 16) / 1e6")" "$ratio_lan" "$ratio_zero" "$ratio_mm2" "$(rget rss_mb "$line")" "$(rget cpu_s "$line")" \
				"$(rget proxy_cpu_s "$line")" "$(check_of "$line")"
		done
	done
	echo
	echo "- *steady*, *done after*, *start-up* and *check* as in the throughput table; *vs its LAN figure*: the"
	echo "  mirror's steady rate over its own LAN run in this run (the runs of one mirror follow each other)."
	echo "  *vs the proxy at 0 ms*: over its run through the same proxy without added latency (when"
	echo "  BENCH_WAN_LATENCIES has 0), which costs the same CPU: what the latency alone takes."
	echo "- *proxy CPU*: bench/wanproxy's CPU during the run; it competes with the mirror and the brokers for the"
	echo "  $(nproc) cores. The proxy has no TCP window of its own, so only the round trips are simulated, not a"
	echo "  real WAN's bandwidth limit or loss."
	echo
}

report_memory() {
	local m line status
	echo "## Memory with $MEM_PARTITIONS partitions"
	echo
	echo "$MEM_RECORDS records of $SIZE bytes over $MEM_PARTITIONS partitions; each mirror copies them, then keeps"
	echo "running ${MEM_HOLD} s; peak RSS (VmHWM) of the mirror process."
	echo
	echo "| mirror | delivery | done after (s) | peak RSS (MiB) | CPU (s) |"
	echo "|---|---|---:|---:|---:|"
	for m in $MEM_MIRRORS; do
		line="$(raw_of "memory/$m")"
		status="$(rget status "$line")"
		if [[ "$status" != ok ]]; then
			echo "| $m | $(delivery_of "$m") | ${status:-not run} | $(rget rss_mb "$line") | |"
			continue
		fi
		printf '| %s | %s | %.1f | %s | %s |\n' "$m" "$(delivery_of "$m")" "$(rget done_s "$line")" \
			"$(rget rss_mb "$line")" "$(rget cpu_s "$line")"
	done
	echo
}

report_latency() {
	local m line status
	echo "## Replication latency at $LAT_RATE records/s"
	echo
	echo "A fresh 12-partition topic per mirror; loadgen latency writes $LAT_RATE records/s of $SIZE bytes for"
	echo "$LAT_DURATION after a $LAT_WARMUP warm-up and reads west (read_committed, long-polling fetches)."
	echo "Latency: from the record's timestamp (set when loadgen hands it to its producer) until it is"
	echo "readable on west."
	echo
	echo "| mirror | delivery | achieved records/s | p50 (ms) | p90 (ms) | p99 (ms) | p99.9 (ms) | max (ms) | missing | peak RSS (MiB) | CPU (s) |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for m in $LAT_MIRRORS; do
		line="$(raw_of "latency/$m")"
		status="$(rget status "$line")"
		if [[ "$status" != ok ]]; then
			echo "| $m | $(delivery_of "$m") | ${status:-not run} | | | | | | | | |"
			continue
		fi
		printf '| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$m" "$(delivery_of "$m")" \
			"$(rget achieved_rate "$line")" "$(rget p50_ms "$line")" "$(rget p90_ms "$line")" "$(rget p99_ms "$line")" \
			"$(rget p999_ms "$line")" "$(rget max_ms "$line")" "$(rget missing "$line")" "$(rget rss_mb "$line")" "$(rget cpu_s "$line")"
	done
	echo
}

report_verify() {
	local line status steady whole n name wall rate
	line="$(raw_of verify/mirror)"
	status="$(rget status "$line")"
	echo "## drctl verify against the mirror's copy rate"
	echo
	echo "$VERIFY_RECORDS records ($SIZE-byte values) over $PARTITIONS partitions, written once to east; drctl-eos mirrors them,"
	echo "is stopped, and \`drctl verify -o json\` checks the copy: in full, then with --sample N."
	echo
	if [[ "$status" != ok ]]; then
		echo "mirror: ${status:-not run}"
		echo
		return
	fi
	steady="$(rget steady_records_per_s "$line")"
	whole="$(rget records_per_s "$line")"
	printf 'The mirror: done after %.1f s (start-up %.1f s), steady %.0f records/s, %.0f records/s over the whole run; CPU %s s, peak RSS %s MiB.\n' \
		"$(rget done_s "$line")" "$(rget first_s "$line")" "$steady" "$whole" "$(rget cpu_s "$line")" "$(rget rss_mb "$line")"
	echo
	echo "| drctl verify | verdict | wall (s) | records/s of the backlog | vs the mirror's steady rate | vs its whole-run rate | records compared | records read (east + west) | peak RSS (MiB) | CPU (s) | brokers' CPU (s): east + west |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for n in 1 $VERIFY_SAMPLES; do
		name="verify/sample-$n"
		[[ $n == 1 ]] && name="verify/full"
		line="$(raw_of "$name")"
		[[ -n "$line" ]] || continue
		wall="$(rget wall_s "$line")"
		rate="$(calc "$VERIFY_RECORDS / $wall")"
		local verdict
		if [[ $n == 1 ]]; then
			verdict="$(rget identical "$line") of $(rget partitions "$line") identical"
		else
			verdict="$(rget no_difference_seen "$line") of $(rget partitions "$line") no difference seen"
		fi
		[[ "$(rget status "$line")" == ok ]] || verdict="**$(rget status "$line") (exit $(rget exit "$line"))**, $verdict"
		printf '| %s | %s | %.2f | %.0f | %.2f | %.2f | %s | %s + %s | %s | %s | %s |\n' \
			"$([[ $n == 1 ]] && echo full || echo "--sample $n")" "$verdict" "$wall" "$rate" \
			"$(calc "$rate / $steady")" "$(calc "$rate / $whole")" "$(rget compared "$line")" \
			"$(rget source_read "$line")" "$(rget target_read "$line")" "$(rget rss_mb "$line")" "$(rget cpu_s "$line")" "$(brokers_split "$line")"
	done
	echo
	echo "- *wall*: from launching drctl verify until it exited: process start, both sessions, the live roles, the"
	echo "  offset map and every partition. *vs the mirror's steady rate*: the verify rate over the rate the mirror"
	echo "  copied the same records at (after its start-up); the target is at least 0.5."
	echo "- *records read*: the committed records drctl verify decoded on each side (its report's source_read and"
	echo "  target_read); a sampled run fetches the batches that hold its samples."
	echo "- *peak RSS*, *CPU*: the verify process (VmHWM and user + system time, read every 20 ms while it runs)."
	echo
}

report_vcost() {
	local mode round line best best_rate rate rates off_rate="" rows=() fields
	echo "## The mirror's verifier: throughput and CPU, on and off"
	echo
	echo "$VCOST_RECORDS records ($SIZE-byte values) over $PARTITIONS partitions, written once to east; drctl-eos copies them"
	echo "once per verifier setting and round ($VCOST_ROUNDS rounds, the order reversed each round); the best round of each counts."
	echo
	echo "| mirror.verify | steady records/s | vs off | rounds' rates | CPU until copied (s) | µs CPU per record | verifier caught up after (s) | CPU then (s) | records compared | differences |"
	echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"
	for mode in $VCOST_MODES; do
		best="" best_rate=0 rates=""
		for ((round = 1; round <= VCOST_ROUNDS; round++)); do
			line="$(raw_of "vcost-r$round/$mode")"
			if [[ "$(rget status "$line")" != ok ]]; then
				rates="${rates:+$rates, }failed"
				continue
			fi
			rate="$(rget steady_records_per_s "$line")"
			rates="${rates:+$rates, }$(printf '%.0f' "$rate")"
			if awk "BEGIN { exit !($rate > $best_rate) }"; then
				best="$line" best_rate="$rate"
			fi
		done
		[[ "$mode" == off && -n "$best" ]] && off_rate="$best_rate"
		rows+=("$mode|$best|$best_rate|$rates")
	done
	for fields in "${rows[@]}"; do
		IFS='|' read -r mode line rate rates <<<"$fields"
		if [[ -z "$line" ]]; then
			echo "| $mode | failed | | $rates | | | | | | |"
			continue
		fi
		printf '| %s | %.0f | %s | %s | %s | %.2f | %s | %s | %s | %s |\n' \
			"$(vcost_label "$mode")" \
			"$rate" "$([[ -n "$off_rate" ]] && calc "$rate / $off_rate" || echo n/a)" "$rates" "$(rget cpu_s "$line")" \
			"$(calc "$(rget cpu_s "$line") * 1000000 / $VCOST_RECORDS")" "$(rget verifier_caught_s "$line")" "$(rget cpu_caught_s "$line")" \
			"$(rget compared "$line")" "$(rget differences "$line")"
	done
	echo
	echo "- *steady*: the rate the copy ran at after its start-up (loadgen count), the throughput figure of the"
	echo "  throughput scenario. *vs off*: over the rate with mode off; the default must stay at 0.85 or above."
	echo "- *CPU until copied*: the mirror process (copy and verifier) from its launch until west held every record."
	echo "  *verifier caught up*: from the launch until the verifier's watermarks (sum of drctl_verify_proven_offset)"
	echo "  reached the end of every partition, the mirror still running; *CPU then*: the process's CPU at that moment."
	echo "- Other sessions share the machine's 2 cores: rates move by up to 40% between runs of the same setting (see the"
	echo "  rounds' rates). Compare within a row's rounds before reading a difference between rows."
	echo
}

report_scale() {
	local line status
	line="$(raw_of scale/drctl-eos)"
	status="$(rget status "$line")"
	echo "## Scale: $SCALE_TOPICS topics x $SCALE_PARTITIONS partitions"
	echo
	echo "$((SCALE_TOPICS * SCALE_PARTITIONS)) partitions with $SCALE_RECORDS records of 100 bytes each on east; drctl (exactly-once)"
	echo "mirrors them while a consumer group with an offset in the middle of every partition is committed on east."
	echo
	if [[ "$status" != ok ]]; then
		echo "drctl: ${status:-not run}"
		echo
		return
	fi
	echo "| mirror | every partition started (s) | all copied (s) | restart: every partition copying again (s) | group on west after (s) | group offsets checked | drctl status (s, slowest) | drctl mirror lag (s, slowest) | lag at the end | peak RSS (MiB) | CPU (s) | idle: mirror CPU (s) | idle: brokers' CPU (s) |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	printf '| drctl-eos | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$(rget started_all_s "$line")" "$(rget done_s "$line")" \
		"$(rget restart_started_all_s "$line")" \
		"$(rget group_synced_s "$line")" "$(rget group_checked "$line")" "$(rget status_s "$line")" "$(rget lag_s "$line")" \
		"$(rget lag_total "$line")" "$(rget rss_mb "$line")" "$(rget cpu_s "$line")" "$(rget idle_cpu_s "$line")" "$(rget idle_brokers_cpu_s "$line")"
	echo
	echo "- *started*: from launching the mirror until every partition has committed records on west (the mirror"
	echo "  creates the $SCALE_TOPICS topics on west first). *restart*: the mirror stopped, $SCALE_RECORDS more records written"
	echo "  into every partition, the mirror started again: until every west partition has grown."
	echo "  *all copied*: until every west partition holds as many committed offsets as its source has records."
	echo "  *group*: after the copy, until west holds the group's offsets for every partition; every 10th is checked:"
	echo "  the record at the west offset is the copy of the record at the group's east offset."
	echo "- status and mirror lag ran up to 10 times each against the running mirror; the slowest is shown."
	echo "- *idle*: CPU over $SCALE_IDLE s after that, every partition copied and no new record: the mirror's, and both brokers'."
	echo
}

write_report() {
	local s
	echo "# drctl replication benchmark, $STAMP"
	echo
	echo "Command: \`$BENCH_CMD\` (took $DURATION_MIN min)"
	echo
	echo "Machine: $(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1))," \
		"$(awk '/^MemTotal:/ {printf "%.0f", $2 / 1048576}' /proc/meminfo) GiB, Linux $(uname -r);" \
		"Kafka $DRCTL_E2E_KAFKA_VERSION (e2e/kafka.sh: two single-node KRaft clusters on loopback, SASL PLAIN, 1 GiB heap each);" \
		"$(java -version 2>&1 | head -n1); $(go version | cut -d' ' -f3); drctl at $HEAD_DESC."
	echo "The brokers' log directories: ${BROKERS_DATA:-unknown}."
	echo "MirrorMaker 2: the dedicated driver, tasks.max=${BENCH_MM2_TASKS:-2}, heap ${BENCH_MM2_HEAP:-2g}, tuning ${BENCH_MM2_TUNING:-tuned}" \
		"(bench/mm2.sh; the generated properties are in the work directory)${BENCH_MM2_EXTRA:+, extra properties: \`$(tr '\n' ' ' <<<"$BENCH_MM2_EXTRA")\`}."
	echo "Load average (1 min) at the start: $LOAD_START; at the end: $LOAD_END."
	echo
	for s in $SCENARIOS; do
		case "$s" in
		throughput) report_throughput ;;
		memory) report_memory ;;
		latency) report_latency ;;
		scale) report_scale ;;
		wan) report_wan ;;
		verify) report_verify ;;
		vcost) report_vcost ;;
		esac
	done
	if [[ -s "$NOTES" ]]; then
		echo "## Notes"
		echo
		cat "$NOTES"
		echo
	fi
	echo "Work directory (logs, configs, raw results): \`$WORK\`"
}

# --- main ------------------------------------------------------------------------------

# save_settings: what `run.sh report` needs to print this run's report again.
save_settings() {
	local v
	for v in RUN_ID STAMP SCENARIOS RECORDS SIZE PARTITIONS CONTENDERS VERIFY MEM_PARTITIONS MEM_RECORDS \
		ROUNDS MEM_HOLD MEM_MIRRORS LAT_RATE LAT_DURATION LAT_WARMUP LAT_MIRRORS SCALE_TOPICS SCALE_PARTITIONS SCALE_RECORDS \
		WAN_RECORDS WAN_MIRRORS WAN_LATENCIES WAN_JITTER WAN_SOURCE_MIRRORS VERIFY_RECORDS VERIFY_SAMPLES \
		VCOST_RECORDS VCOST_MODES VCOST_ROUNDS \
		BENCH_CMD LOAD_START LOAD_END \
		DURATION_MIN BENCH_MM2_TASKS BENCH_MM2_HEAP BENCH_MM2_TUNING BENCH_MM2_EXTRA BENCH_COPY_RUNS \
		DRCTL_E2E_KAFKA_VERSION HEAD_DESC; do
		[[ -n "${!v+set}" ]] && declare -p "$v"
	done >"$WORK/settings.env"
}

main() {
	local s m
	BENCH_CMD="$({ env | grep -E '^BENCH_[A-Z0-9_]+=' | grep -vE '^BENCH_(WORK|RESULTS|DRCTL_PASSWORD)=' || true; } | sort | tr '\n' ' ')bench/run.sh"
	log "run $RUN_ID: scenarios $SCENARIOS; work directory $WORK"
	LOAD_START="$(cut -d' ' -f1 /proc/loadavg)"
	HEAD_DESC="$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$REPO" diff --quiet HEAD -- . ':!bench' 2>/dev/null || echo ' with uncommitted changes')"
	if awk "BEGIN { exit !($LOAD_START > 1.0) }"; then
		note "the machine was busy when the run started (load average $LOAD_START): figures may be low"
	fi
	"$KAFKA_SH" fetch
	"$KAFKA_SH" start all
	EAST_PID="$(broker_pid east)"
	WEST_PID="$(broker_pid west)"
	[[ -n "$EAST_PID" && -n "$WEST_PID" ]] || die "the e2e clusters are not running"
	BROKERS_DATA="$(brokers_data)"

	log "building loadgen and (unless BENCH_DRCTL is set) drctl"
	(cd "$REPO" && go build -o "$LOADGEN" ./bench/loadgen)
	if [[ -z "${BENCH_DRCTL:-}" ]]; then
		(cd "$REPO" && go build -o "$DRCTL" ./cmd/drctl) || note "drctl did not build; its runs are skipped"
	fi
	trap cleanup EXIT INT TERM
	snapshot_mm2_shared

	for s in $SCENARIOS; do
		log "=== scenario $s"
		case "$s" in
		throughput)
			produce_source "$SRC_TOPIC" "$RECORDS" "$PARTITIONS" throughput
			local with_copy="" round order tag
			[[ " $CONTENDERS " == *" copy "* ]] && with_copy=1
			order="$CONTENDERS"
			for ((round = 1; round <= ROUNDS; round++)); do
				# Round 1 writes throughput/M, later rounds throughput-rN/M
				# (and name their mirrors so: a drctl mirror of round 2
				# must not resume from round 1's progress).
				tag=throughput
				((round > 1)) && tag="throughput-r$round"
				for m in $order; do
					case "$m" in
					copy) ;;
					mm2-alo | mm2-eos | drctl-alo | drctl-eos)
						[[ -z "$with_copy" ]] || copy_round || true
						log "=== $tag/$m"
						run_throughput_mirror "$m" "$tag" || true
						;;
					*) ((round > 1)) || note "unknown contender '$m' skipped" ;;
					esac
				done
				order="$(tr ' ' '\n' <<<"$order" | tac | paste -sd' ' -)"
			done
			if ((ROUNDS > 1)); then
				best_rounds
			fi
			if [[ -n "$with_copy" ]]; then
				copy_round || true
				finish_copy || true
			fi
			;;
		memory)
			produce_source "$MEM_TOPIC" "$MEM_RECORDS" "$MEM_PARTITIONS" memory
			for m in $MEM_MIRRORS; do
				log "=== memory/$m"
				run_memory_mirror "$m" || true
			done
			;;
		latency)
			for m in $LAT_MIRRORS; do
				log "=== latency/$m"
				run_latency_mirror "$m" || true
			done
			;;
		scale) run_scale || true ;;
		wan) run_wan || true ;;
		verify) run_verify || true ;;
		vcost) run_vcost || true ;;
		*) note "unknown scenario '$s' skipped" ;;
		esac
	done

	DURATION_MIN=$(((SECONDS + 30) / 60))
	LOAD_END="$(cut -d' ' -f1 /proc/loadavg)"
	save_settings
	# Runs that start within the same minute each keep their report.
	local report="$RESULTS_DIR/$STAMP.md" n=2
	while [[ -e "$report" ]]; do
		report="$RESULTS_DIR/$STAMP-$n.md"
		n=$((n + 1))
	done
	write_report >"$report"
	echo
	cat "$report"
	log "report: $report"
}

if [[ -n "$REPORT_ONLY" ]]; then
	write_report
else
	main "$@"
fi
