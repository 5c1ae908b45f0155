#!/usr/bin/env bash
# Forwarding's cost and lag (issues 41 and 51): the simulator sends RATE notifications a second
# for SECONDS to a receiver on SQLite, first without forwarding and then with one --forward to a
# local downstream (Benchmarks/webhook-sink.py, which checks every signature), sender, receiver
# and downstream on this machine's cores. Each pair is run RUNS times; the summary gives the
# medians, and the receiver's CPU per notification with and without forwarding (from /proc).
#
# Goals (issue 51, at 1,000/s): all stored and all forwarded once; the p99 of Apple's 200 with
# forwarding <= 1.5x its p99 without, in the same run; forward lag p99 <= 1 s.
#
# usage: Benchmarks/receiver-forward.sh [RATE]   (env: SECONDS_PER_RUN=10 RUNS=3 NO_BUILD=1 BIN=…)
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${1:-1000}
seconds=${SECONDS_PER_RUN:-10}
runs=${RUNS:-3}
count=$((rate * seconds))
[ "${NO_BUILD:-0}" = 1 ] || swift build -c release --scratch-path .build-release --product receiptdash >/dev/null
bin=${BIN:-.build-release/release/receiptdash}
work=$(mktemp -d "${TMPDIR:-/tmp}/receiver-forward.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
echo "whsec_$(openssl rand -base64 32)" >"$work/secret"
chmod 600 "$work/secret"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "offered: $rate/s for ${seconds} s ($count notifications) per run, $runs runs"
status=0
results=()
for run in $(seq 1 "$runs"); do
  for mode in plain forward; do
    db=$work/audit-$run-$mode.sqlite
    root=$work/root-$run-$mode.der
    port=$(free_port)
    "$bin" simulator --port 0 --api-root-out "$root" --send-notifications "http://127.0.0.1:$port/notifications" \
      --notification-rate "$rate" --notification-count "$count" --notification-concurrency 64 \
      --retry-schedule 1s,2s --wait-for-receiver 60 --exit-when-sent >"$work/sender.out" 2>"$work/sender.err" &
    sender=$!
    for _ in $(seq 1 200); do [ -s "$root" ] && break; sleep 0.05; done
    forward=()
    sink_cpu=""
    if [ "$mode" = forward ]; then
      sink_port=$(free_port)
      rm -f "$work/sink.ready"
      python3 Benchmarks/webhook-sink.py "$sink_port" "$work/secret" "$work/sink.ready" >"$work/sink.out" &
      sink=$!
      pids+=("$sink")
      for _ in $(seq 1 100); do [ -s "$work/sink.ready" ] && break; sleep 0.05; done
      forward=(--forward "http://127.0.0.1:$sink_port/apple" --forward-secret-file "$work/secret")
    fi
    "$bin" receive --port "$port" --metrics-port 0 --db "$db" --root-ca "$root" --bundle-id com.example.receiptdash \
      --max-connections-per-address 1024 "${forward[@]}" >"$work/receive.out" 2>/dev/null &
    receiver=$!
    pids+=("$receiver")
    # The sender's CPU, read while it runs (its signing of the notifications comes first, before
    # the receiver takes any): what is left of the cores for the receiver and forwarding.
    sender_cpu=0
    while kill -0 "$sender" 2>/dev/null; do
      sender_cpu=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$sender/stat" 2>/dev/null || echo "$sender_cpu")
      sleep 0.2
    done
    wait "$sender"
    summary=$(grep '^notifications: sent' "$work/sender.out")
    acknowledged=$(sed -E 's/.*acknowledged ([0-9]+),.*/\1/' <<<"$summary")
    achieved=$(sed -E 's|.* ([0-9.]+)/s over.*|\1|' <<<"$summary")
    p99=$(sed -E 's/.*p99 ([0-9.]+) ms.*/\1/' <<<"$summary")
    line="run $run $mode: $summary"
    if [ "$mode" = forward ]; then
      # Every stored notification delivered: wait for the outbox to empty (at most 60 s).
      for _ in $(seq 1 600); do
        [ "$(sqlite3 "$db" "SELECT count(*) FROM forward_delivery WHERE state != 'delivered'")" = 0 ] && break
        sleep 0.1
      done
      metrics_url=$(grep -o 'http://[0-9.:]*/metrics' "$work/receive.out" | head -n 1)
      lag=$(curl -s "$metrics_url" | awk '
        /^receiptdash_forward_delivery_seconds_bucket/ { match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5); n++; les[n] = le; counts[n] = $2 }
        /^receiptdash_forward_delivery_seconds_count/ { total = $2 }
        END { for (i = 1; i <= n; i++) if (counts[i] >= 0.99 * total) { print les[i]; exit } }')
      sink_cpu=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$sink/stat")
      kill -TERM "$sink"
      wait "$sink" || true
      sink_totals=$(tail -n 1 "$work/sink.out")
      delivered=$(sqlite3 "$db" "SELECT count(*) FROM forward_delivery WHERE state = 'delivered'")
      line+=$'\n'"         forwarded: $delivered delivered; downstream $sink_totals; lag p99 <= ${lag} s"
      unique=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["unique"])' "$sink_totals")
      duplicates=$(python3 -c 'import json,sys; t=json.loads(sys.argv[1]); print(t["duplicates"] + t["bad_signature"])' "$sink_totals")
      if [ "$unique" != "$acknowledged" ] || [ "$duplicates" != 0 ]; then
        line+=" MISMATCH ($acknowledged acknowledged)"
        status=1
      fi
    fi
    receiver_cpu=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$receiver/stat")
    if [ "$mode" = forward ]; then
      results+=("$run forward $achieved $p99 $lag $receiver_cpu $acknowledged")
    else
      results+=("$run plain $achieved $p99 - $receiver_cpu $acknowledged")
    fi
    line+=$'\n'"         CPU: receiver ${receiver_cpu} s, sender ${sender_cpu} s${sink_cpu:+, downstream ${sink_cpu} s}"
    kill -TERM "$receiver"
    wait "$receiver" || true
    rows=$(sqlite3 "$db" 'SELECT count(*) FROM notification')
    [ "$rows" = "$acknowledged" ] || { line+=" STORE MISMATCH ($rows rows)"; status=1; }
    echo "$line"
  done
