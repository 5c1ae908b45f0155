#!/usr/bin/env bash
# The notification receiver on the open internet, measured: `receiptdash receive` (release, a
# fresh --db, durable group commits) takes the simulator's sender at RATE genuine-shaped V2
# notifications a second while, on the same port, a loopback attacker (hostile-client.py) mixes
# forged V1 bodies, unsigned x5c bombs, header-only requests declaring a 500 MB Content-Length,
# junk, a /health flood, and SLOW_CLIENTS slow-loris sockets. Reports: genuine notifications
# acknowledged and stored (goal: all), their p99 (goal <= 100 ms), the receiver's peak RSS (goal
# <= 256 MB) and refusal rows stored (goal: at most 1 per class, address and minute).
#
# Usage: Benchmarks/receiver-hostile.sh            (RATE=1000 SECONDS_TO_RUN=20 SLOW_CLIENTS=1000)
#        NO_BUILD=1 RATE=500 Benchmarks/receiver-hostile.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${RATE:-1000}
seconds=${SECONDS_TO_RUN:-20}
slow=${SLOW_CLIENTS:-1000}
count=$((rate * seconds))
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ "${NO_BUILD:-0}" = 1 ] || swift build -c release --scratch-path .build-release --product receiptdash >/dev/null
bin=.build-release/release/receiptdash
work=$(mktemp -d "${TMPDIR:-/tmp}/receiver-hostile.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load $(cut -d' ' -f1-3 /proc/loadavg)"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
db=$work/audit.sqlite
root=$work/root.der
"$bin" simulator --port 0 --api-root-out "$root" --send-notifications "http://127.0.0.1:$port/notifications" \
  --notification-rate "$rate" --notification-count "$count" --notification-concurrency 64 \
  --retry-schedule 1s,2s,4s --wait-for-receiver 60 --exit-when-sent >"$work/sender.out" 2>"$work/sender.err" &
sender_pid=$!
pids+=("$sender_pid")
for _ in $(seq 1 400); do [ -s "$root" ] && break; sleep 0.05; done
[ -s "$root" ] || { echo "the simulator did not write its root" >&2; cat "$work/sender.err" >&2; exit 1; }
"$bin" receive --port "$port" --metrics-port 0 --db "$db" --root-ca "$root" --bundle-id com.example.receiptdash \
  >"$work/receive.out" 2>"$work/receive.err" &
receiver_pid=$!
pids+=("$receiver_pid")
for _ in $(seq 1 200); do grep -q "metrics at" "$work/receive.out" 2>/dev/null && break; sleep 0.05; done
metrics_url=$(grep -o 'http://[0-9.:]*/metrics' "$work/receive.out" | head -n 1)
# The attack runs for the sender's whole send, and a little after.
python3 Benchmarks/hostile-client.py --port "$port" --seconds $((seconds + 5)) --slow "$slow" >"$work/attack.out" &
attack_pid=$!
pids+=("$attack_pid")
wait "$sender_pid"
wait "$attack_pid" || true
peak_kb=$(awk '/^VmHWM/ { print $2 }' "/proc/$receiver_pid/status")
metrics=$(curl -s "$metrics_url" || true)
kill -TERM "$receiver_pid"
wait "$receiver_pid" || true

summary=$(grep '^notifications: sent' "$work/sender.out")
acknowledged=$(sed -E 's/.*acknowledged ([0-9]+),.*/\1/' <<<"$summary")
rows=$(sqlite3 "$db" 'SELECT count(*) FROM notification')
echo "== $rate/s genuine-shaped notifications for ${seconds} s ($count), under attack"
echo "   sender: $summary"
echo "   stored: $rows rows for $acknowledged acknowledged of $count sent"
echo "   receiver peak RSS: $((peak_kb / 1024)) MB"
echo "   attacker: $(cat "$work/attack.out")"
echo "   refusals counted (metrics):"
grep '^receiptdash_notification_refusals_total' <<<"$metrics" | sed 's/^/     /'
echo "   refusal rows stored: $(sqlite3 "$db" 'SELECT count(*) || " rows standing for " || coalesce(sum(count), 0) || " refusals" FROM notification_rejection')"
echo "   most rows for one class, address and minute: $(sqlite3 "$db" 'SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM notification_rejection GROUP BY sample_key)')"
status=0
[ "$rows" = "$acknowledged" ] || { echo "   MISMATCH: stored rows differ from acknowledged"; status=1; }
exit $status
