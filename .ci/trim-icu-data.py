#!/usr/bin/env python3
"""Writes a smaller copy of the ICU data that Foundation links into a static binary (34 MB of
the release binary's 97 MB): the root and English locales only, without the legacy charset
converters, transliterators and word-break dictionaries. receiptdash formats dates, numbers and
text in the POSIX locale and English only, so what it prints is unchanged (.ci/standalone.sh
compares the trimmed binary's output with the development build's).

    trim-icu-data.py LIB_FOUNDATION_ICU.a OUT_DIR

Writes OUT_DIR/icudata.s, defining `__wrap_icudtNN_dat` from OUT_DIR/icudtNNl.dat, and
OUT_DIR/symbol (`icudtNN_dat`). The Makefile assembles it and links with `--wrap=icudtNN_dat`:
ICU's one reference to its data then names this copy, and the library's 34 MB member is never
taken. The package format is ICU's common data: a header, a table of contents (name and data
offsets), the items, each 16-byte aligned."""
import os, re, struct, subprocess, sys

KEEP_LOCALES = {"root", "en", "en_US", "en_US_POSIX", "en_001"}
LOCALE = re.compile(r"^[a-z]{2,3}(_[A-Za-z0-9]+)*$")
DROP_DIRS = {"translit"}


def keep(name):
    parts = name.split("/")[1:]  # the first part is the package name (icudt76l)
    base = parts[-1]
    stem, _, ext = base.rpartition(".")
    if parts[0] in DROP_DIRS:
        return False
    if ext == "cnv":  # legacy charset converters: receiptdash reads and writes UTF-8 only
        return False
    if ext == "dict":  # CJK, Thai, Lao, Khmer, Burmese word-break dictionaries
        return False
    if ext == "res" and LOCALE.match(stem):
        return stem in KEEP_LOCALES
    return True


def main():
    library, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    members = subprocess.check_output(["ar", "t", library], text=True).split()
    member = next(m for m in members if m.startswith("icu_packaged_data"))
    subprocess.check_call(["ar", "x", library, member], cwd=out)
    symbols = subprocess.check_output(["nm", os.path.join(out, member)], text=True).split()
    symbol = next(s for s in symbols if re.fullmatch(r"icudt\d+_dat", s))
    raw = os.path.join(out, "full.dat")
    subprocess.check_call(["objcopy", "-O", "binary", "--only-section=.rodata", os.path.join(out, member), raw])
    data = open(raw, "rb").read()
    header_size = struct.unpack_from("<H", data, 0)[0]
    assert data[2:4] == b"\xda\x27", "not ICU common data"
    count = struct.unpack_from("<I", data, header_size)[0]
    entries = [struct.unpack_from("<II", data, header_size + 4 + 8 * i) for i in range(count)]
    names = [data[header_size + n:data.index(b"\0", header_size + n)].decode() for n, _ in entries]
    ends = [offset for _, offset in entries[1:]] + [len(data) - header_size]
    items = [(name, data[header_size + start:header_size + end]) for name, (_, start), end in zip(names, entries, ends) if keep(name)]

    # The new table of contents: names first, then the items, each aligned to 16 bytes.
    toc_size = 4 + 8 * len(items)
    name_blob = b"".join(name.encode() + b"\0" for name, _ in items)
    body_start = (toc_size + len(name_blob) + 15) & ~15
    toc, body, name_offset = [], bytearray(), toc_size
    for name, item in items:
        toc.append((name_offset, body_start + len(body)))
        name_offset += len(name) + 1
        body += item
        body += b"\0" * (-len(body) % 16)
    package = bytearray(data[:header_size])
    package += struct.pack("<I", len(items))
    for n, d in toc:
        package += struct.pack("<II", n, d)
    package += name_blob
    package += b"\0" * (header_size + body_start - len(package))
    package += body
    name = f"{symbol[:-len('_dat')]}l.dat"
    open(os.path.join(out, name), "wb").write(package)
    wrapped = "__wrap_" + symbol
    with open(os.path.join(out, "icudata.s"), "w") as f:
        f.write(f'\t.section .rodata\n\t.globl {wrapped}\n\t.type {wrapped}, @object\n\t.balign 16\n{wrapped}:\n'
                f'\t.incbin "{os.path.abspath(os.path.join(out, name))}"\n\t.size {wrapped}, . - {wrapped}\n'
                f'\t.section .note.GNU-stack,"",@progbits\n')
    open(os.path.join(out, "symbol"), "w").write(symbol + "\n")
    os.remove(os.path.join(out, member))
    os.remove(raw)
    print(f"{symbol}: {len(data) / 1e6:.1f} MB, {count} items -> {len(package) / 1e6:.1f} MB, {len(items)} items")


main()
