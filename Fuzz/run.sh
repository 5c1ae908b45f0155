#!/usr/bin/env bash
# Runs one libFuzzer target for N seconds:  Fuzz/run.sh TARGET SECONDS [extra libFuzzer flags]
#
# TARGET: decode | pkcs7 | plist | json | jws-trust | keys | png | receiver   (binary fuzz-TARGET)
# Builds the fuzz package if needed (release, -sanitize=fuzzer,address), seeds a working
# corpus in Fuzz/.build-corpus/TARGET (ignored by git, kept between runs so coverage grows)
# from ../shared/corpus (or Fuzz/Seeds/keys, Fuzz/Seeds/png), runs at nice 19, and prints the executions.
# Crash, timeout, OOM and leak inputs land in Fuzz/.build-artifacts/TARGET/.
set -euo pipefail

usage() { echo "usage: $0 decode|pkcs7|plist|json|jws-trust|keys|png|receiver SECONDS [libFuzzer flags...]" >&2; exit 64; }
[[ $# -ge 2 ]] || usage
target=$1 seconds=$2
shift 2
[[ $seconds =~ ^[0-9]+$ ]] || usage

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
shared=${SHARED_CORPUS:-$repo/../shared/corpus}
[[ -d $shared ]] || shared=/work/shared/corpus

# Which corpus files seed which target, and the largest input the fuzzer makes.
case $target in
    decode)    globs=(pkcs7/*.der pkcs7/*.b64 legacy/*.b64 legacy/*.plist responses/*.json jws/*.jws jws/*.decoded.json); max_len=20000 ;;
    pkcs7)     globs=(pkcs7/*.der certs/*.der); max_len=20000 ;;
    plist)     globs=(legacy/*.plist); max_len=4096 ;;
    json)      globs=(responses/*.json jws/*.decoded.json legacy/*.expected.json); max_len=8192 ;;
    jws-trust) globs=(jws/*.jws pkcs7/*.der legacy/*.b64); max_len=16384 ;;
    keys)      globs=(); max_len=4096 ;;
    png)       globs=(); max_len=4096 ;;
    receiver)  globs=(responses/*.json); max_len=65536 ;;
    *) usage ;;
esac

build_flags=(-c release --package-path "$here" --sanitize=fuzzer --sanitize=address
    -Xswiftc -sanitize=fuzzer,address --product "fuzz-$target")
# swift build is quick when nothing changed; it also rebuilds after a source edit.
# FUZZ_NO_BUILD=1 runs the binary already built (e.g. while another build holds the CPU).
if [[ ${FUZZ_NO_BUILD:-0} != 1 ]]; then nice -n 19 swift build "${build_flags[@]}" >&2; fi
bin=$(swift build "${build_flags[@]}" --show-bin-path)/fuzz-$target

work=$here/.build-corpus/$target
artifacts=$here/.build-artifacts/$target
mkdir -p "$work" "$artifacts"
if [[ $target == keys || $target == png ]]; then
    cp -n "$here"/Seeds/"$target"/* "$work"/
elif [[ $target == receiver ]]; then
    # Bodies as Apple posts them: each genuine JWS as {"signedPayload": …}, the V1 fixture, and
    # the verifyReceipt responses (JSON that is not a notification).
    for f in "$shared"/jws/*.jws; do
        [[ -f $f ]] && printf '{"signedPayload":"%s"}' "$(tr -d '[:space:]' < "$f")" > "$work/body-$(basename "$f").json"
    done
    cp -n "$repo/Tests/ReceiptCoreTests/Fixtures/notification-v1.json" "$work/" 2>/dev/null || true
    for g in "${globs[@]}"; do
        for f in "$shared"/$g; do [[ -f $f ]] && cp -n "$f" "$work/$(basename "$f")"; done
    done
else
    for g in "${globs[@]}"; do
        for f in "$shared"/$g; do [[ -f $f ]] && cp -n "$f" "$work/$(basename "$f")"; done
    done
fi

log=$artifacts/last-run.log
# Swift's own crash backtracer fights ASan over the crashed process; let libFuzzer and ASan
# report (they print the stack and write the input to $artifacts).
export SWIFT_BACKTRACE=enable=no
export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
# The receiver target keeps one receiver (and its trust cache) for the whole run, as production
# does: that memory is held on purpose, so leak detection is off for it (Fuzz/README.md).
leaks=()
if [[ $target == receiver ]]; then
    export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    leaks=(-detect_leaks=0)
fi
status=0
nice -n 19 "$bin" "$work" "${leaks[@]}" \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=$max_len \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$@" 2>"$log" || status=$?
execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
rss=$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
cov=$(grep -Eo '(DONE|pulse|NEW|REDUCE) +cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)
echo "fuzz-$target: ${execs:-?} executions in ${seconds}s (${rate:-?} exec/s, peak RSS ${rss:-?} MB; ${cov:-no coverage line}); exit $status"
echo "log: $log"
if [[ $status -ne 0 ]]; then
    grep -E '^(==[0-9]+==ERROR|SUMMARY|Fatal error|.*Test unit written to)' "$log" | head -20 || true
fi
exit $status
