#!/usr/bin/env bash
# Side-by-side: receiptdash's offline verification against the PyPI package
# apple-purchase-receipt-verifier on the genuine receipts of ../shared/corpus/pkcs7.
# Release build, one thread each. Then whole-process `inspect --format json` (and text) over a
# folder of 480 real-size receipts (Benchmarks/make-receipt-folder.sh) beside the package's
# verify_receipt on the same receipts. Usage: Benchmarks/compare-verify.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
corpus=../shared/corpus/pkcs7
swift build -c release >/dev/null
. Benchmarks/pypi-peer.sh
peer=$(peer_python)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "== receiptdash"
.build/release/receiptdash bench --verify --suffix .der --seconds "$seconds" "$corpus"
# The genuine receipts and their creation dates (the time their chains are judged at).
peer_receipts .build/release/receiptdash 1 "$corpus"/*.der
echo "== apple-purchase-receipt-verifier $("$peer" -m pip show apple-purchase-receipt-verifier | awk '/^Version/ {print $2}')"
"$peer" Benchmarks/pypi_verifier_bench.py "$seconds" "$creation" "${files[@]}"

# Whole process, start to exit, output read through a pipe: receipts/s and bytes written.
folder=${TMPDIR:-/tmp}/receiptdash-bench-receipts
Benchmarks/make-receipt-folder.sh "$folder" 480
for format in json text; do
  python3 - "$format" .build/release/receiptdash "$folder" <<'PY'
import os, subprocess, sys, time
fmt, binary, folder = sys.argv[1:4]
count = len(os.listdir(folder))
# The median of 11 runs after one warm-up: one run alone varies by a tenth on a busy machine.
times = []
for run in range(12):
    start = time.perf_counter()
    out = subprocess.run([binary, "inspect", "--format", fmt, folder], stdout=subprocess.PIPE).stdout
    if run > 0:
        times.append(time.perf_counter() - start)
elapsed = sorted(times)[len(times) // 2]
print(f"receiptdash inspect --format {fmt}: {count} receipts in {elapsed:.3f} s (median of {len(times)}; fastest {min(times):.3f} s): {count / elapsed:.0f} receipts/s, {len(out) / 1e6:.1f} MB written")
PY
done
peer_receipts .build/release/receiptdash 0 "$folder"
echo "== apple-purchase-receipt-verifier on the same $(ls "$folder" | wc -l) receipts"
"$peer" Benchmarks/pypi_verifier_bench.py "$seconds" "$creation" "${files[@]}"
