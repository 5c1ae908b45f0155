#!/usr/bin/env bash
# The dashboard over a QA folder (issue 42): COUNT real receipts (the corpus's genuine PKCS#7
# receipts copied over, Benchmarks/make-receipt-folder.sh), loaded into the dashboard in a
# 120x40 tmux window. It measures the first frame, the time until every receipt is judged
# (beside `inspect --summary` over the same folder in the same run), and the dashboard's peak
# resident memory (VmHWM) beside the folder's size.
#
# Goals: resident memory <= 2x the input; first frame <= 1 s; judged at >= 0.8x the rate of
# inspect --summary.
#
# usage: Benchmarks/dashboard-folder.sh [COUNT]   (env: NO_BUILD=1 BIN=… FOLDER=… keeps a made folder)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-50000}
[ "${NO_BUILD:-0}" = 1 ] || swift build -c release --scratch-path .build-release --product receiptdash >/dev/null
bin=$(realpath "${BIN:-.build-release/release/receiptdash}")
folder=${FOLDER:-/tmp/receiptdash-qa-$count}
[ -d "$folder" ] && [ "$(ls "$folder" | wc -l)" = "$count" ] || Benchmarks/make-receipt-folder.sh "$folder" "$count" >/dev/null
bytes=$(du -sb "$folder" | cut -f1)
socket=receiptdash-bench-$$
trap 'tmux -L $socket kill-server 2>/dev/null || true' EXIT
now() { date +%s.%N; }
echo "machine: $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "folder: $count receipts, $((bytes / 1048576)) MB"

# Both read the folder from the page cache: the one timed first would otherwise pay for the disk.
find "$folder" -type f -exec cat {} + > /dev/null

start=$(now)
"$bin" inspect --summary --at 2026-01-01T00:00:00Z "$folder" >/dev/null
inspect_seconds=$(echo "$(now) - $start" | bc)

start=$(now)
tmux -L "$socket" new-session -d -s bench -x 120 -y 40 "TERM=xterm-256color $bin --at 2026-01-01T00:00:00Z $folder; sleep 600"
pid=""
first=""
while true; do
  [ -n "$pid" ] || pid=$(pgrep -f "^$bin --at 2026-01-01T00:00:00Z $folder" || true)
  screen=$(tmux -L "$socket" capture-pane -t bench -p 2>/dev/null || true)
  if [ -z "$first" ] && grep -q 'Receipts \[' <<<"$screen"; then first=$(echo "$(now) - $start" | bc); fi
  grep -q "Receipts \[$count\]" <<<"$screen" && grep -q "decoded $count" <<<"$screen" && break
  sleep 0.05
done
all=$(echo "$(now) - $start" | bc)
peak_kb=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
rss_kb=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
tmux -L "$socket" send-keys -t bench q
python3 - "$count" "$bytes" "$inspect_seconds" "$first" "$all" "$peak_kb" "$rss_kb" <<'PY'
import sys
count, size, inspect, first, judged, peak, rss = int(sys.argv[1]), int(sys.argv[2]), *map(float, sys.argv[3:8])
print(f"inspect --summary: {inspect:.2f} s ({count / inspect:,.0f} receipts/s)")
print(f"dashboard: first frame {first:.2f} s; all {count} judged in {judged:.2f} s ({count / judged:,.0f}/s, {inspect / judged:.2f}x inspect --summary)")
print(f"dashboard memory: peak {peak / 1024:,.0f} MB, now {rss / 1024:,.0f} MB for {size / 1048576:,.0f} MB of receipts ({peak * 1024 / size:.1f}x the input)")
PY
