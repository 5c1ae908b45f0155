#!/usr/bin/env bash
# Every speed goal of the project in one run, each beside its peer or limit measured in the same
# run, then one table: measure, peer or limit, ratio, goal, met or not.
#
#   1. whole-process `inspect --format json` of the installed binary over 480 real-size receipts
#      vs the PyPI package apple-purchase-receipt-verifier on the same receipts
#      (median of 5 each; the development build's figure printed beside it)        goal >= 20x
#   2. JWS signatures/s vs the bare P-256 verify of the same library (BoringSSL) of the same
#      signatures, each over its own signing input; the bare verify of one token over and over
#      (this script's reference until 2026-11-27) in its own row                    goal >= 0.75
#   3. one 200x60 dashboard frame, 100,000 rows vs 100 rows (medians of five
#      alternating one-second runs each)                                            goal <= 1.2x
#   4. the receiver at 2,000 notifications/s (sender on the same cores), its p99
#      (the median of three ten-second runs)                                        goal <= 50 ms
#   5. `receiptdash --version` of the installed binary vs /bin/true (mean of 200)     goal <= 8x
#   6. `bench --lookup-transactions 500` vs 25 sequential round trips                 goal <= 1.1x
#
# Usage: Benchmarks/speed.sh               (release builds: .build for the benchmarks, `make binary`
#                                          for the installed binary; minutes of both cores)
#        ONLY="2 6" Benchmarks/speed.sh    (a subset)       NO_BUILD=1: use the binaries there
set -euo pipefail
cd "$(dirname "$0")/.."
only=${ONLY:-1 2 3 4 5 6}
wants() { [[ " $only " == *" $1 "* ]]; }
results=$(mktemp "${TMPDIR:-/tmp}/speed.XXXXXX")
trap 'rm -f "$results"' EXIT
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$results"; }
# met R CONDITION: "met" when the awk condition on r holds.
met() { awk -v r="$1" "BEGIN { print ($2) ? \"met\" : \"not met\" }"; }
# report FILE MEASURE GOAL CONDITION: prints a measurement's lines but its RESULT line (measured,
# peer or limit, ratio), which becomes a row of the table.
report() {
  grep -v '^RESULT' "$1"
  IFS=$'\t' read -r _ a b r < <(grep '^RESULT' "$1")
  row "$2" "$a" "$b" "$r" "$3" "$(met "${r%x}" "$4")"
  rm -f "$1"
}

if [ "${NO_BUILD:-0}" != 1 ]; then
  swift build -c release --product receiptdash >/dev/null
  if wants 1 || wants 5; then make --no-print-directory binary >/dev/null; fi
fi
bin=.build/release/receiptdash
installed=.build-install/stage/bin/receiptdash
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load $(cut -d' ' -f1-3 /proc/loadavg)"

if wants 1; then
  echo "== 1. inspect --format json vs apple-purchase-receipt-verifier"
  . Benchmarks/pypi-peer.sh
  folder=${TMPDIR:-/tmp}/receiptdash-bench-receipts
  Benchmarks/make-receipt-folder.sh "$folder" 480 >/dev/null
  peer_receipts "$bin" 0 "$folder"
  # receiptdash whole-process, start to exit, its output read through a pipe, median of 5 after a
  # warm-up: the installed binary (what `make install` ships, the goal's figure) and the
  # development build (.build/release, its libraries loaded at start) beside it. The reader takes
  # the bytes a megabyte at a time and counts them, as `jq` or a file would take them; until
  # 2026-11-27 it kept all 28 MB in one Python object (still timed, in alternation, and shown).
  # The package runs in its own loop (its interpreter's start not counted: kind to it), as the
  # issue measured it, in one-second slices between receiptdash's runs, so the machine's drift
  # falls on both alike (until 2026-11-27 it ran five seconds before them).
  python3 - "$installed" "$bin" "$folder" "$(peer_python)" "$creation" "${files[@]}" >"$results.1" <<'PY'
