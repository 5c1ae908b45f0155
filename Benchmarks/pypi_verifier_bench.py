"""Times apple-purchase-receipt-verifier (PyPI) on the receipts `receiptdash bench --verify` uses.

Usage: python pypi_verifier_bench.py SECONDS CREATION_JSON FILE...
       python pypi_verifier_bench.py serve CREATION_JSON FILE...

With `serve` it reads a number of seconds per line on standard input and verifies receipts for
that long, going on from where the last slice stopped, then prints `COUNT ELAPSED` (a harness
interleaves these slices with its other measurements, so the machine's drift falls on both).

FILEs are PKCS#7 receipts (.der or .b64). CREATION_JSON maps each path to its receipt creation
time in epoch milliseconds: the package judges certificates at its clock, and every Apple
intermediate in these receipts has expired since, so each receipt gets a verifier whose clock
is pinned to its creation time, as receiptdash judges it.
"""
import base64
import json
import sys
import time

from apple_purchase_receipt_verifier import Config, Verifier


def load(path):
    data = open(path, "rb").read()
    if path.endswith(".der"):
        return base64.b64encode(data).decode()
    return b"".join(data.split()).decode()


def main():
    serve = sys.argv[1] == "serve"
    seconds = 0.0 if serve else float(sys.argv[1])
    creation = json.loads(sys.argv[2])  # {path: creation epoch ms}
    paths = sys.argv[3:]
    receipts = [(p, load(p)) for p in paths]
    verifiers = {}
    for path, _ in receipts:
        ms = creation.get(path)
        if ms not in verifiers:
            verifiers[ms] = Verifier(Config(clock=(lambda ms=ms: ms))) if ms else Verifier(Config())
    ok = [(p, r, verifiers[creation.get(p)]) for p, r in receipts if verifiers[creation.get(p)].verify_receipt(r).verified]
    print(f"apple-purchase-receipt-verifier: {len(ok)} of {len(receipts)} receipts verify")
    if not ok:
        return
    if serve:
        sys.stdout.flush()
        position = 0
        for line in sys.stdin:
            slice_seconds = float(line)
            count = 0
            start = time.perf_counter()
            while time.perf_counter() - start < slice_seconds:
                _, receipt, verifier = ok[position]
                verifier.verify_receipt(receipt)
                position = (position + 1) % len(ok)
                count += 1
            print(f"{count} {time.perf_counter() - start:.6f}", flush=True)
        return
    count = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _, receipt, verifier in ok:
            verifier.verify_receipt(receipt)
            count += 1
    elapsed = time.perf_counter() - start
    print(f"apple-purchase-receipt-verifier: verified {count} receipts in {elapsed:.2f} s: {count / elapsed:.0f} receipts/s (one thread)")


if __name__ == "__main__":
    main()
