#!/usr/bin/env python3
"""Writes the commit a binary was built from into it (the `receiptdash-build-commit:` stamp of
Sources/CBuildStamp), so `receiptdash --version` names it. Usage: stamp-commit.py BINARY COMMIT.
The stamp is in a writable data section: stripping keeps it, and nothing is rebuilt or relinked."""
import sys

MARKER = b"receiptdash-build-commit:"
SIZE = 96

path, commit = sys.argv[1], sys.argv[2]
data = bytearray(open(path, "rb").read())
at = data.find(MARKER + b"unknown\0")
if at < 0:
    at = data.find(MARKER)  # stamped before: stamp again
if at < 0 or data.find(MARKER, at + 1) >= 0:
    sys.exit(f"{path}: no single build stamp found")
value = MARKER + commit.encode("ascii")
if len(value) >= SIZE:
    sys.exit(f"commit text too long for the stamp: {commit!r}")
data[at:at + SIZE] = value + b"\0" * (SIZE - len(value))
open(path, "wb").write(bytes(data))
