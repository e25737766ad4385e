#!/usr/bin/env bash
# e2e/readme_tour.sh - the README's sandbox tour, as a newcomer runs it: a
# fresh clone, `go run ./cmd/drctl sandbox` in one tmux window and the
# README's commands, literally, in another. It prints every screen it
# captures and fails when a command fails or the sandbox's window does not
# read cleanly (every line after the instructions a "HH:MM:SS component:"
# line, no warning, no error, no wrong advice) from its first line to after
# the failback.
#
#   e2e/readme_tour.sh [REPO]        REPO: what to clone (default: this repository)
#
# The README's ports (19092, 29092, mirror metrics 17483) must be free; set
# DRCTL_TOUR_PORTS="EAST WEST METRICS" to run the sandbox on others (the
# README's commands still run as written: they read ./drctl.yaml).
set -euo pipefail

repo="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
work="$(mktemp -d /tmp/drctl-readme-tour.XXXXXX)"
session="drctl-tour-$$"
start=$SECONDS

cleanup() {
	tmux send-keys -t "$session:sandbox" C-c 2>/dev/null || true
	for _ in $(seq 1 100); do
		tmux capture-pane -p -t "$session:sandbox" -S - 2>/dev/null | grep -q "stopped after producing" && break
		sleep 0.2
	done
	tmux kill-session -t "$session" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

screen() { tmux capture-pane -p -J -t "$session:$1" -S - | sed -e 's/[[:space:]]*$//'; }

show() {
	echo
	echo "----- screen: $1 ($2) -----"
	screen "$1" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
	echo "----- end of screen: $1 -----"
}

# wait_for WINDOW PATTERN SECONDS: until the window's screen matches.
wait_for() {
	local deadline=$((SECONDS + $3))
	until screen "$1" | grep -qE "$2"; do
		if ((SECONDS > deadline)); then
			show "$1" "timed out waiting for /$2/"
			echo "FAIL: no /$2/ in window $1 within $3s" >&2
			exit 1
		fi
		sleep 0.5
	done
}

# wait_traffic CLUSTER: until the sandbox's latest traffic line says it runs there.
wait_traffic() {
	local deadline=$((SECONDS + 60))
	until screen sandbox | grep -E ' sandbox: traffic (runs|paused|stopped)' | tail -1 | grep -q "traffic runs on $1"; do
		if ((SECONDS > deadline)); then
			show sandbox "timed out waiting for the traffic on $1"
			echo "FAIL: the sandbox's traffic did not move to $1 within 60s" >&2
			exit 1
		fi
		sleep 0.5
	done
}

echo "=== fresh clone of $repo"
git clone -q "$repo" "$work/drctl"
cd "$work/drctl"

sandbox_cmd="go run ./cmd/drctl sandbox"
if [[ -n "${DRCTL_TOUR_PORTS:-}" ]]; then
	read -r e w m <<<"$DRCTL_TOUR_PORTS"
	sandbox_cmd+=" --east-port $e --west-port $w --mirror-listen 127.0.0.1:$m"
fi
# The README's commands for the other terminal, in order, as written, up to
# the failback (the tour's end; the console comes after it).
mapfile -t tour < <(awk '/^```sh$/{code=1; next} /^```$/{code=0} code' README.md |
	sed -e 's/[[:space:]]*#.*$//' | grep -E '^go run \./cmd/drctl ' | grep -v ' sandbox' |
	awk '{print} / failback/{exit}')
((${#tour[@]} >= 5)) || { echo "FAIL: found ${#tour[@]} tour commands in README.md" >&2; exit 1; }

tmux new-session -d -s "$session" -n sandbox -x 200 -y 60 -c "$work/drctl"
tmux set-option -t "$session" history-limit 50000 >/dev/null
tmux new-window -d -t "$session" -n cmd -c "$work/drctl"

echo "=== window sandbox: $sandbox_cmd"
build=$SECONDS
tmux send-keys -t "$session:sandbox" "$sandbox_cmd" Enter
wait_for sandbox "Press Ctrl-C to stop" 900
wait_for sandbox "traffic runs on east" 60
echo "the sandbox was up $((SECONDS - build))s after go run"

n=0
for cmd in "${tour[@]}"; do
	n=$((n + 1))
	echo "=== window cmd: $cmd"
	tmux send-keys -t "$session:cmd" "clear; $cmd; echo \"__TOUR_EXIT_${n}_\$?__\"" Enter
	wait_for cmd "__TOUR_EXIT_${n}_[0-9]+__" 600
	code=$(screen cmd | sed -n "s/.*__TOUR_EXIT_${n}_\([0-9]*\)__.*/\1/p" | tail -1)
	show cmd "$cmd: exit $code"
	if [[ "$code" != 0 ]]; then
		echo "FAIL: $cmd exited $code" >&2
		exit 1
	fi
	case "$cmd" in
	"go run ./cmd/drctl failover "*) wait_traffic west ;;
	"go run ./cmd/drctl failback"*) wait_traffic east ;;
	esac
done

# Let the move's held mirror warnings be summarised, then read the window.
sleep 12
show sandbox "from its first line to after the failback"
problems=$(screen sandbox | awk '/Press Ctrl-C to stop/{on=1; next} on && NF' |
	grep -vE '^[0-9]{2}:[0-9]{2}:[0-9]{2} (sandbox|mirror|drill): ' || true)
bad=$(screen sandbox | grep -nE 'warning:|error|Error|does not exist|the mirror creates|active cluster is ""|circuit breaker|level=|panic' || true)
if [[ -n "$problems$bad" ]]; then
	echo "FAIL: the sandbox's window does not read cleanly:" >&2
	printf '%s\n' "$problems" "$bad" >&2
	exit 1
fi

# The tables an operator reads in an 80-column pane: nothing wraps (tmux
# joins the rows of a wrapped line with -J, so the joined screen has fewer
# lines than the plain one) and an id is never cut.
tmux new-window -d -t "$session" -n narrow -c "$work/drctl"
tmux resize-window -t "$session:narrow" -x 80 -y 60 2>/dev/null || true
n=0
for cmd in "go run ./cmd/drctl status" "go run ./cmd/drctl validate --online" "go run ./cmd/drctl drill history"; do
	n=$((n + 1))
	echo "=== window narrow (80 columns): $cmd"
	tmux send-keys -t "$session:narrow" "clear; $cmd; echo \"__NARROW_${n}_\$?__\"" Enter
	wait_for narrow "__NARROW_${n}_[0-9]+__" 300
	show narrow "$cmd at 80 columns"
	width=$(tmux display-message -p -t "$session:narrow" '#{window_width}')
	joined=$(tmux capture-pane -p -J -t "$session:narrow" -S - | wc -l)
	plain=$(tmux capture-pane -p -t "$session:narrow" -S - | wc -l)
	if [[ "$width" != 80 || "$joined" != "$plain" ]]; then
		echo "FAIL: $cmd wraps in a ${width}-column pane ($plain screen rows hold $joined lines)" >&2
		exit 1
	fi
	if screen narrow | grep -q 'drill-canary-' && ! screen narrow | grep -qE 'drill-canary-[0-9]{8}T[0-9]{6}-[0-9a-f]{6}'; then
		echo "FAIL: $cmd cuts a drill id at 80 columns" >&2
		exit 1
	fi
done

echo
echo "PASS: README tour (${#tour[@]} commands) read cleanly from the sandbox's first line to the failback, and its tables fit 80 columns, in $((SECONDS - start))s"
