#!/usr/bin/env bash
# Makes a folder of real-size receipts for the JSON benchmark: copies of the corpus's genuine
# PKCS#7 receipts of 7-30 KB (dozens of in_app rows each, about 15.5 KB on average), taken in
# turn until COUNT files are there. Usage: Benchmarks/make-receipt-folder.sh DIR [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: make-receipt-folder.sh DIR [COUNT]}
count=${2:-480}
corpus=../shared/corpus/pkcs7
mapfile -t sources < <(find "$corpus" -maxdepth 1 -name '*.der' -size +7k -size -30k | sort)
[ ${#sources[@]} -gt 0 ] || { echo "no receipts of 7-30 KB in $corpus" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir"
for ((i = 0; i < count; i++)); do
  src=${sources[$((i % ${#sources[@]}))]}
  cp "$src" "$dir/$(printf '%05d' "$i")-$(basename "$src")"
done
echo "$dir: $count receipts from ${#sources[@]} corpus files, $(du -sk "$dir" | cut -f1) KB"
