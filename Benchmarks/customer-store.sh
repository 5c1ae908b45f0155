#!/usr/bin/env bash
# Builds an audit trail the size of a busy app's and times `customer --offline` on it.
#
#   Benchmarks/customer-store.sh [BIN] [PG_URL]
#
# BIN: the receiptdash to measure (default .build-release/release/receiptdash, or
# .build/release/receiptdash). PG_URL: a scratch PostgreSQL database (postgres://…, password
# from PGPASSWORD or ~/.pgpass; e.g. `eval "$(Tests/support/postgres.sh start)"` and
# $RECEIPTDASH_TEST_POSTGRES_URL) to build the same trail in and measure too.
#
# The trail: NOTIFICATIONS notifications (default 1,000,000: 100,000 customers of ten each,
# each with an app transaction id, an app account token and one original transaction), RECEIPTS
# receipts (default 100,000: one per customer, three purchases each, verified), and an
# extension sent for one customer in ten. Every notification carries the same 1.3 kB payload.
#
# It prints, per store: `bench --customer-db` (the whole offline path, the trail's reads, the
# story and its JSON, in turns with a bare indexed SELECT of the same rows, p50/p95 of 200 runs,
# and every query's plan), then hyperfine of the whole command, process start included.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-}
if [ -z "$BIN" ]; then
    for candidate in .build-release/release/receiptdash .build/release/receiptdash; do
        if [ -x "$candidate" ]; then BIN=$candidate; break; fi
    done
fi
[ -x "${BIN:-}" ] || { echo "no receiptdash binary: swift build -c release, or name one" >&2; exit 64; }
PG_URL=${2:-}
N=${NOTIFICATIONS:-1000000}
R=${RECEIPTS:-100000}
C=$((N / 10))
WORK=${WORK:-$(mktemp -d)}
DB=$WORK/trail.sqlite
echo "building a trail of $N notifications, $R receipts in $WORK"

# One payload for every row: a DID_RENEW whose transaction and renewal info decode (unsigned).
PAYLOAD=$(python3 - <<'EOF'
import base64, json
def part(obj): return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).rstrip(b"=").decode()
def jws(obj): return part({"alg": "ES256", "x5c": []}) + "." + part(obj) + ".c2ln"
t = {"transactionId": "3000000000000001", "originalTransactionId": "2000000000000000", "productId": "com.example.bench.monthly",
     "type": "Auto-Renewable Subscription", "purchaseDate": 1700000000000, "expiresDate": 1702592000000, "environment": "Production",
     "subscriptionGroupIdentifier": "21000001", "transactionReason": "RENEWAL", "storefront": "USA", "currency": "USD", "price": 4990,
     "appTransactionId": "704000000000000000", "appAccountToken": "00000000-0000-4000-8000-000000000000"}
r = {"originalTransactionId": "2000000000000000", "productId": "com.example.bench.monthly", "autoRenewProductId": "com.example.bench.monthly",
     "autoRenewStatus": 1, "environment": "Production", "renewalDate": 1702592000000}
print(jws({"notificationType": "DID_RENEW", "notificationUUID": "bench", "version": "2.0", "signedDate": 1700000000000,
           "data": {"environment": "Production", "bundleId": "com.example.bench", "signedTransactionInfo": jws(t), "signedRenewalInfo": jws(r)}}))
EOF
)

