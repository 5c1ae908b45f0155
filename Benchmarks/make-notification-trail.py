#!/usr/bin/env python3
"""A SQLite audit trail holding COUNT notifications, for the benchmarks that need a big one.

Usage: make-notification-trail.py DB COUNT [CUSTOMERS]
The database must exist at the current schema (`receiptdash db migrate --db DB`). Rows are
SUBSCRIBED, DID_RENEW, OFFER_REDEEMED and REFUND notifications of CUSTOMERS original transactions
(default COUNT / 5), originals 2000000000000000 + n, spread over the last two years, so every
customer a realtime request names has a history the responder reads (months, offers, refunds).
"""
import random
import sqlite3
import sys
import time
import uuid

path, count = sys.argv[1], int(sys.argv[2])
customers = int(sys.argv[3]) if len(sys.argv) > 3 else max(1, count // 5)
now = time.time()
rng = random.Random(55)
db = sqlite3.connect(path)
db.execute("PRAGMA journal_mode = WAL")
db.execute("PRAGMA synchronous = OFF")
columns = "notification_uuid, version, notification_type, subtype, bundle_id, app_apple_id, environment, signed_date, received_at, " \
    "last_received_at, deliveries, verdict, transaction_id, original_transaction_id, product_id, peer"
insert = f"INSERT INTO notification ({columns}) VALUES ({', '.join('?' * 16)})"
types = ["DID_RENEW"] * 16 + ["OFFER_REDEEMED", "REFUND", "DID_CHANGE_RENEWAL_STATUS"]
batch = []
for n in range(count):
    customer = n % customers
    original = str(2_000_000_000_000_000 + customer)
    kind = "SUBSCRIBED" if n < customers else rng.choice(types)
    signed = now - rng.uniform(0, 2 * 365 * 86_400) if kind != "SUBSCRIBED" else now - 2 * 365 * 86_400 + customer
    transaction = str(3_000_000_000_000_000 + n)
    batch.append((str(uuid.UUID(int=rng.getrandbits(128), version=4)), "v2", kind, None, "com.example.receiptdash", 531412, "Sandbox",
                  signed, signed, signed, 1, "test", transaction, original, "com.example.monthly", "bench"))
    if len(batch) == 50_000:
        db.executemany(insert, batch)
        batch.clear()
db.executemany(insert, batch)
db.commit()
print(f"{count} notifications of {customers} customers in {path}")
