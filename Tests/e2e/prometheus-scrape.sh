#!/usr/bin/env bash
# End-to-end check of the metrics as Prometheus sees them: a real `receiptdash receive` on
# loopback (no Apple credentials: a throwaway --db and a made-up bundle id), scraped every
# second by a real Prometheus (Debian's /usr/bin/prometheus) that evaluates the real rules of
# deploy/prometheus/receiptdash-alerts.yml, unchanged. Bad requests posted with curl make the
# refusal counters; then, through Prometheus's HTTP API: the target is up, the refusals are
# there with their exact reason and count, every rule of the group loaded and evaluates with
# health "ok", every query of the Grafana dashboard is valid PromQL, ReceiptdashRefusalRatioHigh
# goes pending for not-json, and ReceiptdashReceiverDown goes pending once the receiver stops.
# Runs in a network namespace of its own when it can (unshare -n as root, -rn otherwise), so
# nothing else on the machine can answer on its ports; else on the host's loopback, port 0.
# Every wait is bounded (60 s). One PASS/FAIL line per check; exit 1 on any failure.
# Usage: Tests/e2e/prometheus-scrape.sh path/to/receiptdash
set -uo pipefail
script=$(realpath "$0")
bin=${1:?usage: Tests/e2e/prometheus-scrape.sh path/to/receiptdash}
bin=$(realpath "$bin")
cd "$(dirname "$script")/../.."
prometheus=${PROMETHEUS:-/usr/bin/prometheus}
[ -x "$prometheus" ] || prometheus=$(command -v prometheus || true)
if [ ! -x "$bin" ] || [ -z "$prometheus" ]; then
  echo "FAIL needs an executable receiptdash ($bin) and prometheus (apt-get install prometheus)"
  exit 1
fi

# Into a network namespace of its own (loopback only), once.
if [ -z "${RECEIPTDASH_SCRAPE_NETNS:-}" ] && command -v unshare >/dev/null && command -v ip >/dev/null; then
  if [ "$(id -u)" = 0 ]; then netns=(unshare -n); else netns=(unshare -rn); fi
  if "${netns[@]}" ip link set lo up 2>/dev/null; then
    RECEIPTDASH_SCRAPE_NETNS=1 exec "${netns[@]}" bash "$script" "$bin"
  fi
fi
if [ "${RECEIPTDASH_SCRAPE_NETNS:-}" = 1 ]; then
  ip link set lo up || { echo "FAIL bringing up loopback in the network namespace"; exit 1; }
  where="in a network namespace of its own"
else
  where="on the host's loopback (no network namespace: unshare or ip missing or not allowed)"
fi

