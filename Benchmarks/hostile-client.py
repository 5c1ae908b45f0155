#!/usr/bin/env python3
"""A loopback attacker for Benchmarks/receiver-hostile.sh: while the simulator's sender posts
genuine-shaped notifications, this mixes forged V1 bodies, unsigned x5c bombs, header-only
requests declaring a huge Content-Length, junk, a /health flood, and slow-loris sockets that
trickle a request head to hold a connection. It only talks to the given loopback port, stops by
itself after --seconds, and prints one JSON summary line.
"""
import argparse
import asyncio
import base64
import json
import time


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def bodies(bundle: str) -> dict:
    v1 = json.dumps({
        "notification_type": "REFUND", "bid": bundle, "environment": "PROD", "password": "guess",
        "unified_receipt": {"status": 0, "environment": "Production",
                            "latest_receipt_info": [{"transaction_id": "1", "original_transaction_id": "1",
                                                     "product_id": "pro"}]},
    }).encode()
    header = '{"alg":"ES256","x5c":[' + ",".join(['"AAAA"'] * 30000) + ']}'
    payload = json.dumps({"notificationType": "REFUND", "notificationUUID": "b0000000-0000-4000-8000-000000000000",
                          "signedDate": int(time.time() * 1000),
                          "data": {"bundleId": bundle, "environment": "Production"}})
    bomb = json.dumps({"signedPayload": b64url(header.encode()) + "." + b64url(payload.encode()) + ".AAAA"}).encode()
    return {"v1": v1, "bomb": bomb, "junk": b"this is not json {"}


async def request(host, port, source, raw: bytes, timeout=10.0) -> str:
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, local_addr=(source, 0)), timeout)
    except Exception:
        return "connect-failed"
    try:
        writer.write(raw)
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), timeout)
        parts = line.split()
        return parts[1].decode() if len(parts) > 1 else "no-answer"
    except Exception:
        return "error"
    finally:
        writer.close()


def post(path: str, body: bytes) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


async def flood(host, port, sources, deadline, rate, counts, payloads):
    kinds = ["v1", "bomb", "oversize", "junk", "health", "health", "junk", "v1"]
    n = 0
    start = time.monotonic()
    while time.monotonic() < deadline:
        kind = kinds[n % len(kinds)]
        source = sources[n % len(sources)]
        if kind == "health":
            raw = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        elif kind == "oversize":
            raw = (b"POST /notifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Content-Length: 500000000\r\nConnection: close\r\n\r\n")
        else:
            raw = post("/notifications", payloads[kind])
        status = await request(host, port, source, raw)
        key = f"{kind} {status}"
        counts[key] = counts.get(key, 0) + 1
        n += 1
        # Paced: `rate` requests a second from this worker.
        wait = start + n / rate - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)


async def slow_client(host, port, source, deadline, stats):
    """Holds a socket by trickling a request head; reconnects when the server cuts it off."""
    while time.monotonic() < deadline:
        try:
            reader, writer = await asyncio.open_connection(host, port, local_addr=(source, 0))
        except Exception:
            stats["connect_failed"] += 1
            await asyncio.sleep(1)
            continue
        stats["opened"] += 1
        writer.write(b"POST /notifications HTTP/1.1\r\nHost: x\r\n")
        try:
            while time.monotonic() < deadline:
                await writer.drain()
                # Wait for the server to close (EOF) or for the next trickle.
                try:
                    # Any answer, or EOF: the server ended this connection.
                    await asyncio.wait_for(reader.read(1024), 3.0)
                    stats["cut_off"] += 1
                    break
                except asyncio.TimeoutError:
                    writer.write(b"X-Slow: 1\r\n")
        except Exception:
            stats["cut_off"] += 1
        finally:
            writer.close()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--slow", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=25, help="requests a second per flood worker")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--bundle", default="com.example.receiptdash")
    args = parser.parse_args()
    if not args.host.startswith("127."):
        raise SystemExit("loopback only")
    sources = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]
    deadline = time.monotonic() + args.seconds
    payloads = bodies(args.bundle)
    counts: dict = {}
    stats = {"opened": 0, "cut_off": 0, "connect_failed": 0}
    tasks = [flood(args.host, args.port, sources[i % 4:] + sources[:i % 4], deadline, args.rate, counts, payloads)
             for i in range(args.workers)]
    tasks += [slow_client(args.host, args.port, sources[i % 4], deadline, stats) for i in range(args.slow)]
    await asyncio.gather(*tasks)
    print(json.dumps({"requests": counts, "slow_clients": stats}, sort_keys=True))


asyncio.run(main())
