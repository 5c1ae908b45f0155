#!/usr/bin/env python3
"""Slow readers and idle sockets for Benchmarks/receiver-slow-readers.sh, with /health probes.

From --source (a loopback address of the attacker's own, 127.0.0.2 by default): --readers
sockets that pipeline 660 KB of `GET /health` and never read an answer, and --idle sockets that
connect and send nothing; each reconnects one second after the server cuts it off. From
127.0.0.1 (the genuine side): a fresh `GET /health` every --probe-every seconds, timed from
connect to the status line. Talks only to the given loopback port, stops after --seconds, prints
one JSON line: the probes' p50/p99 (ms), their statuses, and how often the attackers were cut off.
--role attack or --role probe runs one side alone: the benchmark runs the probes in a process of
their own, so the attackers' own event loop (2,000 coroutines) never delays a probe's timing.
"""
import argparse
import asyncio
import json
import socket
import time

REQUEST = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
FLOOD = REQUEST * (660_000 // len(REQUEST))


async def connect(host, port, source, rcvbuf=None):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    if rcvbuf:
        # A small receive window: the answers it never reads fill it at once.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.bind((source, 0))
    await asyncio.get_running_loop().sock_connect(sock, (host, port))
    return sock


async def slow_reader(host, port, source, deadline, stats):
    """Pipelines requests and never reads; reconnects a second after the server cuts it off."""
    loop = asyncio.get_running_loop()
    while time.monotonic() < deadline:
        try:
            sock = await connect(host, port, source, rcvbuf=4096)
        except OSError:
            stats["connect_failed"] += 1
            await asyncio.sleep(1)
            continue
        stats["opened"] += 1
        try:
            while time.monotonic() < deadline:
                await asyncio.wait_for(loop.sock_sendall(sock, FLOOD), max(0.1, deadline - time.monotonic()))
        except (OSError, asyncio.TimeoutError) as error:
            if not isinstance(error, asyncio.TimeoutError):
                stats["cut_off"] += 1
        finally:
            sock.close()
        await asyncio.sleep(1)


async def idle_socket(host, port, source, deadline, stats):
    """Connects and sends nothing; reconnects a second after the server closes it."""
    loop = asyncio.get_running_loop()
    while time.monotonic() < deadline:
        try:
            sock = await connect(host, port, source)
        except OSError:
            stats["connect_failed"] += 1
            await asyncio.sleep(1)
            continue
        stats["opened"] += 1
        try:
            # Nothing comes but the server's close.
            await asyncio.wait_for(loop.sock_recv(sock, 1), max(0.1, deadline - time.monotonic()))
            stats["cut_off"] += 1
        except OSError:
            stats["cut_off"] += 1
        except asyncio.TimeoutError:
            pass
        finally:
            sock.close()
        await asyncio.sleep(1)


async def probe(host, port, timeout=5.0):
    """A fresh GET /health from 127.0.0.1: (status, ms from connect to the status line)."""
    started = time.monotonic()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, local_addr=("127.0.0.1", 0)), timeout)
    except Exception:
        return "connect-failed", (time.monotonic() - started) * 1000
    try:
        writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), timeout)
        parts = line.split()
        status = parts[1].decode() if len(parts) > 1 else "no-answer"
    except Exception:
        status = "timeout-or-error"
    finally:
        writer.close()
    return status, (time.monotonic() - started) * 1000


async def probes(host, port, deadline, every, results):
    while time.monotonic() < deadline:
        started = time.monotonic()
        results.append(await probe(host, port))
        await asyncio.sleep(max(0.0, every - (time.monotonic() - started)))


def percentile(values, p):
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))], 2)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--source", default="127.0.0.2")
    parser.add_argument("--seconds", type=float, default=25)
    parser.add_argument("--readers", type=int, default=1000)
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--probe-every", type=float, default=0.05)
    parser.add_argument("--warm-up", type=float, default=3, help="seconds of attack before the probes start")
    parser.add_argument("--role", choices=["both", "attack", "probe"], default="both")
    args = parser.parse_args()
    if not args.host.startswith("127.") or not args.source.startswith("127."):
        raise SystemExit("loopback only")
    deadline = time.monotonic() + args.seconds
    readers = {"opened": 0, "cut_off": 0, "connect_failed": 0}
    idle = {"opened": 0, "cut_off": 0, "connect_failed": 0}
    results: list = []
    attack = []
    if args.role != "probe":
        attack = [slow_reader(args.host, args.port, args.source, deadline, readers) for _ in range(args.readers)]
        attack += [idle_socket(args.host, args.port, args.source, deadline, idle) for _ in range(args.idle)]

    async def probing():
        if args.role == "attack":
            return
        await asyncio.sleep(args.warm_up)
        await probes(args.host, args.port, deadline, args.probe_every, results)

    await asyncio.gather(*attack, probing())
    latencies = [ms for status, ms in results if status == "200"]
    statuses: dict = {}
    for status, _ in results:
        statuses[status] = statuses.get(status, 0) + 1
    print(json.dumps({
        "health": {"probes": len(results), "statuses": statuses, "p50_ms": percentile(latencies, 50),
                   "p99_ms": percentile(latencies, 99), "max_ms": percentile(latencies, 100)},
        "slow_readers": readers, "idle_sockets": idle,
    }, sort_keys=True))


asyncio.run(main())