import os, subprocess, sys, time
installed, development, folder, python, creation, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]
count = len(os.listdir(folder))
peer = subprocess.Popen([python, "Benchmarks/pypi_verifier_bench.py", "serve", creation, *files],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
print(peer.stdout.readline().rstrip())
def peer_slice(seconds):
    peer.stdin.write(f"{seconds}\n")
    peer.stdin.flush()
    done, elapsed = peer.stdout.readline().split()
    return int(done), float(elapsed)
buffer = memoryview(bytearray(1 << 20))
def streamed(binary):
    # Each read straight into one buffer made once (os.read made and freed a megabyte a read).
    process = subprocess.Popen([binary, "inspect", "--format", "json", folder], stdout=subprocess.PIPE, bufsize=0)
    size = 0
    while n := process.stdout.readinto(buffer):
        size += n
    process.stdout.close()
    if process.wait() != 0:
        sys.exit(f"{binary} inspect --format json {folder} failed")
    return size
def kept(binary):
    return len(subprocess.run([binary, "inspect", "--format", "json", folder], stdout=subprocess.PIPE, check=True).stdout)
runs = [(development, streamed), (installed, streamed), (installed, kept)]
times = [[] for _ in runs]
verified, spent = 0, 0.0
for round in range(6):
    done, elapsed = peer_slice(1.0)
    for i, (binary, reader) in enumerate(runs):
        start = time.perf_counter()
        size = reader(binary)
        if round: times[i].append(time.perf_counter() - start)
    if round:
        verified, spent = verified + done, spent + elapsed
peer.stdin.close()
peer.wait()
peer = verified / spent
print(f"apple-purchase-receipt-verifier: verified {verified} receipts in {spent:.2f} s: {peer:.0f} receipts/s (one thread, five one-second slices between receiptdash's runs)")
dev, a, whole = (sorted(t)[2] for t in times)
print(f"development build ({development}): {count} receipts in {dev * 1000:.1f} ms, {count / dev:.0f} receipts/s, {count / dev / peer:.1f}x")
print(f"receiptdash inspect --format json (installed binary): {count} receipts in {a * 1000:.1f} ms (median of 5, whole process), {count / a:.0f} receipts/s, {size / 1e6:.1f} MB written")
print(f"the same, its output kept whole in one Python object by the reader (this script until 2026-11-27): {whole * 1000:.1f} ms, {count / whole:.0f} receipts/s, {count / whole / peer:.1f}x")
print(f"RESULT\t{count / a:.0f}/s\tPyPI peer {peer:.0f}/s\t{count / a / peer:.1f}x")
PY
  report "$results.1" "inspect --format json, 480 receipts, whole process (installed binary)" ">= 20x" "r >= 20"
fi

if wants 2; then
  echo "== 2. JWS signatures/s vs the bare P-256 verify"
  out=$("$bin" bench --verify --suffix .jws --seconds 6 ../shared/corpus/jws)
  echo "$out"
  sig=$(sed -nE 's/.* ([0-9]+) signatures\/s .*/\1/p' <<<"$out")
  same=$(sed -nE 's/^bare ECDSA P-256 verify of the same.*: ([0-9]+) verifies\/s.*/\1/p' <<<"$out")
  one=$(sed -nE 's/^bare ECDSA P-256 verify of one token.*: ([0-9]+) verifies\/s.*/\1/p' <<<"$out")
  r=$(awk -v a="$sig" -v b="$same" 'BEGIN { printf "%.2f", a / b }')
  row "JWS signatures/s, one thread" "$sig/s" "bare verify, same signatures $same/s" "$r" ">= 0.75" "$(met "$r" "r >= 0.75")"
  r=$(awk -v a="$sig" -v b="$one" 'BEGIN { printf "%.2f", a / b }')
  row "JWS signatures/s, one thread" "$sig/s" "bare verify, one token $one/s" "$r" ">= 0.75" "$(met "$r" "r >= 0.75")"
fi

if wants 3; then
  echo "== 3. a 200x60 frame, 100,000 rows vs 100 rows"
  # Five turns of each, one second a run, in alternation: the machine's speed drifts by more
  # than the two differ over a few seconds, and a run of each after the other measured the
  # drift. The median of each side's five medians is compared.
  small=""; large=""
  for _ in 1 2 3 4 5; do
    small+="$("$bin" bench --seconds 1 --render-rows 100)"$'\n'
    large+="$("$bin" bench --seconds 1 --render-rows 100000)"$'\n'
  done
  echo -n "$small"; echo -n "$large"
  middle() { sed -nE 's/.*median ([0-9.]+) ms.*/\1/p' | sort -n | sed -n 3p; }
  a=$(middle <<<"$large")
  b=$(middle <<<"$small")
  echo "median of the five medians: 100 rows $b ms, 100000 rows $a ms"
  r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a / b }')
  row "frame 200x60, 100,000 rows (median)" "$a ms" "100 rows $b ms" "${r}x" "<= 1.2x" "$(met "$r" "r <= 1.2")"
