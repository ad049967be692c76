#!/usr/bin/env python3
"""Seed 003: small-batch linear, bf16, y = x W^T with W (2048, 4096), M = 1..64.

Variants (the seed's, with jitgemm beside them): F.linear (cuBLAS through
PyTorch), torch.compile(F.linear), optionally torch.compile's
max-autotune-no-cudagraphs (--max-autotune, slow to compile), and
torch.ops.jitgemm.linear, plus jitgemm with constant_b (the caller's promise
that no earlier work on the stream writes W, letting small-M kernels read it
early under PDL). The seed's method: 100 calls in one CUDA graph, each on its
own weight buffer so W streams from DRAM, replayed 5 times, median per call.

    PYTHONPATH=<package folder> python3 examples/pytorch/seed003_small_m_linear.py
"""

import argparse
import dataclasses

import torch
import torch.nn.functional as F

import bench_util as bu


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--m", default="1,2,4,8,16,32,64")
    parser.add_argument("--max-autotune", action="store_true")
    args = parser.parse_args()
    bu.require_cuda()
    import jitgemm

    print(f"seed 003 small-M linear, bf16, N={args.n} K={args.k}; {bu.device_line()}")
    weight = torch.randn(args.n, args.k, device="cuda", dtype=torch.bfloat16)
    weights = [weight.clone() for _ in range(100)]  # every launch misses L2

    def linear(x, w):
        return F.linear(x, w)

    variants = {"F.linear": linear, "torch.compile": torch.compile(linear)}
    if args.max_autotune:
        variants["max-autotune"] = torch.compile(linear, mode="max-autotune-no-cudagraphs")
    base_options = jitgemm.Options.from_environment()
    constant_b = dataclasses.replace(base_options, constant_b=True)

    def jit(x, w):
        return torch.ops.jitgemm.linear(x, w)

    variants["jitgemm"] = jit
    variants["jitgemm constant_b"] = jit

    rows = []
    for m in [int(v) for v in args.m.split(",")]:
        x = torch.randn(m, args.k, device="cuda", dtype=torch.bfloat16)
        ref = (x.double() @ weight.double().t())
        row = {"M": m}
        for name, fn in variants.items():
            jitgemm.ops.set_options(constant_b if name == "jitgemm constant_b" else None)
            err = ((fn(x, weight).double() - ref).norm() / ref.norm()).item()
            if err > 2e-2:
                raise SystemExit(f"{name} M={m}: relative error {err:.3e}")
            row[name] = bu.graph_us(lambda i: fn(x, weights[i]))
        jitgemm.ops.set_options(None)
        for name in variants:
            if name != "F.linear":
                row[f"{name} x"] = row["F.linear"] / row[name]
        row["jitgemm plan"] = next((d for p, d in jitgemm.ops.plans()
                                    if p.startswith(f"bf16 {m}x{args.n}x{args.k}")), "")
        rows.append(row)

    columns = ["M", *variants, *[f"{v} x" for v in variants if v != "F.linear"]]
    bu.print_table("µs per call (CUDA graph of 100, median of 5 replays); x = speedup over "
                   "F.linear", rows, columns)
    for r in rows:
        print(f"  M={r['M']}: {r['jitgemm plan']}")
    out = bu.out_dir("pytorch")
    bu.write_csv(out / "seed003_small_m_linear.csv", rows)
    bu.bar_chart(out / "seed003_small_m_linear.png",
                 f"Seed 003: bf16 linear {args.n}x{args.k}, speedup over F.linear",
                 [f"M={r['M']}" for r in rows],
                 {v: [r[f"{v} x"] for r in rows] for v in variants if v != "F.linear"})


if __name__ == "__main__":
    main()