started=$(date +%s)
run_deadline=$((started + 240)) # the whole run, however many waits fail
work=$(mktemp -d "${TMPDIR:-/tmp}/prometheus-scrape.XXXXXX")
receiver_pid=""
prometheus_pid=""
passed=0
failed=0
stop() { # pid: SIGTERM, up to 5 s, then SIGKILL
  [ -n "$1" ] || return 0
  kill -TERM "$1" 2>/dev/null || return 0
  for _ in $(seq 1 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null
  wait "$1" 2>/dev/null
}
cleanup() {
  stop "$prometheus_pid"
  stop "$receiver_pid"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { # description, then a file whose tail to show
  failed=$((failed + 1)); echo "FAIL $1"
  [ -n "${2:-}" ] && [ -s "$2" ] && tail -n 15 "$2" | sed 's/^/     | /'
}
poll() { # seconds, command: until it succeeds or the deadline passes (at most the run's own)
  local deadline=$(( $(date +%s) + $1 )); shift
  [ "$deadline" -le "$run_deadline" ] || deadline=$run_deadline
  until "$@" >"$work/last" 2>&1; do
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.5
  done
}
finish() {
  echo "prometheus-scrape: $passed passed, $failed failed in $(( $(date +%s) - started )) s, $where"
  [ "$failed" -eq 0 ] && exit 0 || exit 1
}

# Prometheus's HTTP API, read with the standard library only.
cat >"$work/api.py" <<'PYEOF'
import json, re, sys, urllib.parse, urllib.request
base, command, args = sys.argv[1], sys.argv[2], sys.argv[3:]

def get(path, **params):
    url = base + path + ("?" + urllib.parse.urlencode(params) if params else "")
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.load(r)
    if body.get("status") != "success":
        sys.exit(f"{path}: {body}")
    return body["data"]

if command == "target-up":            # job: its one target is up
    targets = [t for t in get("/api/v1/targets")["activeTargets"] if t["labels"].get("job") == args[0]]
    print([(t["scrapeUrl"], t["health"], t["lastError"]) for t in targets])
    sys.exit(0 if len(targets) == 1 and targets[0]["health"] == "up" else 1)
elif command == "rules-ok":           # group, number of rules: all loaded, evaluated, healthy
    groups = [g for g in get("/api/v1/rules")["groups"] if g["name"] == args[0]]
    rules = groups[0]["rules"] if len(groups) == 1 else []
    bad = [(r["name"], r["health"], r.get("lastError", "")) for r in rules if r["health"] != "ok" or r.get("lastError")]
    print(f"{len(groups)} group(s), {len(rules)} rules (want {args[1]}), not ok: {bad}")
    sys.exit(0 if len(rules) == int(args[1]) and not bad else 1)
elif command == "value":              # query, labels k=v...: prints the one matching series' value
    want = dict(a.split("=", 1) for a in args[1:])
    found = [s for s in get("/api/v1/query", query=args[0])["result"] if all(s["metric"].get(k) == v for k, v in want.items())]
    print(found[0]["value"][1] if len(found) == 1 else f"{len(found)} series match {want}")
elif command == "alert":              # state, alertname, labels k=v...: such an alert is in that state
    want = dict((a.split("=", 1) for a in args[2:]), alertname=args[1])
    alerts = get("/api/v1/alerts")["alerts"]
    print([(a["labels"], a["state"]) for a in alerts])
    sys.exit(0 if any(a["state"] == args[0] and all(a["labels"].get(k) == v for k, v in want.items()) for a in alerts) else 1)
elif command == "dashboard":          # file: every panel query evaluates (variables filled in)
    def exprs(node):
        if isinstance(node, dict):
            if isinstance(node.get("expr"), str):
                yield node["expr"]
            for v in node.values():
                yield from exprs(v)
        elif isinstance(node, list):
            for v in node:
                yield from exprs(v)
    queries = list(exprs(json.load(open(args[0]))["panels"]))
    errors = []
    for q in queries:
        q = q.replace("$__rate_interval", "1m").replace("$job", ".*").replace("$instance", ".*")
        try:
            get("/api/v1/query", query=q)
        except Exception as e:  # an invalid query answers 400
            errors.append(f"{q}: {e}")
    print(f"{len(queries)} queries, {len(errors)} invalid", *errors, sep="\n")
    sys.exit(0 if queries and not errors else 1)
PYEOF
python3 -m py_compile "$work/api.py" || { fail "the API helper does not compile"; finish; }

# The receiver: a free port for notifications and one for /metrics, both printed.
mkdir -p "$work/config" "$work/data"
XDG_CONFIG_HOME=$work/config XDG_DATA_HOME=$work/data "$bin" receive --host 127.0.0.1 --port 0 --metrics-port 0 \
  --db "$work/audit.sqlite" --bundle-id com.example.receiptdash >"$work/receive.out" 2>"$work/receive.err" &
receiver_pid=$!
receiver_urls() { grep -q '/notifications' "$work/receive.out" && grep -q '/metrics' "$work/receive.out"; }
if poll 60 receiver_urls; then
  pass "receiver started ($(grep -o 'http://[0-9.:]*/notifications' "$work/receive.out"))"
else
  fail "receiver did not print its URLs" "$work/receive.err"; finish
fi
post_url=$(grep -o 'http://[0-9.:]*/notifications' "$work/receive.out" | head -n 1)
metrics_url=$(grep -o 'http://[0-9.:]*/metrics' "$work/receive.out" | head -n 1)
metrics_target=${metrics_url#http://}
metrics_target=${metrics_target%/metrics}

# Prometheus: scrape and evaluate every second, the real rule file.
prometheus_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $PWD/deploy/prometheus/receiptdash-alerts.yml
scrape_configs:
  - job_name: receiptdash
    static_configs:
      - targets: ['$metrics_target']
YAML
"$prometheus" --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prometheus_port" >"$work/prometheus.log" 2>&1 &
prometheus_pid=$!
api="http://127.0.0.1:$prometheus_port"
q() { python3 "$work/api.py" "$api" "$@"; }

if poll 60 curl -sf "$api/-/ready"; then pass "prometheus ready on 127.0.0.1:$prometheus_port"; else fail "prometheus not ready" "$work/prometheus.log"; finish; fi
if poll 60 q target-up receiptdash; then pass "target receiptdash ($metrics_target) is up"; else fail "target receiptdash not up" "$work/last"; fi
rules=$(grep -c '^ *- alert:' deploy/prometheus/receiptdash-alerts.yml)
if poll 60 q rules-ok receiptdash "$rules"; then pass "group receiptdash: all $rules rules loaded, health ok, no lastError"; else fail "rules not all loaded and healthy" "$work/last"; fi

# Traffic: one request of two refusal classes, then not-json bodies, a few each half second,
# until the refusal ratio alert is pending for not-json (its `for` is 5m: it goes pending, it
# does not fire within the test). Posting goes on across scrapes because a counter's first
# sample only starts its rate.
status() { curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' --data "$1" "$post_url"; }
other=0
[ "$(status '{"x": 1}')" = 400 ] && other=$((other + 1))
[ "$(status '{"signedPayload": "abc"}')" = 400 ] && other=$((other + 1))
not_json=0
refusals_pending() {
  for _ in 1 2 3 4 5; do [ "$(status 'hello')" = 400 ] && not_json=$((not_json + 1)); done
  q alert pending ReceiptdashRefusalRatioHigh reason=not-json severity=ticket
}
deadline=$(( $(date +%s) + 60 ))
[ "$deadline" -le "$run_deadline" ] || deadline=$run_deadline
until refusals_pending >"$work/last" 2>&1; do
  [ "$(date +%s)" -ge "$deadline" ] && break
  sleep 0.5
done
if q alert pending ReceiptdashRefusalRatioHigh reason=not-json severity=ticket >"$work/last" 2>&1; then
  pass "ReceiptdashRefusalRatioHigh{reason=\"not-json\"} pending after $not_json not-json requests"
else
  fail "ReceiptdashRefusalRatioHigh not pending for not-json" "$work/last"
fi
[ "$other" = 2 ] || fail "the receiver did not answer 400 to the two malformed requests"

# The counters as scraped: every refusal, with its exact reason (posting has stopped).
scraped() { # reason, count
  [ "$(q value receiptdash_notification_refusals_total job=receiptdash "reason=$1")" = "$2" ]
}
for expect in "not-json $not_json" "not-a-notification 1" "undecodable 1"; do
  set -- $expect
  if poll 60 scraped "$1" "$2"; then
    pass "receiptdash_notification_refusals_total{reason=\"$1\"} = $2 in Prometheus"
  else
    fail "receiptdash_notification_refusals_total{reason=\"$1\"} is $(q value receiptdash_notification_refusals_total "reason=$1" 2>&1 | tail -n 1), want $2"
  fi
done
total=$((not_json + 2))
if poll 60 eval '[ "$(q value "sum(receiptdash_notifications_total{outcome=\"bad-request\"})")" = "$total" ]'; then
  pass "receiptdash_notifications_total{outcome=\"bad-request\"} = $total in Prometheus"
else
  fail "receiptdash_notifications_total{outcome=\"bad-request\"} not $total" "$work/last"
fi

if q dashboard deploy/grafana/receiptdash.json >"$work/last" 2>&1; then
  pass "every query of deploy/grafana/receiptdash.json is valid PromQL ($(head -n 1 "$work/last"))"
else
  fail "dashboard queries" "$work/last"
fi

# The receiver stops: its target goes down and the down alert goes pending (its `for` is 2m).
stop "$receiver_pid"; receiver_pid=""
if poll 60 q alert pending ReceiptdashReceiverDown job=receiptdash "instance=$metrics_target" severity=page; then
  pass "ReceiptdashReceiverDown pending once the receiver stopped"
else
  fail "ReceiptdashReceiverDown not pending" "$work/last"
fi
finish
