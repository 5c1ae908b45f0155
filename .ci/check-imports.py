#!/usr/bin/env python3
"""Every target declares what it imports, and imports what it declares: a module reached only
through another target's dependencies, or a dependency no file imports, is an error here
(SwiftPM on Linux checks neither). Then the module
map in docs/architecture.md is checked against Package.swift (.ci/module-map.py)."""
import json, os, re, subprocess, sys

SYSTEM = {"Foundation", "FoundationEssentials", "FoundationNetworking", "Dispatch", "Glibc", "Musl", "Darwin",
          "Synchronization", "XCTest", "Testing", "_Concurrency", "os"}
package = json.loads(subprocess.check_output(["swift", "package", "dump-package"], text=True))
problems = []
for target in package["targets"]:
    if target["type"] == "system":
        continue
    name = target["name"]
    declared = set()
    for dep in target.get("dependencies", []):
        for kind in ("byName", "target", "product"):
            if kind in dep:
                declared.add(dep[kind][0])
    folder = target.get("path") or os.path.join("Tests" if target["type"] == "test" else "Sources", name)
    imported = set()
    swift_files = 0
    for root, _, files in os.walk(folder):
        for file in files:
            if not file.endswith(".swift"):
                continue
            path = os.path.join(root, file)
            for line in open(path, encoding="utf-8"):
                m = re.match(r"\s*(?:@testable\s+|@_spi\(\w+\)\s+|@preconcurrency\s+)*import\s+(?:struct\s+|enum\s+|class\s+)?(\w+)", line)
                if m:
                    imported.add(m.group(1))
                if m and m.group(1) not in SYSTEM and m.group(1) != name and m.group(1) not in declared:
                    problems.append(f"{path}: imports {m.group(1)}, which target {name} does not declare")
            swift_files += 1
    # A declared dependency nothing imports: a backward edge kept by habit, or a build slowed
    # for nothing. (C and resource-only targets import nothing in Swift: skipped.)
    if swift_files:
        for dependency in sorted(declared - imported):
            problems.append(f"{folder}: target {name} declares {dependency} and never imports it")
for p in sorted(set(problems)):
    print(p)
print(f"imports: {len(package['targets'])} targets checked, {len(set(problems))} undeclared imports or unused dependencies")
# The module map in docs/architecture.md is Package.swift's (levels, modules, products).
map_ok = subprocess.call([sys.executable, os.path.join(os.path.dirname(__file__), "module-map.py")]) == 0
sys.exit(1 if problems or not map_ok else 0)
