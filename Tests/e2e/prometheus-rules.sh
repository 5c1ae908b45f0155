#!/usr/bin/env bash
# Checks the Prometheus rules, the example config and the Grafana dashboard of deploy/:
# promtool check rules, promtool check config, promtool test rules (the unit tests), then that
# every alert has severity page or ticket, a summary, a description and a one-line runbook, a
# unit test in which it fires (for each of its severities) and a line in docs/on-call.md, and
# that the rules and the dashboard name only metrics of the receiver's contract (below).
# Usage: Tests/e2e/prometheus-rules.sh        (needs promtool: Debian's prometheus package)
set -uo pipefail
cd "$(dirname "$0")/../.."
rules=deploy/prometheus/receiptdash-alerts.yml
tests=deploy/prometheus/receiptdash-alerts.test.yml
config=deploy/prometheus/prometheus.yml
dashboard=deploy/grafana/receiptdash.json
passed=0
failed=0

check() { # description, then a command that must succeed (its output shown when it fails)
  local what=$1 out
  shift
  if out=$("$@" 2>&1); then
    passed=$((passed + 1)); echo "PASS $what"
  else
    failed=$((failed + 1)); echo "FAIL $what"; sed 's/^/     | /' <<<"$out"
  fi
}

if ! command -v promtool >/dev/null; then
  echo "FAIL promtool not found (apt-get install prometheus)"
  exit 1
fi
check "promtool check rules $rules" promtool check rules "$rules"
check "promtool check config $config (and the rule file it names)" promtool check config "$config"
check "promtool test rules $tests" promtool test rules "$tests"
check "the dashboard is valid JSON" python3 -m json.tool "$dashboard"

# The rest in Python without third-party modules (no PyYAML): the files are parsed by their
# layout, which this check therefore also holds them to.
check "every alert: severity, summary, description, runbook, a firing unit test, a line in docs/on-call.md; metric names from the contract" \
  python3 - "$rules" "$tests" "$dashboard" docs/on-call.md <<'PYEOF'
import json, re, sys

rules_path, tests_path, dashboard_path, doc_path = sys.argv[1:5]

# The metrics the receiver exports (the contract the rules and the dashboard are written to).
COUNTERS = """receiptdash_notifications_total receiptdash_notification_refusals_total
receiptdash_notifications_stored_total receiptdash_notification_redeliveries_total
receiptdash_api_requests_total receiptdash_verifyreceipt_requests_total
receiptdash_forward_deliveries_total receiptdash_forward_target_disabled_total
receiptdash_forward_target_slowed_total receiptdash_reconcile_runs_total
receiptdash_reconcile_recovered_total receiptdash_retention_requests_total
receiptdash_retention_unrecorded_total receiptdash_consumption_requests_total""".split()
GAUGES = """receiptdash_forward_pending_deliveries receiptdash_forward_oldest_pending_age_seconds
receiptdash_forward_targets_disabled receiptdash_tls_certificate_expiry_timestamp_seconds
receiptdash_consumption_oldest_open_seconds receiptdash_consumption_open_requests""".split()
HISTOGRAMS = """receiptdash_notification_request_seconds receiptdash_notification_verify_seconds
receiptdash_notification_commit_seconds receiptdash_forward_delivery_seconds
receiptdash_retention_answer_seconds""".split()
CONTRACT = set(COUNTERS + GAUGES) | {h + s for h in HISTOGRAMS for s in ("_bucket", "_sum", "_count")}

problems = []
rules_text = open(rules_path, encoding="utf-8").read()
tests_text = open(tests_path, encoding="utf-8").read()
doc_text = open(doc_path, encoding="utf-8").read()

# Rules: one block per "- alert: NAME", up to the next one.
starts = [m for m in re.finditer(r"^(\s*)- alert: *(\S+)\s*$", rules_text, re.M)]
if not starts:
    problems.append(f"{rules_path}: no alerts found")
