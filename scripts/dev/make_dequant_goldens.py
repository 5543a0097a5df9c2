#!/usr/bin/env python3
"""Write golden dequantization data for tests/kernels/dequant_test.cpp.

The expected values come from an independent implementation: the numpy dequantization in the
`gguf` Python package (gguf-py, the llama.cpp project's reference), a development-time tool only.

For each type: a few blocks of random bytes whose fp16 scale/min fields are forced to finite
values (exponent field not all ones), so every expected output is finite. F16 and BF16 take
random finite 16-bit patterns plus hand-picked edge cases (zeros, subnormals, extremes).

File format, tests/data/dequant/<TYPE>.bin, all little-endian:
    char[4]  magic "FQG1"
    u32      ggml type number (as in src/fasa/core/dtype.h)
    u32      block_elems   (1 for F32/F16/BF16)
    u32      block_bytes
    u32      n_blocks
    u8       blocks[n_blocks * block_bytes]       the raw tensor bytes, one row
    f32      expected[n_blocks * block_elems]    gguf.quants.dequantize of those bytes

Usage: python3 scripts/dev/make_dequant_goldens.py [out_dir]   (default tests/data/dequant)
"""

import struct
import sys
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

SEED = 20240601

# name -> (type, block_elems, block_bytes, n_blocks, byte offsets of fp16 fields in a block)
TYPES = {
    "F32": (T.F32, 1, 4, 64, []),
    "F16": (T.F16, 1, 2, 256, []),
    "BF16": (T.BF16, 1, 2, 256, []),
    "Q4_0": (T.Q4_0, 32, 18, 8, [0]),
    "Q4_1": (T.Q4_1, 32, 20, 8, [0, 2]),
    "Q5_0": (T.Q5_0, 32, 22, 8, [0]),
    "Q5_1": (T.Q5_1, 32, 24, 8, [0, 2]),
    "Q8_0": (T.Q8_0, 32, 34, 8, [0]),
    "Q6_K": (T.Q6_K, 256, 210, 4, [208]),
    "Q2_K": (T.Q2_K, 256, 84, 4, [80, 82]),
    "Q3_K": (T.Q3_K, 256, 110, 4, [108]),
    "Q4_K": (T.Q4_K, 256, 144, 4, [0, 2]),
    "Q5_K": (T.Q5_K, 256, 176, 4, [0, 2]),
}

F16_EDGES = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF,
             0x3555, 0x0200]
BF16_EDGES = [0x0000, 0x8000, 0x0001, 0x007F, 0x0080, 0x3F80, 0xBF80, 0x7F7F, 0xFF7F, 0x4049]


def finite_f16_bits(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random fp16 bit patterns with every exponent value except 31 (inf/NaN)."""
    bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint32).astype(np.uint16)
    bad = (bits & 0x7C00) == 0x7C00
    bits[bad] &= np.uint16(0xBFFF)  # clear the top exponent bit: exponent 31 -> 15
    return bits


def finite_bf16_bits(rng: np.random.Generator, n: int) -> np.ndarray:
    bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint32).astype(np.uint16)
    bad = (bits & 0x7F80) == 0x7F80
    bits[bad] &= np.uint16(0xBFFF)  # exponent 255 -> 127
    return bits


def make_raw(name: str, rng: np.random.Generator) -> np.ndarray:
    qtype, block_elems, block_bytes, n_blocks, f16_offsets = TYPES[name]
    if name == "F32":
        vals = rng.standard_normal(n_blocks).astype(np.float32) * np.float32(3.0)
        vals[:4] = [0.0, -0.0, 1e-40, -3.4e38]  # zeros, a subnormal, a large value
        return vals.view(np.uint8)
    if name == "F16":
        bits = finite_f16_bits(rng, n_blocks)
        bits[: len(F16_EDGES)] = F16_EDGES
        return bits.view(np.uint8)
    if name == "BF16":
        bits = finite_bf16_bits(rng, n_blocks)
        bits[: len(BF16_EDGES)] = BF16_EDGES
        return bits.view(np.uint8)
    blocks = rng.integers(0, 256, size=(n_blocks, block_bytes), dtype=np.uint32).astype(np.uint8)
    for off in f16_offsets:
        blocks[:, off:off + 2] = finite_f16_bits(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
    return blocks.reshape(-1)


def main() -> None:
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("tests/data/dequant")
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    total = 0
    for name, (qtype, block_elems, block_bytes, n_blocks, _) in TYPES.items():
        raw = make_raw(name, rng)
        assert raw.size == n_blocks * block_bytes
        expected = np.asarray(quants.dequantize(raw, qtype), dtype=np.float32).reshape(-1)
        assert expected.size == n_blocks * block_elems, name
        assert np.all(np.isfinite(expected)), name
        payload = (b"FQG1" + struct.pack("<4I", int(qtype), block_elems, block_bytes, n_blocks)
                   + raw.tobytes() + expected.astype("<f4").tobytes())
        path = out_dir / f"{name}.bin"
        path.write_bytes(payload)
        total += len(payload)
        print(f"{path}: {n_blocks} blocks, {len(payload)} bytes")
    print(f"total {total} bytes")


if __name__ == "__main__":
    main()
