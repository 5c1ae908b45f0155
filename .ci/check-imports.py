#!/usr/bin/env python3
"""Every target declares what it imports: a module reached only through another target's
dependencies is an error here (SwiftPM on Linux does not check this itself). Then the module
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
    for root, _, files in os.walk(folder):
        for file in files:
            if not file.endswith(".swift"):
                continue
            path = os.path.join(root, file)
            for line in open(path, encoding="utf-8"):
                m = re.match(r"\s*(?:@testable\s+|@_spi\(\w+\)\s+|@preconcurrency\s+)*import\s+(?:struct\s+|enum\s+|class\s+)?(\w+)", line)
                if m and m.group(1) not in SYSTEM and m.group(1) != name and m.group(1) not in declared:
                    problems.append(f"{path}: imports {m.group(1)}, which target {name} does not declare")
for p in sorted(set(problems)):
    print(p)
print(f"imports: {len(package['targets'])} targets checked, {len(set(problems))} undeclared imports")
# The module map in docs/architecture.md is Package.swift's (levels, modules, products).
map_ok = subprocess.call([sys.executable, os.path.join(os.path.dirname(__file__), "module-map.py")]) == 0
sys.exit(1 if problems or not map_ok else 0)