alerts = []  # (name, severity, expr)
for i, m in enumerate(starts):
    block = rules_text[m.end():starts[i + 1].start() if i + 1 < len(starts) else len(rules_text)]
    name = m.group(2)
    severity = re.search(r"^\s+severity: *(\S+)\s*$", block, re.M)
    severity = severity.group(1) if severity else None
    if severity not in ("page", "ticket"):
        problems.append(f"{name}: severity is {severity!r}, not page or ticket")
    for key in ("summary", "description", "runbook"):
        a = re.search(rf"^(\s+){key}: *(.*)$", block, re.M)
        if not a:
            problems.append(f"{name} ({severity}): no {key} annotation")
            continue
        value = a.group(2).strip()
        if value in (">-", ">", "|", "|-"):
            if value.startswith("|"):
                problems.append(f"{name} ({severity}): {key} is a literal block; use >- (one line)")
            # the folded lines that follow, more indented than the key
            rest = block[a.end():].split("\n")[1:]
            lines = []
            for line in rest:
                if line.strip() and len(line) - len(line.lstrip()) > len(a.group(1)):
                    lines.append(line.strip())
                else:
                    break
            value = " ".join(lines)
        if not value:
            problems.append(f"{name} ({severity}): the {key} annotation is empty")
    e = re.search(r"^(\s+)expr: *(.*)$", block, re.M)
    expr = ""
    if e and e.group(2).strip() in ("|", "|-", ">", ">-"):
        for line in block[e.end():].split("\n")[1:]:
            if line.strip() and len(line) - len(line.lstrip()) > len(e.group(1)):
                expr += line + "\n"
            else:
                break
    elif e:
        expr = e.group(2)
    else:
        problems.append(f"{name} ({severity}): no expr")
    alerts.append((name, severity, expr))

# Unit tests: each "alertname: X" case, its exp_alerts empty ([]) or with exp_labels (severity).
cases = re.split(r"^\s*- eval_time:", tests_text, flags=re.M)[1:]
firing = set()  # (alert, severity) seen firing in a test
for case in cases:
    n = re.search(r"^\s*alertname: *(\S+)\s*$", case, re.M)
    if not n:
        continue
    if re.search(r"^\s*exp_alerts: *\[\]\s*$", case, re.M):
        continue
    for s in re.findall(r"^\s+severity: *(\S+)\s*$", case, re.M):
        firing.add((n.group(1), s))
for name, severity, _ in alerts:
    if (name, severity) not in firing:
        problems.append(f"{name} ({severity}): no unit test in {tests_path} in which it fires")
    if f"`{name}`" not in doc_text:
        problems.append(f"{name}: not in {doc_path} (as `{name}`)")

# Metric names: every identifier of a query that is not a function, keyword or label.
KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "inf", "nan"}
def metrics(expr):
    e = re.sub(r'"(\\.|[^"\\])*"', '""', expr)                # strings
    e = re.sub(r"\{[^}]*\}", "", e)                             # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)                            # ranges
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w$.])([A-Za-z_:][\w:]*)(\s*\()?", e):
        if m.group(2) or m.group(1) in KEYWORDS:
            continue
        names.add(m.group(1))
    return names
for name, severity, expr in alerts:
    for metric in metrics(expr) - CONTRACT - {"up"}:
        problems.append(f"{name} ({severity}): {metric} is not a contract metric")
dash = json.load(open(dashboard_path, encoding="utf-8"))
def walk(node, path):
    if isinstance(node, dict):
        if "expr" in node and isinstance(node["expr"], str):
            yield path, node["expr"]
        for k, v in node.items():
            yield from walk(v, path + "/" + str(node.get("title", k)) if k == "targets" else path)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v, path)
exprs = list(walk(dash.get("panels", []), "panels"))
if not exprs:
    problems.append(f"{dashboard_path}: no panel queries found")
for path, expr in exprs:
    for metric in metrics(expr) - CONTRACT:
        problems.append(f"{dashboard_path} {path}: {metric} is not a contract metric")
for var in dash.get("templating", {}).get("list", []):
    q = var.get("query")
    q = q.get("query", "") if isinstance(q, dict) else (q or "")
    for metric in re.findall(r"label_values\(\s*([A-Za-z_:][\w:]*)", q):
        if metric not in CONTRACT:
            problems.append(f"{dashboard_path} variable {var.get('name')}: {metric} is not a contract metric")
# Any receiptdash_ name anywhere in the three files (annotations, comments, test series).
for path, text in ((rules_path, rules_text), (tests_path, tests_text), (dashboard_path, json.dumps(dash))):
    for metric in sorted(set(re.findall(r"\breceiptdash_[a-z0-9_]+", text)) - CONTRACT):
        problems.append(f"{path}: {metric} is not a contract metric")

for p in problems:
    print(p)
print(f"{len(alerts)} alert rules ({len({a[0] for a in alerts})} names), {len(cases)} test cases, {len(exprs)} dashboard queries")
sys.exit(1 if problems else 0)
PYEOF

echo "prometheus-rules: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
