#!/usr/bin/env python3
"""Prints the metadata and tensor summary of a GGUF from its first bytes only: enough to judge a
model split into many PyPI wheels from part 1 alone (gguf.GGUFReader needs the whole file).

  python3 scripts/dev/gguf_partial_header.py PART1 [--part-bytes N] [--tensors]

Reads the header, every key/value pair (arrays and long strings are summarized) and the tensor
infos, then derives the parameter count, the tensor types and the full file size (data offset +
the end of the last tensor); with --part-bytes (the size of every part but the last) it also
prints how many parts the whole file needs. Development-time only.
"""
import argparse
import struct

# Scalar value types of GGUF metadata (type 8 = string, 9 = array).
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
           11: "<q", 12: "<d"}
# ggml type -> (name, elements per block, bytes per block)
TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
         6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 10: ("Q2_K", 256, 84),
         11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176),
         14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292), 30: ("BF16", 1, 2)}


class Reader:
    def __init__(self, data):
        self.b, self.o = data, 0

    def scalar(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.o)[0]
        self.o += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.scalar("<Q")
        if self.o + n > len(self.b):
            raise EOFError("the header is longer than the bytes given")
        s = self.b[self.o:self.o + n].decode("utf-8", "replace")
        self.o += n
        return s

    def value(self, t):
        if t in SCALARS:
            return self.scalar(SCALARS[t])
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.scalar("<I"), self.scalar("<Q")
            return [self.value(et) for _ in range(n)]
        raise ValueError("unknown GGUF value type %d" % t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--part-bytes", type=int, default=0)
    ap.add_argument("--tensors", action="store_true", help="list every tensor")
    args = ap.parse_args()
    with open(args.path, "rb") as f:
        r = Reader(f.read())
    if r.b[:4] != b"GGUF":
        raise SystemExit("not a GGUF file (magic %r)" % r.b[:4])
    r.o = 4
    version, n_tensors, n_kv = r.scalar("<I"), r.scalar("<Q"), r.scalar("<Q")
    print("GGUF v%d, %d tensors, %d keys" % (version, n_tensors, n_kv))
    kv = {}
    for _ in range(n_kv):
        key = r.string()
        kv[key] = v = r.value(r.scalar("<I"))
        if isinstance(v, list):
            print("  %s: array of %d, first %r" % (key, len(v), v[:6]))
        elif isinstance(v, str) and len(v) > 200:
            print("  %s: string of %d chars" % (key, len(v)))
        else:
            print("  %s: %r" % (key, v))
    n_params, counts, end = 0, {}, 0
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.scalar("<Q") for _ in range(r.scalar("<I"))]
        t, offset = r.scalar("<I"), r.scalar("<Q")
        tname, block, block_bytes = TYPES.get(t, ("type%d" % t, 0, 0))
        n = 1
        for d in dims:
            n *= d
        n_params += n
        counts[tname] = counts.get(tname, 0) + 1
        if block:
            end = max(end, offset + n // block * block_bytes)
        if args.tensors:
            print("  %-32s %-5s %s @%d" % (name, tname, "x".join(map(str, dims)), offset))
    align = kv.get("general.alignment", 32)
    data_start = (r.o + align - 1) // align * align
    total = data_start + end
    print("parameters %d; tensor types %s" % (n_params, counts))
    print("header %d bytes; data from %d; whole file %d bytes (%.3f GiB)"
          % (r.o, data_start, total, total / 2**30))
    if args.part_bytes:
        print("parts of %d bytes: %d" % (args.part_bytes, -(-total // args.part_bytes)))


if __name__ == "__main__":
    main()
