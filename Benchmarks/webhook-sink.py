#!/usr/bin/env python3
"""A downstream for the forwarding benchmark: an HTTP/1.1 keep-alive server on loopback that
checks each delivery's Standard Webhooks signature and counts unique webhook-ids, duplicates
and bad signatures. On SIGTERM it writes one JSON line of totals to stdout.

usage: webhook-sink.py PORT SECRET_FILE [READY_FILE]
(SINK_VERBOSE=1: a line per delivery; SINK_STATUS=503: answer that instead of 204;
SINK_SECONDS=N: stop after N seconds)
"""
import asyncio, base64, hashlib, hmac, json, os, signal, sys

port, secret_file = int(sys.argv[1]), sys.argv[2]
ready = sys.argv[3] if len(sys.argv) > 3 else None
verbose = os.environ.get("SINK_VERBOSE") == "1"  # a line per delivery, for tests
status = int(os.environ.get("SINK_STATUS", "204"))  # what every delivery is answered (tests: 503)
answer = f"HTTP/1.1 {status} {'No Content' if status == 204 else 'Status'}\r\ncontent-length: 0\r\n\r\n".encode()
key = base64.b64decode(open(secret_file).read().strip()[len("whsec_"):])
seen, totals = set(), {"requests": 0, "unique": 0, "duplicates": 0, "bad_signature": 0}


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
            self.transport.write(answer)

    def handle(self, headers, body):
        totals["requests"] += 1
        wid, ts = headers.get("webhook-id", ""), headers.get("webhook-timestamp", "")
        mac = hmac.new(key, f"{wid}.{ts}.".encode() + body, hashlib.sha256).digest()
        expected = "v1," + base64.b64encode(mac).decode()
        good = expected in headers.get("webhook-signature", "").split(" ")
        if not good:
            totals["bad_signature"] += 1
        if verbose:
            print(f"delivered {wid} signature {'ok' if good else 'bad'}", flush=True)
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
    if os.environ.get("SINK_SECONDS"):  # tests: end on its own, so a reader never waits forever
        loop.call_later(float(os.environ["SINK_SECONDS"]), lambda: stop.done() or stop.set_result(None))
    if ready:
        open(ready, "w").write("ready\n")
    await stop
    server.close()
    print(json.dumps(totals), flush=True)


asyncio.run(main())
