#!/usr/bin/env bash
# e2e/kafka.sh - two single-node Apache Kafka clusters (KRaft, broker and controller
# in one JVM) on loopback, for drctl's end-to-end tests.
#
#   kafka.sh fetch                      resolve the Kafka jars from Maven Central (cached)
#   kafka.sh start  [east|west|all]     format (first time only) and start, wait until ready
#   kafka.sh stop   [east|west|all]     SIGTERM, SIGKILL after $DRCTL_E2E_STOP_TIMEOUT s
#   kafka.sh kill   [east|west|all]     SIGKILL at once (a crash; data is kept)
#   kafka.sh restart [east|west|all]    stop, then start
#   kafka.sh pause  east|west           SIGSTOP the broker (hung: connections stay open, nothing answers)
#   kafka.sh resume east|west           SIGCONT a paused broker
#   kafka.sh status [east|west|all]     running or stopped, pid, cluster id
#   kafka.sh clean  [east|west|all]     delete a stopped cluster's data (next start is fresh)
#   kafka.sh logs   east|west [N]       the last N lines of the broker log (no config dumps)
#   kafka.sh env                        export lines for the e2e tests (eval "$(kafka.sh env)")
#   kafka.sh classpath                  the java class path of the fetched jars
#
# Layout (fixed ports, loopback only; P is the cluster's client port):
#   east  client SASL_PLAINTEXT://127.0.0.1:39092  controller PLAINTEXT 127.0.0.1:39093
#   west  client SASL_PLAINTEXT://127.0.0.1:49092  controller PLAINTEXT 127.0.0.1:49093
#   and on each, P+3 SASL_SSL (TLS + SCRAM-SHA-512), P+5 SSL with client certificates
#   required (mTLS), P+7 SSL whose broker certificate has expired (for error tests).
# With DRCTL_E2E_WAN=1 (off by default; the benchmark's wan scenario sets it) each
# broker also has a WAN listener: SASL_PLAINTEXT (PLAIN, same users) bound on P+9
# but advertised as 127.0.0.1:P+11, where a proxy (bench/wanproxy) is to listen and
# forward to P+9. A client bootstrapping at P+11 then gets P+11 back in metadata
# and stays behind the proxy for every connection. `kafka.sh env` exports
# DRCTL_E2E_EAST_WAN / DRCTL_E2E_WEST_WAN (P+11) and *_WAN_UPSTREAM (P+9) then.
# Users (SASL PLAIN and SCRAM-SHA-512): drctl/drctl-secret (super user), app/app-secret;
# over mTLS the principal is the client certificate's common name (drctl, app).
# The CA and certificates (e2e/tlscerts, written once) are in $DRCTL_E2E_HOME/tls.
#
# Everything lives under ${DRCTL_E2E_HOME:-$HOME/.cache/drctl-e2e}:
#   kafka-<version>/libs/   the jars (shared by every cluster and by MirrorMaker 2)
#   run/<name>/             server.properties, data/, broker.log, console.log, kafka.pid
# except the log directories when DRCTL_E2E_DATA_ROOT is set: then <root>/<name>/ holds
# each cluster's data instead of run/<name>/data (for example /dev/shm/drctl-e2e, to keep
# the brokers' logs in memory: on a virtual disk whose first write to a page of a fresh
# file costs milliseconds, a broker creating or first writing thousands of partitions is
# bound by it; bench/results/diary.md, "the brokers' disk"). A cluster whose data is elsewhere is
# formatted afresh there (a new cluster id); clean removes both places.
set -euo pipefail

# Kafka 4.1.1: the 4.x broker needs Java 17+, which is what the machine has.
KAFKA_VERSION="${DRCTL_E2E_KAFKA_VERSION:-4.1.1}"

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SCRIPT="$SCRIPT_DIR/$(basename "${BASH_SOURCE[0]}")"
POM="$SCRIPT_DIR/kafka/pom.xml"
E2E_HOME="${DRCTL_E2E_HOME:-$HOME/.cache/drctl-e2e}"
KAFKA_HOME="$E2E_HOME/kafka-$KAFKA_VERSION"
LIBS="$KAFKA_HOME/libs"
RUN_ROOT="$E2E_HOME/run"
TLS_DIR="$E2E_HOME/tls"
HEAP="${DRCTL_E2E_HEAP:-1g}"
[[ -z "${DRCTL_E2E_DATA_ROOT:-}" || "$DRCTL_E2E_DATA_ROOT" == /?* ]] ||
	{ echo "kafka.sh: DRCTL_E2E_DATA_ROOT=$DRCTL_E2E_DATA_ROOT: give an absolute directory, e.g. /dev/shm/drctl-e2e" >&2 && exit 2; }
