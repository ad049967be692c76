#!/usr/bin/env python3
"""Writes bench/manifests/unseen_mix.json: GEMMs drawn at random (fixed seed)
from the shape space the sm90 and sm80 families serve, none of them a suite
row, to check on a GPU that the selected plan is never slower than cuBLAS
beyond noise where nobody tuned for the shape:

  jitgemm-bench --manifest=bench/manifests/unseen_mix.json

`--space wide` draws from the whole space instead: M from 1 (decode) to 8192,
sizes off every tile and off 16-byte rows (odd N and K, padded leading
dimensions), K as short as 16, so the small-M family, the sm80 family and the
cuBLAS route are tried where the sm90 family cannot serve.

`--space wild` draws as wide does, then varies what the other spaces hold
fixed: fp32 inputs (with and without TF32), alpha, beta with a C of its own
type, layout and leading dimension (broadcast over batches), per-batch bias
vectors, and each problem's own options (pointer alignment, backend policy,
tuning policy, regime), so every route is checked for faults and wrong
results where nobody tuned for the problem.

`--d-layout col` writes every D (and C) column-major, with the same shapes as
the row-major draw of that seed, for the plans that compute such a D as its
transpose (docs/kernels.md).

Usage: scripts/make_unseen_manifest.py [--seed N] [--count N] [--space mid|wide|wild]
                                      [--d-layout row|col] [OUT]
"""
import argparse
import json
import random


def problem(rng, i, d_layout="row"):
    m = rng.choice([96, 200, 384, 640, 768, 1000, 1536, 2304, 3000])
    n = rng.choice([256, 520, 1280, 2048, 3000, 4608, 5120])
    k = rng.choice([256, 700, 1024, 2048, 3072, 4096, 5000])
    t = rng.choice(["bf16", "bf16", "f16"])
    p = {
        "name": f"unseen {i}",
        "m": m, "n": n, "k": k,
        "a": {"type": t, "layout": rng.choice(["row", "row", "col"])},
        "b": {"type": t, "layout": rng.choice(["row", "col", "col"])},
        "c": {"type": t, "layout": d_layout},
        "d": {"type": rng.choice([t, t, t, "f32"]), "layout": d_layout},
    }
    epi = {"activation": rng.choice(["none", "none", "relu", "gelu_tanh", "gelu_erf", "silu"])}
    kind = rng.random()
    if kind < 0.15:
        # gated (SwiGLU / GeGLU): B holds [gate | up], 2N columns
        epi["gate"] = "halves"
        epi["activation"] = rng.choice(["silu", "gelu_tanh"])
        p["d"]["type"] = t
    else:
        epi["bias"] = rng.choice(["none", "none", "column", "row"])
        if rng.random() < 0.2:
            epi["beta"] = 1.0
            p["c"]["type"] = p["d"]["type"]
    if rng.random() < 0.2:  # strided batches
        batch = rng.choice([2, 4, 8])
        p["batch_count"] = batch
        cols = 2 * n if epi.get("gate") == "halves" else n
        p["a"]["batch_stride"] = m * k
        p["b"]["batch_stride"] = rng.choice([0, k * cols])
        p["c"]["batch_stride"] = m * n
        p["d"]["batch_stride"] = m * n
        if epi.get("bias", "none") != "none":
            epi["bias_batch_stride"] = 0
    p["epilogue"] = epi
    return p


def extent(t, rows, width):
    """Elements one matrix of operand t spans: its leading dimension times its lines."""
    ld = t.get("ld", 0) or (width if t.get("layout", "row") == "row" else rows)
    return ld * (rows if t.get("layout", "row") == "row" else width)


