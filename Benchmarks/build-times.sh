#!/usr/bin/env bash
# Release build times of this package's own modules, for a commit and this tree, in one run:
# the full build of every module of ours (dependencies already built, shared in one scratch
# folder), then a rebuild after one file of the core changes, then after one file of the
# executable changes. Usage: Benchmarks/build-times.sh [BEFORE_COMMIT]  (default: 59d0108,
# the tree before the module split of issue 39).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
before=${1:-59d0108}
scratch=${SCRATCH:-$here/.build-release}
work=$(mktemp -d /tmp/receiptdash-build-times.XXXXXX)
trap 'git -C "$here" worktree remove --force "$work/before" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$here" worktree add --detach "$work/before" "$before" >/dev/null

measure() {  # tree label
    local tree=$1 label=$2 start end
    cd "$tree"
    start=$(date +%s.%N); swift build -c release --scratch-path "$scratch" >/dev/null; end=$(date +%s.%N)
    printf '%-8s %-32s %6.1f s\n' "$label" "full build of our modules" "$(echo "$end - $start" | bc)"
    for file in Sources/ReceiptCore/Model/AppleDate.swift Sources/receiptdash/BuildInfo.swift; do
        echo "// build-times $(date +%s%N)" >> "$file"
        start=$(date +%s.%N); swift build -c release --scratch-path "$scratch" >/dev/null; end=$(date +%s.%N)
        git checkout -q -- "$file"
        printf '%-8s %-32s %6.1f s\n' "$label" "rebuild after $(basename "$file")" "$(echo "$end - $start" | bc)"
    done
    swift build -c release --scratch-path "$scratch" >/dev/null  # back to the tree as committed
}

# Dependencies first (not timed), so both trees time only their own modules.
(cd "$here" && swift build -c release --scratch-path "$scratch" >/dev/null)
measure "$work/before" "$(git -C "$here" rev-parse --short "$before")"
measure "$here" "$(git -C "$here" rev-parse --short HEAD)"
