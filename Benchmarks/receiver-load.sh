#!/usr/bin/env bash
# The notification receiver under load: `receiptdash receive` (release build, a fresh --db,
# durable group commits) driven over loopback by the simulator's sender at fixed rates of
# distinct, pre-signed V2 notifications (signed by the simulator's test PKI, trusted through
# --root-ca). For each rate: sustained notifications/s and the sender's p50/p99 latency, then a
# check that the store holds exactly as many rows as the sender counted 200s.
# Goal: >= 1,000 notifications/s at p99 <= 50 ms.
#
# Usage: Benchmarks/receiver-load.sh [RATE ...]       (default: 1000 2000 0; 0 = as fast as possible)
#        SECONDS_PER_RATE=10 CONCURRENCY=64 NO_BUILD=1 Benchmarks/receiver-load.sh 1500
#        BIN=.build/release/receiptdash NO_BUILD=1 ...   (a binary built elsewhere)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${SECONDS_PER_RATE:-10}
concurrency=${CONCURRENCY:-64}
rates=("$@")
[ ${#rates[@]} -gt 0 ] || rates=(1000 2000 0)
# Its own scratch folder: the shared debug .build stays unlocked for others. NO_BUILD=1 uses
# the binary already there.
[ "${NO_BUILD:-0}" = 1 ] || swift build -c release --scratch-path .build-release --product receiptdash >/dev/null
bin=${BIN:-.build-release/release/receiptdash}
work=$(mktemp -d "${TMPDIR:-/tmp}/receiver-load.XXXXXX")
receiver_pid=""
cleanup() {
  if [ -n "$receiver_pid" ]; then kill "$receiver_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
run=0
for rate in "${rates[@]}"; do
  run=$((run + 1))
  if [ "$rate" = 0 ]; then count=${MAX_COUNT:-20000}; else count=$(awk -v r="$rate" -v s="$seconds" 'BEGIN { printf "%d", r * s }'); fi
  # Each run its own store and PKI (a rate may be asked for more than once).
  db=$work/audit-$run-$rate.sqlite
  root=$work/root-$run-$rate.der
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
  # The simulator makes its PKI and writes the root first, signs every notification, then waits
  # for the receiver's port before the timed send.
  "$bin" simulator --port 0 --api-root-out "$root" --send-notifications "http://127.0.0.1:$port/notifications" \
    --notification-rate "$rate" --notification-count "$count" --notification-concurrency "$concurrency" \
    --retry-schedule 1s,2s --wait-for-receiver 60 --exit-when-sent >"$work/sender.out" 2>"$work/sender.err" &
  sender_pid=$!
  for _ in $(seq 1 200); do [ -s "$root" ] && break; sleep 0.05; done
  [ -s "$root" ] || { echo "the simulator did not write its root" >&2; cat "$work/sender.err" >&2; exit 1; }
  # One local sender stands for Apple's many addresses: the per-address cap (default 64, the
  # sender's concurrency) is lifted so that this measures throughput, not the cap.
  "$bin" receive --port "$port" --metrics-port 0 --db "$db" --root-ca "$root" --bundle-id com.example.receiptdash \
    --max-connections-per-address 1024 >"$work/receive.out" 2>/dev/null &
  receiver_pid=$!
  wait "$sender_pid"
  metrics_url=$(grep -o 'http://[0-9.:]*/metrics' "$work/receive.out" | head -n 1)
  # Where the receiver's time went: its CPU per notification, and its own mean verification
  # and commit-wait times (GET /metrics histograms).
  cpu_ticks=$(awk '{print $14 + $15}' "/proc/$receiver_pid/stat")
  metrics=$(curl -s "$metrics_url" || true)
  kill -TERM "$receiver_pid"
  wait "$receiver_pid" || true
  receiver_pid=""
  summary=$(grep '^notifications: sent' "$work/sender.out")
  acknowledged=$(sed -E 's/.*acknowledged ([0-9]+),.*/\1/' <<<"$summary")
  rows=$(sqlite3 "$db" 'SELECT count(*) FROM notification')
  label=$([ "$rate" = 0 ] && echo "as fast as possible ($concurrency in flight)" || echo "$rate/s offered")
  echo "== $label, $count notifications"
  echo "   $summary"
  awk -v ticks="$cpu_ticks" -v hz="$(getconf CLK_TCK)" -v n="$acknowledged" '
    /^receiptdash_notification_verify_seconds_sum/ { vs = $2 } /^receiptdash_notification_verify_seconds_count/ { vc = $2 }
    /^receiptdash_notification_commit_seconds_sum/ { cs = $2 } /^receiptdash_notification_commit_seconds_count/ { cc = $2 }
    END { printf "   receiver: %.2f ms CPU per notification; mean verification %.2f ms, mean commit wait %.2f ms\n",
          n ? ticks / hz * 1000 / n : 0, vc ? vs / vc * 1000 : 0, cc ? cs / cc * 1000 : 0 }' <<<"$metrics"
  if [ "$rows" = "$acknowledged" ]; then
    echo "   store: $rows rows = $acknowledged acknowledged"
  else
    echo "   store: $rows rows, but $acknowledged acknowledged: MISMATCH"
    status=1
  fi
done
exit $status