fi

if wants 4; then
  echo "== 4. the receiver at 2,000 notifications/s"
  # Three runs, each a fresh receiver and store: one ten-second run's p99 moved between 28 and
  # 68 ms from one minute to the next on this machine. The medians of the three runs' rates and
  # of their p99s count (and every run must store exactly what it acknowledged).
  out=$(BIN="$bin" NO_BUILD=1 Benchmarks/receiver-load.sh 2000 2000 2000 || true)
  echo "$out"
  sustained=$(sed -nE 's/.* ([0-9.]+)\/s over .*/\1/p' <<<"$out" | sort -n | sed -n 2p)
  p99=$(sed -nE 's/.*p99 ([0-9.]+) ms.*/\1/p' <<<"$out" | sort -n | sed -n 2p)
  echo "median of three runs: ${sustained:-?}/s, p99 ${p99:-?} ms"
  stored=$(grep -c 'MISMATCH' <<<"$out" || true)
  met=$(awk -v s="${sustained:-0}" -v p="${p99:-999}" -v m="$stored" 'BEGIN { print (s >= 1980 && p <= 50 && m == 0) ? "met" : "not met" }')
  row "receiver, 2,000/s offered, durable" "${sustained:-?}/s, p99 ${p99:-?} ms" "limit 50 ms" "-" ">= 2,000/s at p99 <= 50 ms" "$met"
fi

if wants 5; then
  echo "== 5. receiptdash --version vs /bin/true"
  python3 - "$installed" >"$results.5" <<'PY'
import subprocess, sys, time
binary = sys.argv[1]
def mean(argv, n=200):
    for _ in range(20): subprocess.run(argv, stdout=subprocess.DEVNULL)
    times = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    times.sort()
    return sum(times[: n * 9 // 10]) / (n * 9 // 10)  # the slowest tenth (a busy machine's stalls) left out
# Interleaved halves, so drift touches both alike.
a1, t1 = mean([binary, "--version"], 100), mean(["/bin/true", "--version"], 100)
a2, t2 = mean([binary, "--version"], 100), mean(["/bin/true", "--version"], 100)
a, t = (a1 + a2) / 2, (t1 + t2) / 2
print(f"{binary} --version: {a * 1000:.2f} ms; /bin/true: {t * 1000:.2f} ms (each the mean of 200 whole-process runs, slowest tenth left out)")
print(f"RESULT\t{a * 1000:.2f} ms\t/bin/true {t * 1000:.2f} ms\t{a / t:.1f}x")
PY
  report "$results.5" "receiptdash --version (installed binary)" "<= 8x" "r <= 8"
fi

if wants 6; then
  echo "== 6. a customer of 500 transactions vs 25 sequential round trips"
  out=$("$bin" bench --lookup-transactions 500)
  echo "$out"
  a=$(sed -nE 's/^lookup: .*: ([0-9.]+) s \(median.*/\1/p' <<<"$out")
  b=$(sed -nE 's/.*sequential pages ([0-9.]+) s: .*/\1/p' <<<"$out")
  r=$(sed -nE 's/.* s: ([0-9.]+)×$/\1/p' <<<"$out")
  row "lookup-transactions 500, 50 ms latency" "$a s" "25 round trips $b s" "${r}x" "<= 1.1x" "$(met "$r" "r <= 1.1")"
fi

echo
echo "| measure | measured | peer or limit, same run | ratio | goal | |"
echo "| --- | --- | --- | --- | --- | --- |"
while IFS=$'\t' read -r m a b r g ok; do echo "| $m | $a | $b | $r | $g | $ok |"; done <"$results"