START_TIMEOUT="${DRCTL_E2E_START_TIMEOUT:-90}"
STOP_TIMEOUT="${DRCTL_E2E_STOP_TIMEOUT:-30}"

ADMIN_USER=drctl
ADMIN_PASSWORD=drctl-secret
APP_USER=app
APP_PASSWORD=app-secret
CLUSTERS=(east west)

if [[ -n "${DRCTL_E2E_JAVA:-}" ]]; then
	JAVA="$DRCTL_E2E_JAVA"
elif [[ -n "${JAVA_HOME:-}" && -x "${JAVA_HOME}/bin/java" ]]; then
	JAVA="$JAVA_HOME/bin/java"
else
	JAVA=java
fi

log() { printf '%s\n' "$*" >&2; }
die() { printf 'kafka.sh: %s\n' "$*" >&2; exit 1; }

now_ms() {
	local t=${EPOCHREALTIME/./}
	echo $((t / 1000))
}

elapsed() { # elapsed START_MS -> "1.234s"
	local ms=$(($(now_ms) - $1))
	printf '%d.%03ds' $((ms / 1000)) $((ms % 1000))
}

client_port() {
	case "$1" in
	east) echo "${DRCTL_E2E_EAST_PORT:-39092}" ;;
	west) echo "${DRCTL_E2E_WEST_PORT:-49092}" ;;
	*) die "unknown cluster '$1' (want east, west or all)" ;;
	esac
}

controller_port() { echo $(($(client_port "$1") + 1)); }
# The TLS listeners take odd ports: Linux hands out even ephemeral ports to
# outgoing connections first, and on a busy machine one took P+2 before the broker.
tls_port() { echo $(($(client_port "$1") + 3)); }         # SASL_SSL
mtls_port() { echo $(($(client_port "$1") + 5)); }        # SSL, client certificate required
expired_tls_port() { echo $(($(client_port "$1") + 7)); } # SSL, expired broker certificate
wan_port() { echo $(($(client_port "$1") + 9)); }          # WAN listener, bound (DRCTL_E2E_WAN=1)
wan_proxy_port() { echo $(($(client_port "$1") + 11)); }   # WAN listener, advertised: the proxy

# wan_enabled: DRCTL_E2E_WAN asks for the WAN listener (on the next start).
wan_enabled() {
	case "${DRCTL_E2E_WAN:-0}" in
	1) return 0 ;;
	0 | "") return 1 ;;
	*) die "DRCTL_E2E_WAN=${DRCTL_E2E_WAN}: want 1 (add the WAN listener) or 0" ;;
	esac
}

# wan_running NAME: NAME's running broker was started with the WAN listener.
wan_running() {
	[[ -n "$(pid_of "$1")" ]] && grep -c '^listeners=.*,WAN://' "$(run_dir "$1")/server.properties" >/dev/null 2>&1
}

# targets ARG: the cluster names that ARG (east, west, all, or empty = all) stands for.
targets() {
	case "${1:-all}" in
	all) echo "${CLUSTERS[@]}" ;;
	east | west) echo "$1" ;;
	*) die "unknown cluster '$1' (want east, west or all)" ;;
	esac
}

run_dir() { echo "$RUN_ROOT/$1"; }
# data_dir NAME: NAME's log directory (see DRCTL_E2E_DATA_ROOT above).
data_dir() {
	if [[ -n "${DRCTL_E2E_DATA_ROOT:-}" ]]; then
		echo "$DRCTL_E2E_DATA_ROOT/$1"
	else
		echo "$RUN_ROOT/$1/data"
	fi
}
# running_dir NAME: the log directory NAME's broker was started with (its
# server.properties); running_data NAME: that and its file system type
# (tmpfs, ext2/ext3, ...): PATH:TYPE.
running_dir() { sed -n 's/^log.dirs=//p' "$(run_dir "$1")/server.properties" 2>/dev/null; }
running_data() {
	local d
	d="$(running_dir "$1")"
	echo "$d:$(stat -f -c %T "$d" 2>/dev/null || echo unknown)"
}
pid_file() { echo "$RUN_ROOT/$1/kafka.pid"; }

