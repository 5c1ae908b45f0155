#!/usr/bin/env python3
"""A downstream for the forwarding benchmark: an HTTP/1.1 keep-alive server on loopback that
checks each delivery's Standard Webhooks signature and counts unique webhook-ids, duplicates
and bad signatures. On SIGTERM it writes one JSON line of totals to stdout.

usage: webhook-sink.py PORT SECRET_FILE [READY_FILE]
"""
import asyncio, base64, hashlib, hmac, json, signal, sys, time

port, secret_file = int(sys.argv[1]), sys.argv[2]
ready = sys.argv[3] if len(sys.argv) > 3 else None
key = base64.b64decode(open(secret_file).read().strip()[len("whsec_"):])
seen, totals = set(), {"requests": 0, "unique": 0, "duplicates": 0, "bad_signature": 0}
lag_ms = []  # webhook-timestamp to arrival is too coarse (seconds); lag is measured by the receiver


class Sink(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport, self.buffer = transport, b""

    def data_received(self, data):
        self.buffer += data
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buffer[:head_end].decode("latin-1").split("\r\n")
            headers = {}
            for line in head[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0"))
            if len(self.buffer) < head_end + 4 + length:
                return
            body = self.buffer[head_end + 4 : head_end + 4 + length]
            self.buffer = self.buffer[head_end + 4 + length :]
            self.handle(headers, body)
            self.transport.write(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n")

    def handle(self, headers, body):
        totals["requests"] += 1
        wid, ts = headers.get("webhook-id", ""), headers.get("webhook-timestamp", "")
        mac = hmac.new(key, f"{wid}.{ts}.".encode() + body, hashlib.sha256).digest()
        expected = "v1," + base64.b64encode(mac).decode()
        if expected not in headers.get("webhook-signature", "").split(" "):
            totals["bad_signature"] += 1
        if wid in seen:
            totals["duplicates"] += 1
        else:
            seen.add(wid)
            totals["unique"] += 1


async def main():
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Sink, "127.0.0.1", port, backlog=1024)
    stop = loop.create_future()
    loop.add_signal_handler(signal.SIGTERM, stop.set_result, None)
    if ready:
        open(ready, "w").write("ready\n")
    await stop
    server.close()
    print(json.dumps(totals), flush=True)


asyncio.run(main())
