#!/usr/bin/env bash
# The fuzz package (Fuzz/, a package of its own that CI never builds in full) still compiles
# against this one: its manifest loads (every product a harness names exists here), and every
# harness typechecks against the modules the main debug build made (run it after `swift build`).
# A full `swift build --package-path Fuzz` builds the whole dependency graph again in Fuzz/.build
# (478 s here on two shared cores); this takes about 3 s and catches the same rot: a module
# renamed or gone, an import missing, an API changed under a harness.
set -euo pipefail
cd "$(dirname "$0")/.."

modules=.build/debug/Modules
[ -d "$modules" ] || { echo "check-fuzz: no $modules: run swift build first" >&2; exit 1; }

# The manifest and the graph: a product the main package no longer has fails here.
swift package --package-path Fuzz show-dependencies >/dev/null

# The C modules the Swift modules were built against: SwiftPM's generated module maps, and the
# ones C targets keep in their include folders.
flags=(-typecheck -swift-version 6 -I "$modules")
for map in .build/debug/*.build/module.modulemap; do flags+=(-Xcc "-fmodule-map-file=$map"); done
while IFS= read -r map; do flags+=(-Xcc "-I$(dirname "$map")"); done \
    < <(find .build/checkouts Sources -type f -name module.modulemap -path '*include*')

for harness in Fuzz/Sources/*/main.swift; do
    name=$(basename "$(dirname "$harness")")
    swiftc "${flags[@]}" -module-name "$name" "$harness"
done
echo "check-fuzz: Fuzz/Package.swift loads; $(ls Fuzz/Sources | wc -l) harnesses typecheck against the main package"