def wide_problem(rng, i, d_layout="row"):
    """One problem of the whole space, capped at 0.5 TFLOP so a manifest stays quick."""
    while True:
        m = rng.choice([1, 2, 5, 8, 16, 24, 33, 48, 64, 65, 80, 127, 130, 255, 257, 500, 777,
                        1024, 1500, 2047, 3333, 4096, 6000, 8192])
        n = rng.choice([8, 24, 100, 255, 256, 513, 1000, 1024, 2000, 2049, 4096, 5000, 8192,
                        11008, 14336])
        k = rng.choice([16, 40, 64, 100, 128, 255, 512, 999, 1024, 2048, 3000, 4096, 8192])
        if 2 * m * n * k <= 5e11:
            break
    p = problem(rng, i, d_layout)
    p["name"] = f"wide {i}"
    p["m"], p["n"], p["k"] = m, n, k
    gated = p["epilogue"].get("gate") == "halves"
    cols = 2 * n if gated else n
    for op, rows, width in (("a", m, k), ("b", k, cols), ("c", m, n), ("d", m, n)):
        if rng.random() < 0.15:  # a padded leading dimension; a pad of 3 leaves 16-byte rows
            t = p[op]
            packed = width if t["layout"] == "row" else rows
            t["ld"] = packed + rng.choice([3, 8, 64])
    for op, rows, width in (("a", m, k), ("b", k, cols), ("c", m, n), ("d", m, n)):
        t = p[op]
        if t.get("batch_stride", -1) > 0:  # room for the padded matrices
            t["batch_stride"] = extent(t, rows, width)
    return p


def wild_problem(rng, i, d_layout="row"):
    """A wide problem with what wide holds fixed drawn too (module docstring)."""
    p = wide_problem(rng, i, d_layout)
    p["name"] = f"wild {i}"
    m, n, k = p["m"], p["n"], p["k"]
    epi = p["epilogue"]
    gated = epi.get("gate") == "halves"
    cols = 2 * n if gated else n
    options = {}
    if not gated and rng.random() < 0.15 and 2 * m * n * k <= 5e10:
        for op in "abcd":
            p[op]["type"] = "f32"
        options["allow_tf32"] = rng.random() < 0.5
    t = p["a"]["type"]
    epi["alpha"] = rng.choice([1.0, 1.0, 0.5, -1.5])
    layout = rng.choice([d_layout, d_layout, "col" if d_layout == "row" else "row"])
    if layout != p["d"]["layout"] and p["d"].get("ld"):  # keep the pad, not the length
        pad = p["d"]["ld"] - (n if p["d"]["layout"] == "row" else m)
        p["d"]["ld"] = (n if layout == "row" else m) + pad
    p["d"]["layout"] = layout
    if not gated and rng.random() < 0.3:
        epi["beta"] = rng.choice([1.0, 0.5, -1.0])
        p["c"] = {"type": rng.choice([p["d"]["type"], t, "f32"]),
                  "layout": rng.choice(["row", "col"])}
        if rng.random() < 0.3:
            p["c"]["ld"] = (n if p["c"]["layout"] == "row" else m) + rng.choice([3, 8])
    else:
        epi.pop("beta", None)
        p["c"] = dict(p["d"])
    batch = p.get("batch_count", 1)
    if batch > 1:
        p["a"]["batch_stride"] = rng.choice([0, 1, 1]) * extent(p["a"], m, k)
        p["b"]["batch_stride"] = rng.choice([0, 1]) * extent(p["b"], k, cols)
        p["c"]["batch_stride"] = rng.choice([0, 1]) * extent(p["c"], m, n)
        p["d"]["batch_stride"] = extent(p["d"], m, n)
        if epi.get("bias", "none") != "none":
            epi["bias_batch_stride"] = rng.choice([0, m if epi["bias"] == "row" else cols])
    size = 4 if t == "f32" else 2
    options["pointer_alignment"] = rng.choice([a for a in (16, 16, 16, 8, 4, 2) if a >= size])
    options["backend"] = rng.choice(["auto", "auto", "auto", "jit", "cublas"])
    options["tuning"] = rng.choice(["fast", "fast", "heuristic"])
    options["regime"] = rng.choice(["auto", "auto", "streaming", "resident"])
    p["options"] = options
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--count", type=int, default=24)
    ap.add_argument("--space", choices=["mid", "wide", "wild"], default="mid")
    ap.add_argument("--d-layout", choices=["row", "col"], default="row")
    ap.add_argument("out", nargs="?", default="bench/manifests/unseen_mix.json")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    draw = {"mid": problem, "wide": wide_problem, "wild": wild_problem}[args.space]
    doc = {"version": 1, "options": {"tuning": "fast", "pdl": True, "pointer_alignment": 16},
           "problems": [draw(rng, i, args.d_layout) for i in range(args.count)]}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