# pid_of NAME: the pid of NAME's broker if it is running, else nothing.
# The pid must belong to a live java process started with this cluster's
# server.properties (a stale pid file, a reused pid or a zombie does not count).
pid_of() {
	local f pid
	f="$(pid_file "$1")"
	[[ -f "$f" ]] || return 0
	pid="$(<"$f")"
	[[ "$pid" =~ ^[0-9]+$ ]] || return 0
	[[ -r "/proc/$pid/cmdline" ]] || return 0
	# grep -c, not -q: under pipefail an early-exiting grep -q can fail the pipeline.
	if tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -cxF -- "$(run_dir "$1")/server.properties" >/dev/null; then
		echo "$pid"
	fi
}

port_open() { # port_open PORT: is something listening on 127.0.0.1:PORT?
	timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

java_major() {
	local v
	v="$("$JAVA" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9]*\)\(\.[0-9]*\)*.*".*/\1/p' | head -n1)"
	[[ "$v" == 1 ]] && v=8
	echo "${v:-0}"
}

need_java() {
	command -v "$JAVA" >/dev/null 2>&1 || die "java not found (install OpenJDK 17+ or set JAVA_HOME)"
	local m
	m="$(java_major)"
	((m >= 17)) || die "Kafka $KAFKA_VERSION needs Java 17 or newer; $JAVA is Java $m"
}

pom_sum() { sha256sum "$POM" | cut -d' ' -f1; }

# libs_complete: the cache holds every jar of the last successful fetch of this pom.
libs_complete() {
	local m="$LIBS/.complete" jar
	[[ -f "$m" ]] || return 1
	[[ "$(sed -n 's/^version=//p' "$m")" == "$KAFKA_VERSION" ]] || return 1
	[[ "$(sed -n 's/^pom=//p' "$m")" == "$(pom_sum)" ]] || return 1
	while IFS= read -r jar; do
		[[ -s "$LIBS/$jar" ]] || return 1
	done < <(sed -n 's/^jar=//p' "$m")
	return 0
}

cmd_fetch() {
	need_java
	if libs_complete; then
		log "kafka $KAFKA_VERSION: jars already in $LIBS"
		return 0
	fi
	command -v mvn >/dev/null 2>&1 || die "mvn not found (apt-get install maven)"
	local t0 tmp jar
	t0="$(now_ms)"
	mkdir -p "$KAFKA_HOME"
	tmp="$KAFKA_HOME/libs.tmp.$$"
	rm -rf "$KAFKA_HOME"/libs.tmp.*
	log "kafka $KAFKA_VERSION: resolving jars from Maven Central into $LIBS"
	# (Debian's Maven 3.8 prints colour resets even in batch mode; sed strips them.)
	if ! mvn -B -q -ntp -Dstyle.color=never -f "$POM" \
		-Dkafka.version="$KAFKA_VERSION" \
		dependency:copy-dependencies \
		-DincludeScope=runtime \
		-DoutputDirectory="$tmp" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >&2; then
		rm -rf "$tmp"
		die "mvn dependency:copy-dependencies failed for Kafka $KAFKA_VERSION"
	fi
	for jar in "kafka_2.13-$KAFKA_VERSION.jar" "kafka-clients-$KAFKA_VERSION.jar" \
		"kafka-server-$KAFKA_VERSION.jar" "kafka-tools-$KAFKA_VERSION.jar" \
		"connect-mirror-$KAFKA_VERSION.jar" "connect-runtime-$KAFKA_VERSION.jar"; do
		[[ -s "$tmp/$jar" ]] || {
			rm -rf "$tmp"
			die "fetch incomplete: $jar is missing"
		}
	done
	for jar in log4j-core log4j-slf4j-impl; do
		compgen -G "$tmp/$jar-*.jar" >/dev/null || {
			rm -rf "$tmp"
			die "fetch incomplete: no $jar jar"
		}
	done
	{
		echo "version=$KAFKA_VERSION"
		echo "pom=$(pom_sum)"
		(cd "$tmp" && ls -1 -- *.jar) | sed 's/^/jar=/'
	} >"$tmp/.complete"
	rm -rf "$LIBS"
	mv "$tmp" "$LIBS"
	log "kafka $KAFKA_VERSION: $(sed -n '/^jar=/p' "$LIBS/.complete" | wc -l) jars ($(du -sh "$LIBS" | cut -f1)) in $(elapsed "$t0")"
}

need_libs() {
	need_java
	libs_complete || die "Kafka $KAFKA_VERSION jars are not fetched yet: run '$SCRIPT fetch' first"
}

# new_cluster_id: a random Kafka Uuid (16 random bytes, URL-safe base64, no padding),
# never starting with '-', as the storage tool's random-uuid would print.
new_cluster_id() {
	local id
	while :; do
		id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
		[[ ${#id} == 22 && "$id" != -* && "$id" != AAAAAAAAAAAAAAAAAAAAA* ]] && break
	done
	echo "$id"
}

# tls_certs: the CA and certificates of the TLS listeners, written once per
# $DRCTL_E2E_HOME by e2e/tlscerts (Go's crypto/x509; needs the go tool).
tls_certs() {
	[[ "$(cat "$TLS_DIR/.complete" 2>/dev/null)" == 2 ]] && return 0
	command -v go >/dev/null 2>&1 || die "go not found: the TLS listeners' certificates are written by 'go run ./e2e/tlscerts'"
	log "writing the TLS listeners' CA and certificates into $TLS_DIR"
	(cd "$SCRIPT_DIR/.." && go run ./e2e/tlscerts -dir "$TLS_DIR") || die "e2e/tlscerts failed"
}

write_configs() {
	local name=$1 dir port cport tport mport xport wan_l="" wan_a="" wan_map="" wan_conf=""
	dir="$(run_dir "$name")"
	port="$(client_port "$name")"
	cport="$(controller_port "$name")"
	tport="$(tls_port "$name")"
	mport="$(mtls_port "$name")"
	xport="$(expired_tls_port "$name")"
	if wan_enabled; then
		wan_l=",WAN://127.0.0.1:$(wan_port "$name")"
		wan_a=",WAN://127.0.0.1:$(wan_proxy_port "$name")"
		wan_map=",WAN:SASL_PLAINTEXT"
		wan_conf="
# WAN (DRCTL_E2E_WAN=1): bound on P+9, advertised as the proxy on P+11 (bench/wanproxy).
listener.name.wan.sasl.enabled.mechanisms=PLAIN
listener.name.wan.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"$ADMIN_USER\" password=\"$ADMIN_PASSWORD\" user_$ADMIN_USER=\"$ADMIN_PASSWORD\" user_$APP_USER=\"$APP_PASSWORD\";"
	fi
	mkdir -p "$dir" "$(data_dir "$name")"
	cat >"$dir/server.properties" <<EOF
# Written by e2e/kafka.sh on every start; edit the script, not this file.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=SASL_PLAINTEXT://127.0.0.1:$port,SASL_SSL://127.0.0.1:$tport,SSL://127.0.0.1:$mport,EXPIRED://127.0.0.1:$xport,CONTROLLER://127.0.0.1:$cport$wan_l
advertised.listeners=SASL_PLAINTEXT://127.0.0.1:$port,SASL_SSL://127.0.0.1:$tport,SSL://127.0.0.1:$mport,EXPIRED://127.0.0.1:$xport$wan_a
listener.security.protocol.map=CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL,EXPIRED:SSL$wan_map
controller.listener.names=CONTROLLER
inter.broker.listener.name=SASL_PLAINTEXT

# TLS (PEM key and trust stores from e2e/tlscerts): SASL_SSL is TLS + SCRAM-SHA-512;
# SSL requires a client certificate signed by the CA, and the principal is its
# common name (CN=app -> User:app); EXPIRED serves a certificate that expired.
ssl.keystore.type=PEM
ssl.keystore.location=$TLS_DIR/broker-keystore.pem
ssl.truststore.type=PEM
ssl.truststore.location=$TLS_DIR/ca.pem
ssl.principal.mapping.rules=RULE:^CN=([a-zA-Z0-9._-]+)\$/\$1/,DEFAULT
listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.ssl.ssl.client.auth=required
listener.name.expired.ssl.client.auth=required
listener.name.expired.ssl.keystore.location=$TLS_DIR/broker-expired-keystore.pem

# SASL on the client listener: PLAIN (users in JAAS) and SCRAM-SHA-512 (credentials
# added when the storage was formatted). The broker talks to itself as drctl (PLAIN).
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="$ADMIN_USER" password="$ADMIN_PASSWORD" user_$ADMIN_USER="$ADMIN_PASSWORD" user_$APP_USER="$APP_PASSWORD";
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;$wan_conf

# ACLs: drctl (and ANONYMOUS, the PLAINTEXT controller listener) bypass them; everyone
# else may do anything until an ACL names the resource (drctl fences with DENY WRITE).
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:$ADMIN_USER;User:ANONYMOUS
allow.everyone.if.no.acl.found=true

# One node.
log.dirs=$(data_dir "$name")
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=10
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
delete.topic.enable=true

# After a crash (kill), a restarted node may register again only once its old
# session has expired: 4 s instead of 9 s makes crash-restarts quick.
broker.session.timeout.ms=4000
broker.heartbeat.interval.ms=500

# Modest sizes and threads: two brokers and the tests share 2 cores.
num.network.threads=2
num.io.threads=4
log.segment.bytes=67108864
log.index.size.max.bytes=2097152
log.cleaner.dedupe.buffer.size=33554432
EOF
	cat >"$dir/log4j2.properties" <<EOF
# Written by e2e/kafka.sh: the broker logs to broker.log (appended across restarts).
status = warn
name = drctl-e2e-broker
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $dir/broker.log
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d{ISO8601}] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.statechange.name = state.change.logger
logger.statechange.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = INFO
EOF
	cat >"$dir/log4j2-tools.properties" <<EOF
status = warn
name = drctl-e2e-tools
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = STDERR
EOF
	# A kcat config for humans and the readiness check: kcat -F run/<name>/kcat.conf -L
	cat >"$dir/kcat.conf" <<EOF
bootstrap.servers=127.0.0.1:$port
security.protocol=SASL_PLAINTEXT
sasl.mechanisms=PLAIN
sasl.username=$ADMIN_USER
sasl.password=$ADMIN_PASSWORD
EOF
}

# format_storage NAME: format data/ with a new cluster id and the SCRAM users, once.
format_storage() {
	local name=$1 dir data id
	dir="$(run_dir "$name")"
	data="$(data_dir "$name")"
	[[ -f "$data/meta.properties" ]] && return 0
	rm -rf "$data"
	mkdir -p "$data"
	id="$(new_cluster_id)"
	log "$name: formatting storage, cluster id $id"
	if ! "$JAVA" -Xmx256m -cp "$LIBS/*" \
		-Dlog4j2.configurationFile="$dir/log4j2-tools.properties" \
		kafka.tools.StorageTool format \
		--cluster-id "$id" \
		--config "$dir/server.properties" \
		--add-scram "SCRAM-SHA-512=[name=$ADMIN_USER,password=$ADMIN_PASSWORD]" \
		--add-scram "SCRAM-SHA-512=[name=$APP_USER,password=$APP_PASSWORD]" \
		>"$dir/format.log" 2>&1; then
		cat "$dir/format.log" >&2
		rm -rf "$data"
		die "$name: formatting storage failed"
	fi
}

# cluster_id NAME [DIR]: the cluster id formatted in DIR (default: NAME's
# data_dir).
cluster_id() {
	sed -n 's/^cluster.id=//p' "${2:-$(data_dir "$1")}/meta.properties" 2>/dev/null || true
}

# log_tail FILE N: the last N lines of a broker log, without the config dumps
# (tab-indented "key = value" lines) that Kafka writes at every start.
log_tail() {
	grep -avE $'^\t[A-Za-z0-9._-]+ = ' "$1" | tail -n "$2" || true
}

print_tail() { # print_tail NAME: the end of the broker's logs, on stderr
	local dir
	dir="$(run_dir "$1")"
	if [[ -s "$dir/broker.log" ]]; then
		log "----- $1: last 60 lines of $dir/broker.log (config dumps left out) -----"
		log_tail "$dir/broker.log" 60 >&2
	fi
	if [[ -s "$dir/console.log" ]]; then
		log "----- $1: last 20 lines of $dir/console.log -----"
		tail -n 20 "$dir/console.log" >&2
	fi
	log "----- end of $1 logs -----"
}

# ready NAME PORT LOGOFFSET: the broker logged "Kafka Server started" since LOGOFFSET,
# accepts TCP connections, and (where kcat exists) answers a metadata request over SASL.
ready() {
	local name=$1 port=$2 off=$3 dir
	dir="$(run_dir "$name")"
	[[ -f "$dir/broker.log" ]] || return 1
	tail -c +"$((off + 1))" "$dir/broker.log" | grep -cF 'Kafka Server started' >/dev/null || return 1
	port_open "$port" || return 1
	if command -v kcat >/dev/null 2>&1; then
		timeout 15 kcat -F "$dir/kcat.conf" -L -m 5 >/dev/null 2>&1 || return 1
	fi
	return 0
}

# ports_of NAME: every port NAME's broker listens on, space-separated.
ports_of() {
	local ports=("$(client_port "$1")" "$(controller_port "$1")" "$(tls_port "$1")" "$(mtls_port "$1")" "$(expired_tls_port "$1")")
	wan_enabled && ports+=("$(wan_port "$1")")
	echo "${ports[@]}"
}

start_one() {
	local name=$1 dir port cport pid off t0 deadline
	dir="$(run_dir "$name")"
	port="$(client_port "$name")"
	cport="$(controller_port "$name")"
	pid="$(pid_of "$name")"
	if [[ -n "$pid" ]]; then
		log "$name: already running (pid $pid) on 127.0.0.1:$port"
		return 0
	fi
	local ports
	read -ra ports <<<"$(ports_of "$name")"
	for p in "${ports[@]}"; do
		if port_open "$p"; then
			die "$name: port 127.0.0.1:$p is already in use by another process (not this script's $name broker); stop it first"
		fi
	done
	t0="$(now_ms)"
	write_configs "$name"
	format_storage "$name"
	off=0
	[[ -f "$dir/broker.log" ]] && off="$(stat -c %s "$dir/broker.log")"
	{
		echo
		echo "===== $(date -u +%FT%TZ) kafka.sh start $name (Kafka $KAFKA_VERSION) ====="
	} >>"$dir/console.log"
	# setsid: the broker outlives this script and is not in the caller's process group
	# (-w: should setsid have to fork, $! still lives as long as the broker does).
	# The inner shell writes its own pid, then becomes the JVM (exec keeps the pid).
	# shellcheck disable=SC2016 # $$ and $@ are the inner shell's
	setsid -w bash -c 'echo $$ >"$1"; shift; exec "$@"' kafka-start "$(pid_file "$name")" \
		"$JAVA" -Xms"$HEAP" -Xmx"$HEAP" \
		-XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
		-XX:+ExplicitGCInvokesConcurrent -XX:+ExitOnOutOfMemoryError \
		-Djava.awt.headless=true \
		-Ddrctl.e2e.cluster="$name" \
		-Dkafka.logs.dir="$dir" \
		-Dlog4j2.configurationFile="$dir/log4j2.properties" \
		-cp "$LIBS/*" kafka.Kafka "$dir/server.properties" \
		</dev/null >>"$dir/console.log" 2>&1 {LOCK_FD}>&- &
	deadline=$(($(now_ms) + START_TIMEOUT * 1000))
	while :; do
		pid="$(pid_of "$name")"
		if [[ -z "$pid" ]] && ! kill -0 $! 2>/dev/null; then
			print_tail "$name"
			die "$name: the broker exited during startup"
		fi
		if [[ -n "$pid" ]] && ready "$name" "$port" "$off"; then
			break
		fi
		if (($(now_ms) >= deadline)); then
			print_tail "$name"
			[[ -n "$pid" ]] && stop_one "$name" KILL >/dev/null 2>&1
			die "$name: not ready after ${START_TIMEOUT}s (broker stopped)"
		fi
		sleep 0.25
	done
	log "$name: ready on SASL_PLAINTEXT://127.0.0.1:$port, SASL_SSL :$(tls_port "$name"), mTLS :$(mtls_port "$name") (pid $pid, cluster id $(cluster_id "$name")) in $(elapsed "$t0")"
}

# stop_one NAME [TERM|KILL]
stop_one() {
	local name=$1 sig=${2:-TERM} pid t0 deadline
	pid="$(pid_of "$name")"
	if [[ -z "$pid" ]]; then
		rm -f "$(pid_file "$name")"
		log "$name: not running"
		return 0
	fi
	t0="$(now_ms)"
	kill -"$sig" "$pid" 2>/dev/null || true
	if [[ "$sig" == TERM ]]; then
		deadline=$(($(now_ms) + STOP_TIMEOUT * 1000))
		while [[ -n "$(pid_of "$name")" ]] && (($(now_ms) < deadline)); do
			sleep 0.2
		done
		if [[ -n "$(pid_of "$name")" ]]; then
			log "$name: still running after ${STOP_TIMEOUT}s, sending SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	deadline=$(($(now_ms) + 10000))
	while [[ -n "$(pid_of "$name")" ]]; do
		(($(now_ms) < deadline)) || die "$name: pid $pid survived SIGKILL"
		sleep 0.1
	done
	# A killed JVM's cmdline reads empty once its memory is freed, which
	# comes before its sockets close: wait for its listeners too, or a start
	# right after a kill finds its own port still taken (seen in CI).
	local p
	for p in $(ports_of "$name"); do
		while port_open "$p"; do
			(($(now_ms) < deadline)) || die "$name: port 127.0.0.1:$p still accepts connections after pid $pid stopped"
			sleep 0.1
		done
	done
	rm -f "$(pid_file "$name")"
	log "$name: stopped (SIG$sig, pid $pid) in $(elapsed "$t0")"
}

# with_lock NAME CMD...: run CMD holding NAME's lock, so that two kafka.sh runs
# (say, two test packages) never start or stop the same cluster at once.
# The lock's fd is LOCK_FD; start_one closes it for the broker it launches.
with_lock() {
	local name=$1
	shift
	mkdir -p "$RUN_ROOT"
	exec {LOCK_FD}>"$RUN_ROOT/.$name.lock"
	flock -w $((START_TIMEOUT + STOP_TIMEOUT + 60)) "$LOCK_FD" ||
		die "$name: another kafka.sh holds $RUN_ROOT/.$name.lock"
	"$@"
}

# each FUNC NAMES ARG...: run FUNC NAME ARG... for every named cluster in
# parallel, each under its cluster's lock; fail if any failed.
each() {
	local fn=$1 names=$2 n rc=0
	shift 2
	local -a pids=()
	for n in $names; do
		with_lock "$n" "$fn" "$n" "$@" &
		pids+=($!)
	done
	for n in "${pids[@]}"; do
		wait "$n" || rc=1
	done
	return "$rc"
}

cmd_start() {
	need_libs
	tls_certs
	each start_with_retry "$(targets "${1:-all}")"
}

# start_with_retry NAME: start_one, once more if the JVM died during start-up
# (seen once on a loaded machine, with nothing in its logs).
start_with_retry() {
	if (start_one "$1"); then
		return 0
	fi
	log "$1: start failed; trying once more"
	start_one "$1"
}

cmd_stop() { each stop_one "$(targets "${1:-all}")" TERM; }
cmd_kill() { each stop_one "$(targets "${1:-all}")" KILL; }

# signal_one NAME SIG: send SIG (STOP or CONT) to NAME's running broker.
signal_one() {
	local pid
	pid="$(pid_of "$1")"
	[[ -n "$pid" ]] || die "$1 is not running"
	kill -"$2" "$pid"
	log "$1: SIG$2 sent (pid $pid)"
}

cmd_pause() {
	[[ "${1:-}" == east || "${1:-}" == west ]] || die "usage: kafka.sh pause east|west"
	signal_one "$1" STOP
}

cmd_resume() {
	[[ "${1:-}" == east || "${1:-}" == west ]] || die "usage: kafka.sh resume east|west"
	signal_one "$1" CONT
}

cmd_restart() {
	cmd_stop "${1:-all}"
	cmd_start "${1:-all}"
}

cmd_status() {
	local n pid
	for n in $(targets "${1:-all}"); do
		pid="$(pid_of "$n")"
		if [[ -n "$pid" ]]; then
			echo "$n: running pid=$pid bootstrap=127.0.0.1:$(client_port "$n") cluster.id=$(cluster_id "$n" "$(running_dir "$n")")$(wan_running "$n" && echo " wan=127.0.0.1:$(wan_proxy_port "$n")->127.0.0.1:$(wan_port "$n")") data=$(running_data "$n")"
		elif [[ -f "$(data_dir "$n")/meta.properties" ]]; then
			echo "$n: stopped (data kept, cluster.id=$(cluster_id "$n"))"
		else
			echo "$n: stopped (no data)"
		fi
	done
}

clean_one() {
	[[ -z "$(pid_of "$1")" ]] || die "$1 is running: stop it before clean"
	rm -rf "$(run_dir "$1")"
	[[ -z "${DRCTL_E2E_DATA_ROOT:-}" ]] || rm -rf "$(data_dir "$1")"
	log "$1: data removed"
}

cmd_clean() { each clean_one "$(targets "${1:-all}")"; }

cmd_logs() {
	local n=${1:-}
	[[ "$n" == east || "$n" == west ]] || die "usage: kafka.sh logs east|west [LINES]"
	[[ -f "$(run_dir "$n")/broker.log" ]] || die "$n has no broker log yet"
	log_tail "$(run_dir "$n")/broker.log" "${2:-100}"
}

cmd_env() {
	local kv n
	for kv in \
		"DRCTL_E2E_EAST=127.0.0.1:$(client_port east)" \
		"DRCTL_E2E_WEST=127.0.0.1:$(client_port west)" \
		"DRCTL_E2E_EAST_PORT=$(client_port east)" \
		"DRCTL_E2E_WEST_PORT=$(client_port west)" \
		"DRCTL_E2E_EAST_TLS=127.0.0.1:$(tls_port east)" \
		"DRCTL_E2E_WEST_TLS=127.0.0.1:$(tls_port west)" \
		"DRCTL_E2E_EAST_MTLS=127.0.0.1:$(mtls_port east)" \
		"DRCTL_E2E_WEST_MTLS=127.0.0.1:$(mtls_port west)" \
		"DRCTL_E2E_EAST_TLS_EXPIRED=127.0.0.1:$(expired_tls_port east)" \
		"DRCTL_E2E_WEST_TLS_EXPIRED=127.0.0.1:$(expired_tls_port west)" \
		"DRCTL_E2E_TLS_DIR=$TLS_DIR" \
		"DRCTL_E2E_USER=$ADMIN_USER" \
		"DRCTL_E2E_PASSWORD=$ADMIN_PASSWORD" \
		"DRCTL_E2E_APP_USER=$APP_USER" \
		"DRCTL_E2E_APP_PASSWORD=$APP_PASSWORD" \
		"DRCTL_E2E_KAFKA=$SCRIPT" \
		"DRCTL_E2E_KAFKA_VERSION=$KAFKA_VERSION" \
		"DRCTL_E2E_HOME=$E2E_HOME" \
		"DRCTL_E2E_KAFKA_LIBS=$LIBS"; do
		printf 'export %s=%q\n' "${kv%%=*}" "${kv#*=}"
	done
	if wan_enabled; then
		for n in east west; do
			printf 'export DRCTL_E2E_%s_WAN=%q\n' "${n^^}" "127.0.0.1:$(wan_proxy_port "$n")"
			printf 'export DRCTL_E2E_%s_WAN_UPSTREAM=%q\n' "${n^^}" "127.0.0.1:$(wan_port "$n")"
		done
	fi
}

usage() {
	sed -n '2,/^set -euo/p' "$SCRIPT" | sed '$d' | sed 's/^# \{0,1\}//'
}

main() {
	local cmd=${1:-}
	[[ $# -gt 0 ]] && shift
	case "$cmd" in
	fetch) cmd_fetch ;;
	start) cmd_start "$@" ;;
	stop) cmd_stop "$@" ;;
	kill) cmd_kill "$@" ;;
	restart) cmd_restart "$@" ;;
	pause) cmd_pause "$@" ;;
	resume) cmd_resume "$@" ;;
	status) cmd_status "$@" ;;
	clean) cmd_clean "$@" ;;
	logs) cmd_logs "$@" ;;
	env) cmd_env ;;
	classpath) need_libs && echo "$LIBS/*" ;;
	-h | --help | help) usage ;;
	"") usage >&2 && exit 2 ;;
	*) usage >&2 && die "unknown command '$cmd'" ;;
	esac
}

main "$@"
