#!/usr/bin/env bash
# The notification receiver against clients that hold connections: `receiptdash receive`
# (release, a fresh --db, default limits: --max-connections 1024, --max-connections-per-address
# 64, --write-timeout 10s) while slow-readers.py opens, from one address of its own (127.0.0.2),
# READERS sockets that pipeline 660 KB of GET /health and never read, and IDLE sockets that send
# nothing, each reconnecting when cut off. Meanwhile, from 127.0.0.1, the simulator's sender
# posts RATE genuine-shaped V2 notifications a second and /health is probed every 50 ms.
# Reports the genuine notifications' p99 (the sender's) and /health's p99 (goal: both <= 100
# ms), every notification acknowledged and stored, and the receiver's peak RSS.
#
# Usage: Benchmarks/receiver-slow-readers.sh   (RATE=500 SECONDS_TO_RUN=20 READERS=1000 IDLE=1000 CONCURRENCY=32)
#        NO_BUILD=1 RUNS=3 Benchmarks/receiver-slow-readers.sh    (three runs, then the medians)
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${RATE:-500}
seconds=${SECONDS_TO_RUN:-20}
readers=${READERS:-1000}
idle=${IDLE:-1000}
runs=${RUNS:-1}
# Under the per-address cap (64): the sender's connections all come from 127.0.0.1 too.
concurrency=${CONCURRENCY:-32}
count=$((rate * seconds))
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ "${NO_BUILD:-0}" = 1 ] || swift build -c release --scratch-path .build-release --product receiptdash >/dev/null
bin=${BIN:-.build-release/release/receiptdash}
work=$(mktemp -d "${TMPDIR:-/tmp}/receiver-slow-readers.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
notification_p99s=()
health_p99s=()
for run in $(seq 1 "$runs"); do
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
  db=$work/audit-$run.sqlite
  root=$work/root-$run.der
  "$bin" simulator --port 0 --api-root-out "$root" --send-notifications "http://127.0.0.1:$port/notifications" \
    --notification-rate "$rate" --notification-count "$count" --notification-concurrency "$concurrency" \
    --retry-schedule 1s,2s,4s --wait-for-receiver 60 --exit-when-sent >"$work/sender.out" 2>"$work/sender.err" &
  sender_pid=$!
  pids+=("$sender_pid")
  for _ in $(seq 1 400); do [ -s "$root" ] && break; sleep 0.05; done
  [ -s "$root" ] || { echo "the simulator did not write its root" >&2; cat "$work/sender.err" >&2; exit 1; }
  # The attack starts with the receiver and runs for the sender's whole send, and a little after.
  "$bin" receive --port "$port" --metrics-port none --db "$db" --root-ca "$root" --bundle-id com.example.receiptdash \
    >"$work/receive.out" 2>"$work/receive.err" &
  receiver_pid=$!
  pids+=("$receiver_pid")
  for _ in $(seq 1 200); do grep -q "receiving" "$work/receive.out" 2>/dev/null && break; sleep 0.05; done
  python3 Benchmarks/slow-readers.py --role attack --port "$port" --seconds $((seconds + 8)) --readers "$readers" --idle "$idle" \
    >"$work/attack.out" &
  attack_pid=$!
  pids+=("$attack_pid")
  # The probes in a process of their own: the attackers' event loop never delays their timing.
  python3 Benchmarks/slow-readers.py --role probe --port "$port" --seconds $((seconds + 8)) >"$work/probe.out" &
  probe_pid=$!
  pids+=("$probe_pid")
  wait "$sender_pid"
  wait "$attack_pid" || true
  wait "$probe_pid" || true
  peak_kb=$(awk '/^VmHWM/ { print $2 }' "/proc/$receiver_pid/status")
  kill -TERM "$receiver_pid"
  wait "$receiver_pid" || true

  summary=$(grep '^notifications: sent' "$work/sender.out")
  acknowledged=$(sed -E 's/.*acknowledged ([0-9]+),.*/\1/' <<<"$summary")
  notification_p99=$(sed -E 's/.*p99 ([0-9.]+) ms.*/\1/' <<<"$summary")
  health_p99=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["health"]["p99_ms"])' <"$work/probe.out")
  notification_p99s+=("$notification_p99")
  health_p99s+=("$health_p99")
  rows=$(sqlite3 "$db" 'SELECT count(*) FROM notification')
  echo "== run $run: $rate/s genuine notifications for ${seconds} s ($count) from 127.0.0.1; $readers slow readers and $idle idle sockets from 127.0.0.2"
  echo "   sender: $summary"
  echo "   stored: $rows rows for $acknowledged acknowledged of $count sent"
  echo "   /health: $(cat "$work/probe.out")"
  echo "   attackers: $(cat "$work/attack.out")"
  echo "   receiver peak RSS: $((peak_kb / 1024)) MB"
  echo "   p99: notifications $notification_p99 ms, /health $health_p99 ms"
  [ "$rows" = "$acknowledged" ] && [ "$acknowledged" = "$count" ] || { echo "   MISMATCH: not every notification was acknowledged and stored"; status=1; }
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "== median of $runs run(s): notifications p99 $(median "${notification_p99s[@]}") ms, /health p99 $(median "${health_p99s[@]}") ms (goal: both <= 100 ms)"
exit $status
