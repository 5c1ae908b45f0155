# Sourced by compare-verify.sh and speed.sh: the PyPI peer apple-purchase-receipt-verifier and
# what its benchmark (pypi_verifier_bench.py) is given.

# peer_python: the peer installed in a virtual environment under $TMPDIR (made once); prints
# that environment's python.
peer_python() {
  local venv=${TMPDIR:-/tmp}/receiptdash-bench-venv
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet apple-purchase-receipt-verifier >&2
  fi
  echo "$venv/bin/python"
}

# peer_receipts BINARY VALID_ONLY PATH...: sets `files` (the receipts receiptdash reads under
# PATH, only those whose trust verdict is valid when VALID_ONLY is 1) and `creation` (JSON: each
# file's receipt creation time in epoch ms, the instant the peer's clock is pinned to, as
# receiptdash judges chains at it).
peer_receipts() {
  local binary=$1 valid_only=$2 path ms
  shift 2
  files=()
  creation="{"
  while IFS=$'\t' read -r path ms; do
    files+=("$path")
    creation+="\"$path\": $ms,"
  done < <("$binary" inspect --format json "$@" 2>/dev/null | python3 -c '
import json, sys, datetime
valid_only = sys.argv[1] == "1"
for item in json.load(sys.stdin):
    if valid_only and item.get("trust", {}).get("verdict") != "valid":
        continue
    created = item["receipt"]["receipt_creation_date"]
    ms = int(datetime.datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp() * 1000)
    print(item["source"] + "\t" + str(ms))
' "$valid_only")
  creation="${creation%,}}"
}
