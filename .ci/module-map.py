#!/usr/bin/env python3
"""The module map in docs/architecture.md is Package.swift's: the level diagram and, for every
target, its level, the modules it depends on and the outside products it uses. Each target's
concern is written by hand in the page and kept as it is.

  .ci/module-map.py           check the page (CI: exit 1 and the differences when it is stale)
  .ci/module-map.py --write   rewrite the diagram and the generated columns from Package.swift
"""
import difflib, json, re, subprocess, sys

PAGE = "docs/architecture.md"
package = json.loads(subprocess.check_output(["swift", "package", "dump-package"], text=True))
order = [t["name"] for t in package["targets"]]
kinds = {t["name"]: t["type"] for t in package["targets"]}
# A library the tests share (ServiceTestSupport) sits in Tests/ and is listed with the tests.
in_tests = {t["name"] for t in package["targets"] if t["type"] == "test" or (t.get("path") or "").startswith("Tests")}
modules, products = {}, {}
for t in package["targets"]:
    mods, prods = [], []
    for dep in t.get("dependencies", []):
        if "product" in dep:
            prods.append(dep["product"][0])
        for kind in ("byName", "target"):
            if kind in dep:
                mods.append(dep[kind][0])
    modules[t["name"]], products[t["name"]] = mods, sorted(set(prods), key=lambda p: p.lstrip("_").lower())

levels = {}
def level(name):
    if name not in levels:
        levels[name] = 1 + max((level(m) for m in modules[name]), default=-1)
    return levels[name]

regular = [n for n in order if n not in in_tests]
for n in order:
    level(n)

def ordered(names):
    return sorted(names, key=lambda n: (levels[n], order.index(n)))

def cells(names):
    return ", ".join(f"`{n}`" for n in names) or "–"

def diagram():
    by_level = {}
    for n in ordered(regular):
        by_level.setdefault(levels[n], []).append(n)
    lines = []
    # Each column as wide as its longest name plus two spaces: a name of 23 characters or more
    # is never glued to the next one.
    width = max(len(n) for n in regular) + 2
    for lv in sorted(by_level, reverse=True):
        names = by_level[lv]
        for i in range(0, len(names), 4):
            prefix = f"{lv}  " if i == 0 else "   "
            lines.append((prefix + "".join(n.ljust(width) for n in names[i:i + 4])).rstrip())
    return "\n".join(lines)

text = open(PAGE, encoding="utf-8").read()
concerns = {}
row = re.compile(r"^\| (?:(\d+) \| )?`([^`]+)` \| (.*?) \| (.*?) \|(?: (.*?) \|)?$")
for line in text.split("\n"):
    m = row.match(line)
    if m:
        concerns[m.group(2)] = m.group(3)

def module_row(n):
    return f"| {levels[n]} | `{n}` | {concerns.get(n, 'TODO: its one concern')} | {cells(ordered(modules[n]))} | {cells(products[n])} |"

def test_row(n):
    return f"| `{n}` | {concerns.get(n, 'TODO: what it checks')} | {cells(ordered(modules[n]))} |"

def rewrite(text):
    text = re.sub(r"(## The module map\n.*?```text\n).*?(\n```)", lambda m: m.group(1) + diagram() + m.group(2), text, count=1, flags=re.S)
    head = "| level | module | its one concern | depends on (modules) | outside packages (products) |\n| --- | --- | --- | --- | --- |\n"
    text = re.sub(re.escape(head) + r"(?:\|.*\n)+", lambda m: head + "\n".join(module_row(n) for n in ordered(regular)) + "\n", text, count=1)
    thead = "| target | what it checks | depends on (modules) |\n| --- | --- | --- |\n"
    test_targets = [n for n in order if n in in_tests and kinds[n] == "test"] + [n for n in order if n in in_tests and kinds[n] != "test"]
    text = re.sub(re.escape(thead) + r"(?:\|.*\n)+", lambda m: thead + "\n".join(test_row(n) for n in test_targets) + "\n", text, count=1)
    return text

wanted = rewrite(text)
if "--write" in sys.argv:
    open(PAGE, "w", encoding="utf-8").write(wanted)
    print(f"module map: {PAGE} written from Package.swift ({len(order)} targets)")
    sys.exit(1 if "TODO:" in wanted else 0)
if wanted != text or "TODO:" in text:
    sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), wanted.splitlines(True), PAGE, PAGE + " (from Package.swift)"))
    print(f"module map: {PAGE} does not match Package.swift; run .ci/module-map.py --write and describe new targets")
    sys.exit(1)
print(f"module map: {PAGE} matches Package.swift ({len(order)} targets)")
