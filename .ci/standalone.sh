#!/usr/bin/env bash
# The installed binary stands alone: `make install` into an empty prefix, the binary copied into
# an empty folder, then run where the Swift toolchain, the package copies and this repository
# (its build folders, Themes and resources) are hidden by empty bind mounts (`unshare -m`).
# `ldd` must list no Swift, Foundation or ICU library. Then `make uninstall` must leave nothing,
# and `make dist` a tarball whose .sha256 checks.
#
#   bash .ci/standalone.sh                                   # the release build, in .build-install
#   CONFIGURATION=debug SCRATCH=.build bash .ci/standalone.sh  # CI: from the tests' debug build
#
# With SCRATCH=.build (CI, as its last step) the executable's module is shared with the dynamic
# build. Its objects carry the libraries they were compiled for (autolink): compiled for a
# dynamic link, the static link misses ICU (undefined swift_unum_…). So its build folder, product
# folder and module files are removed first and it is compiled for the static link. Afterwards
# a plain `swift build` in that folder cannot link it (-lCoreFoundation) until `.build/debug` is
# removed: run it with SCRATCH=.build only where nothing builds after it.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
configuration=${CONFIGURATION:-release}
scratch=${SCRATCH:-.build-install}
fresh_executable_module() {
  rm -rf .build/"$configuration"/receiptdash.build .build/"$configuration"/receiptdash.product .build/"$configuration"/Modules/receiptdash.*
  touch Package.swift
}
[ "$scratch" = .build ] && fresh_executable_module
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
passed=0
failed=0
check() {  # check NAME COMMAND...: one line per check
  local name=$1; shift
  if "$@" >"$work/out" 2>&1; then passed=$((passed + 1)); echo "ok   $name"
  else failed=$((failed + 1)); echo "FAIL $name"; sed 's/^/     /' "$work/out" | head -20; fi
}

# What the development build prints (full ICU data, dynamic Foundation), to compare with the
# installed binary's (trimmed ICU data, static): the same bytes.
reference=${REFERENCE_BINARY:-.build/debug/receiptdash}
if [ -x "$reference" ]; then
  "$reference" inspect --demo --at 2024-05-01T12:00:00Z > "$work/reference.txt"
  "$reference" inspect --demo --at 2024-05-01T12:00:00Z --format json > "$work/reference.json"
fi

start=$(date +%s)
make --no-print-directory install PREFIX="$prefix" CONFIGURATION="$configuration" SCRATCH="$scratch" >"$work/install.log" 2>&1 \
  || { tail -40 "$work/install.log"; echo "standalone: 0 passed, 1 failed"; exit 1; }
echo "make install ($configuration): $(( $(date +%s) - start )) s"

mkdir -p "$work/alone" "$work/empty"
cp "$prefix/bin/receiptdash" "$work/alone/receiptdash"
commit=$(git rev-parse --short=12 HEAD)

check "ldd lists no Swift, Foundation or ICU library" \
  bash -c "! ldd '$work/alone/receiptdash' | grep -Ei 'swift|foundation|dispatch|icu|BlocksRuntime'"
check "installed: bin, 3 completions, man page, themes" bash -c "
  for f in bin/receiptdash share/bash-completion/completions/receiptdash share/zsh/site-functions/_receiptdash \
      share/fish/vendor_completions.d/receiptdash.fish share/man/man1/receiptdash.1 share/receiptdash/themes/colorblind.theme; do
    test -s '$prefix/'\$f || { echo \"missing \$f\"; exit 1; }
  done
  grep -q '^\.Dt RECEIPTDASH 1' '$prefix/share/man/man1/receiptdash.1' || { head -5 '$prefix/share/man/man1/receiptdash.1'; exit 1; }
  grep -q 'doctor' '$prefix/share/bash-completion/completions/receiptdash'"

# Everything below runs with the toolchain, the package copies and the repository hidden.
hidden() {
  unshare -m bash -c '
    set -e
    for d in /opt/swift /opt/swift-packages "$0"; do [ -e "$d" ] && mount --bind "$1" "$d"; done
    cd "$2" && shift 2 && exec "$@"' "$repo" "$work/empty" "$work/alone" "$@"
}
check "hidden: the toolchain and the repository are not there" hidden bash -c "! ls /opt/swift/usr/bin/swift && ! ls '$repo/Package.swift'"
check "--version names the version and commit $commit" hidden bash -c "./receiptdash --version | grep -x '[0-9.]* (commit $commit\(+dirty\)\?)'"
check "inspect --demo --format json decodes the bundled demo inputs" hidden bash -c "
  ./receiptdash inspect --demo --format json > demo.json
  grep -q '\"bundle_id\" : \"org.getpure.pure-iphone\"' demo.json
  test \$(grep -c '\"source\" : \"demo/' demo.json) -eq 6"
check "inspect --demo judges the chains against the compiled-in Apple roots" hidden bash -c "
  ./receiptdash inspect --demo | grep -q 'Apple Root CA'"
if [ -f "$work/reference.json" ]; then
  check "inspect --demo prints what the development build prints (text and JSON)" hidden bash -c "
    ./receiptdash inspect --demo --at 2024-05-01T12:00:00Z | cmp - '$work/reference.txt' &&
    ./receiptdash inspect --demo --at 2024-05-01T12:00:00Z --format json | cmp - '$work/reference.json'"
fi
check "keys lists the dashboard's keys" hidden bash -c "./receiptdash keys | grep -qi 'quit'"
check "a theme by name, from the themes compiled in (then: no terminal here)" hidden bash -c "
  ./receiptdash dash --theme colorblind 2>&1 | grep -q 'the dashboard needs a terminal'
  ./receiptdash dash --theme no-such-theme 2>&1 | grep -q 'not found'"
check "doctor runs (no set-up: the API checks are skipped, exit 0)" hidden bash -c "
  HOME=\$(pwd) ./receiptdash doctor --db \$(pwd)/audit.sqlite | grep -q '^– api.credentials'"

check "make uninstall removes exactly what install wrote" bash -c "
  make --no-print-directory uninstall PREFIX='$prefix' >/dev/null && test -z \"\$(find '$prefix' -type f)\""
check "make dist writes a tarball and its .sha256" bash -c "
  make --no-print-directory dist CONFIGURATION='$configuration' SCRATCH='$scratch' >/dev/null
  cd dist && sha256sum -c receiptdash-*-linux-*.tar.gz.sha256 && tar -tzf receiptdash-*-linux-*.tar.gz | grep -q '/bin/receiptdash$'"

echo "binary: $(du -h "$work/alone/receiptdash" | cut -f1)"
echo "standalone: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
