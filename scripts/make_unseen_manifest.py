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

`--d-layout col` writes every D (and C) column-major, with the same shapes as
the row-major draw of that seed, for the plans that compute such a D as its
transpose (docs/kernels.md).

Usage: scripts/make_unseen_manifest.py [--seed N] [--count N] [--space mid|wide]
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
            ld = t.get("ld", 0) or (width if t["layout"] == "row" else rows)
            t["batch_stride"] = ld * (rows if t["layout"] == "row" else width)
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--count", type=int, default=24)
    ap.add_argument("--space", choices=["mid", "wide"], default="mid")
    ap.add_argument("--d-layout", choices=["row", "col"], default="row")
    ap.add_argument("out", nargs="?", default="bench/manifests/unseen_mix.json")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    draw = wide_problem if args.space == "wide" else problem
    doc = {"version": 1, "options": {"tuning": "fast", "pdl": True, "pointer_alignment": 16},
           "problems": [draw(rng, i, args.d_layout) for i in range(args.count)]}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