# The rows, in SQL both databases take but for two words: DIALECT is sqlite or postgres.
series() {  # series NAME LAST: the integers 0...LAST as column NAME
    if [ "$DIALECT" = sqlite ]; then
        echo "(WITH RECURSIVE s($1) AS (SELECT 0 UNION ALL SELECT $1 + 1 FROM s WHERE $1 < $2) SELECT $1 FROM s)"
    else
        echo "generate_series(0, $2) AS s($1)"
    fi
}
token() {  # token EXPR: customer EXPR's app account token
    if [ "$DIALECT" = sqlite ]; then echo "printf('%08d', $1) || '-0000-4000-8000-000000000000'"
    else echo "lpad(($1)::text, 8, '0') || '-0000-4000-8000-000000000000'"; fi
}
rows_sql() {
    cat <<EOF
INSERT INTO notification (notification_uuid, version, notification_type, bundle_id, environment, signed_date, received_at,
    last_received_at, deliveries, verdict, transaction_id, original_transaction_id, product_id, signed_payload, app_account_token,
    app_transaction_id)
SELECT 'n-' || i, '2', CASE WHEN i % 10 = 0 THEN 'SUBSCRIBED' ELSE 'DID_RENEW' END, 'com.example.bench', 'Production',
    1700000000 + i * 30, 1700000001 + i * 30, 1700000001 + i * 30, 1, 'valid', CAST(3000000000000000 + i AS TEXT),
    CAST(2000000000000000 + i / 10 AS TEXT), 'com.example.bench.monthly', '$PAYLOAD', $(token "i / 10"), CAST(704000000000000000 + i / 10 AS TEXT)
FROM $(series i $((N - 1)));
INSERT INTO receipt (content_hash, format, bundle_id, environment, first_seen, last_seen, state, status, status_environment, verified_at)
SELECT 'h' || c, 'pkcs7', 'com.example.bench', 'Production', 1700000000 + c, 1700000000 + c, 'done', 0, 'Production', 1700000100 + c
FROM $(series c $((R - 1)));
INSERT INTO sighting (receipt_id, source_kind, source, seen_at) SELECT id, 'file', 'receipts/' || content_hash, first_seen FROM receipt;
INSERT INTO purchase (receipt_id, source, product_id, transaction_id, original_transaction_id, quantity, purchase_date, expires_date,
    app_transaction_id, app_account_token)
SELECT r.id, 'in_app', 'com.example.bench.monthly', CAST(3000000000000000 + (r.id - 1) * 10 + k.k AS TEXT), CAST(2000000000000000 + r.id - 1 AS TEXT),
    1, 1700000000 + ((r.id - 1) * 10 + k.k) * 30, 1702592000 + ((r.id - 1) * 10 + k.k) * 30, CAST(704000000000000000 + r.id - 1 AS TEXT),
    upper($(token "r.id - 1"))
FROM receipt r CROSS JOIN (SELECT 0 AS k UNION ALL SELECT 1 UNION ALL SELECT 2) k;
INSERT INTO api_action (at, os_user, action, environment, request_id, original_transaction_id, product_id, request_body, http_status, result)
SELECT 1750000000 + c, 'bench', 'extend', 'Production', 'bench-' || c, CAST(2000000000000000 + c AS TEXT), 'com.example.bench.monthly',
    '{"extendByDays":3}', 200, 'success'
FROM $(series c $((C - 1))) WHERE c % 10 = 0;
EOF
}

MIDDLE=$((C / 2))
TX=$((3000000000000000 + MIDDLE * 10 + 5))
TOKEN=$(printf '%08d-0000-4000-8000-000000000000' "$MIDDLE")

measure() {
    local db=$1
    "$BIN" bench --customer-db "$db" --customer-transaction-id "$TX" --customer-token "$TOKEN" --runs 200
    if command -v hyperfine > /dev/null; then
        hyperfine -N --warmup 5 --runs 50 --style basic \
            "$BIN customer --offline --transaction-id $TX --db $db --format json" \
            "$BIN customer --offline --app-account-token $TOKEN --db $db --format json"
    fi
}

start=$(date +%s)
"$BIN" db migrate --db "$DB" > /dev/null
DIALECT=sqlite
{
    echo "PRAGMA journal_mode = WAL; BEGIN;"
    rows_sql
    echo "COMMIT; ANALYZE;"
} | sqlite3 "$DB"
echo "SQLite: built in $(($(date +%s) - start)) s, $(du -h "$DB" | cut -f1)"
measure "$DB"

if [ -n "$PG_URL" ]; then
    start=$(date +%s)
    "$BIN" db migrate --db "$PG_URL" > /dev/null
    DIALECT=postgres
    {
        echo "BEGIN;"
        rows_sql
        echo "COMMIT; ANALYZE;"
    } | psql -q -v ON_ERROR_STOP=1 "$PG_URL"
    echo "PostgreSQL: built in $(($(date +%s) - start)) s"
    measure "$PG_URL"
fi