done
printf '%s\n' "${results[@]}" | python3 -c '
import statistics, sys
rows = [l.split() for l in sys.stdin if l.strip()]
def med(mode, i): return statistics.median(float(r[i]) for r in rows if r[1] == mode)
plain, fwd = med("plain", 2), med("forward", 2)
lags = [float(r[4]) for r in rows if r[1] == "forward" and r[4] not in ("-", "+Inf")]
lag = statistics.median(lags) if lags else float("nan")
p99_plain, p99_fwd = med("plain", 3), med("forward", 3)
# CPU per notification (ms): the receiver alone, and what forwarding adds (the forwarding run
# minus the plain run of the same pair).
cpu = {(r[0], r[1]): (float(r[5]), int(r[6])) for r in rows}
alone = statistics.median(cpu[(r[0], "plain")][0] * 1000 / max(1, cpu[(r[0], "plain")][1]) for r in rows if r[1] == "plain")
adds = statistics.median(
    (cpu[(r[0], "forward")][0] * 1000 / max(1, cpu[(r[0], "forward")][1])) - (cpu[(r[0], "plain")][0] * 1000 / max(1, cpu[(r[0], "plain")][1]))
    for r in rows if r[1] == "plain" and (r[0], "forward") in cpu)
ratios = sorted(float(f[3]) / float(p[3]) for p in rows for f in rows if p[1] == "plain" and f[1] == "forward" and p[0] == f[0])
print(f"median: without forwarding {plain:.0f}/s, p99 {p99_plain:.1f} ms; with one --forward {fwd:.0f}/s ({fwd / plain:.2f}x), "
      f"p99 {p99_fwd:.1f} ms; forward lag p99 <= {lag} s")
pairs = ", ".join("%.2fx" % r for r in ratios)
print(f"p99 with / without, per pair: {pairs}; median {statistics.median(ratios):.2f}x (goal <= 1.5x)")
print(f"receiver CPU per notification: {alone:.3f} ms alone; forwarding adds {adds:.3f} ms")
'
exit $status
