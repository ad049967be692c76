#!/usr/bin/env python3
"""Seed 001: grouped linear, x (B=2560, G=12, 1024) with one (3072, 1024) weight per
group -> (B, G, 3072), bf16, forward and forward + backward.

Variants: the seed's reference (a loop of G linears, then stack), the seed's
optimisation (one torch.bmm writing the strided (B, G, Dout) output through
out=; for the backward, torch.bmm under autograd), and
torch.ops.jitgemm.grouped_linear (one batched problem writing (B, G, Dout)
directly; its backward is jitgemm GEMMs too). Method: CUDA events around a
CUDA graph of 20 (forward) or 10 (forward + backward) calls, median of 5 replays.

    PYTHONPATH=<package folder> python3 examples/pytorch/seed001_grouped_linear.py
"""

import argparse

import torch
import torch.nn.functional as F

import bench_util as bu


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=2560)
    parser.add_argument("--groups", type=int, default=12)
    parser.add_argument("--din", type=int, default=1024)
    parser.add_argument("--dout", type=int, default=3072)
    args = parser.parse_args()
    bu.require_cuda()
    import jitgemm  # noqa: F401

    b, g, din, dout = args.batch, args.groups, args.din, args.dout
    print(f"seed 001 grouped linear B={b} G={g} {din}->{dout} bf16; {bu.device_line()}")
    x = torch.randn(b, g, din, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(g, dout, din, device="cuda", dtype=torch.bfloat16) / din ** 0.5
    gy = torch.randn(b, g, dout, device="cuda", dtype=torch.bfloat16)
    flops = 2 * b * g * din * dout

    def loop(x, w):
        return torch.stack([F.linear(x[:, i], w[i]) for i in range(g)], dim=1)

    def bmm_out(x, w):
        out = torch.empty(b, g, dout, device="cuda", dtype=x.dtype)
        torch.bmm(x.permute(1, 0, 2), w.transpose(1, 2), out=out.permute(1, 0, 2))
        return out

    def bmm_autograd(x, w):
        return torch.bmm(x.permute(1, 0, 2), w.transpose(1, 2)).permute(1, 0, 2)

    def jit(x, w):
        return torch.ops.jitgemm.grouped_linear(x, w)

    ref = torch.einsum("bgk,gnk->bgn", x.double(), w.double())
    forward = {"loop of linears": loop, "torch.bmm strided out": bmm_out, "jitgemm": jit}
    backward = {"loop of linears": loop, "torch.bmm": bmm_autograd, "jitgemm": jit}
    rows = []
    for name, fn in forward.items():
        err = ((fn(x, w).double() - ref).norm() / ref.norm()).item()
        assert err < 2e-2, f"{name}: relative error {err}"
        us = bu.graph_us(lambda i: fn(x, w), launches=20)
        rows.append({"pass": "forward", "variant": name, "us": us,
                     "TFLOP/s": flops / us / 1e6})
    xg, wg = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
    for name, fn in backward.items():
        def step(i, fn=fn):
            return torch.autograd.grad(fn(xg, wg), (xg, wg), gy)
        dx, dw = step(0)
        dx_ref = torch.einsum("bgn,gnk->bgk", gy.double(), w.double())
        err = ((dx.double() - dx_ref).norm() / dx_ref.norm()).item()
        assert err < 3e-2, f"{name}: dx relative error {err}"
        us = bu.graph_us(step, launches=10)
        rows.append({"pass": "forward+backward", "variant": name, "us": us,
                     "TFLOP/s": 3 * flops / us / 1e6})
    for r in rows:
        base = next(q["us"] for q in rows if q["pass"] == r["pass"] and
                    q["variant"] == "loop of linears")
        r["speedup vs loop"] = base / r["us"]
    bu.print_table("µs per call (CUDA graph, median of 5 replays)", rows,
                   ["pass", "variant", "us", "TFLOP/s", "speedup vs loop"])
    for p, d in jitgemm.ops.plans():
        print(f"  plan {p}: {d}")
    out = bu.out_dir("pytorch")
    bu.write_csv(out / "seed001_grouped_linear.csv", rows)
    names = ["torch.bmm", "jitgemm"]
    bu.bar_chart(out / "seed001_grouped_linear.png",
                 f"Seed 001: grouped linear B={b} G={g} {din}->{dout} bf16, speedup over the loop",
                 ["forward", "forward+backward"],
                 {n: [next(r["speedup vs loop"] for r in rows if r["pass"] == p and
                           r["variant"].startswith(n)) for p in ("forward", "forward+backward")]
                  for n in names})


if __name__ == "__main__":
    main()
