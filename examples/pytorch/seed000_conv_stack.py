#!/usr/bin/env python3
"""Seed 000: an 8-layer 3x3 conv stack (C=16, 16x16, pad 1, fp32, no bias) lowered to
im2col + GEMM, batch 1..16.

Variants: the seed's baseline (a per-sample loop: im2col and one GEMM per
sample), the seed's fix (im2col of the whole batch, one strided-batched GEMM
through torch.matmul), cuDNN (F.conv2d), and jitgemm: im2col of the batch and
one batched plan per layer (torch.ops.jitgemm.matmul with the (16, 144) filter
broadcast over the batch: batch stride 0), writing NCHW directly. Times per
forward of the whole stack: eager (issued from Python) and as CUDA graph
replays; fp32 exact (tf32 off in cuBLAS and cuDNN).

    PYTHONPATH=<package folder> python3 examples/pytorch/seed000_conv_stack.py
"""

import argparse

import torch
import torch.nn.functional as F

import bench_util as bu

C, H, W, LAYERS = 16, 16, 16, 8


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", default="1,4,8,16")
    args = parser.parse_args()
    bu.require_cuda()
    import jitgemm  # noqa: F401

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"seed 000 conv stack C={C} {H}x{W} 3x3 x{LAYERS} fp32; {bu.device_line()}")
    filters = [torch.randn(C, C, 3, 3, device="cuda") / (3 * C ** 0.5) for _ in range(LAYERS)]
    flat = [f.view(C, C * 9) for f in filters]

    def loop(x):
        for w in flat:
            out = torch.empty_like(x)
            for i in range(x.shape[0]):
                cols = F.unfold(x[i:i + 1], 3, padding=1)[0]  # (144, 256)
                torch.mm(w, cols, out=out[i].view(C, H * W))
            x = out
        return x

    def batched(x):
        for w in flat:
            x = torch.matmul(w, F.unfold(x, 3, padding=1)).view(-1, C, H, W)
        return x

    def cudnn(x):
        for f in filters:
            x = F.conv2d(x, f, padding=1)
        return x

    def jit(x):
        for w in flat:
            x = torch.ops.jitgemm.matmul(w, F.unfold(x, 3, padding=1)).view(-1, C, H, W)
        return x

    variants = {"per-sample loop": loop, "im2col + batched GEMM": batched, "cuDNN": cudnn,
                "jitgemm": jit}
    rows = []
    for batch in [int(v) for v in args.batch.split(",")]:
        x = torch.randn(batch, C, H, W, device="cuda")
        ref = x.double()
        for f in filters:
            ref = F.conv2d(ref, f.double(), padding=1)
        for name, fn in variants.items():
            err = ((fn(x).double() - ref).norm() / ref.norm()).item()
            assert err < 1e-4, f"{name} batch {batch}: relative error {err}"
            rows.append({"batch": batch, "variant": name,
                         "eager us": bu.eager_us(lambda i: fn(x), launches=20),
                         "graph us": bu.graph_us(lambda i: fn(x), launches=20)})
    for r in rows:
        base = next(q for q in rows if q["batch"] == r["batch"] and
                    q["variant"] == "per-sample loop")
        r["eager x"] = base["eager us"] / r["eager us"]
        r["graph x"] = base["graph us"] / r["graph us"]
    bu.print_table("µs per forward of the 8-layer stack (eager: 20 forwards issued from Python; "
                   "graph: CUDA graph of 20); x = speedup over the per-sample loop", rows,
                   ["batch", "variant", "eager us", "graph us", "eager x", "graph x"])
    for p, d in jitgemm.ops.plans():
        print(f"  plan {p}: {d}")
    out = bu.out_dir("pytorch")
    bu.write_csv(out / "seed000_conv_stack.csv", rows)
    batches = sorted({r["batch"] for r in rows})
    bu.bar_chart(out / "seed000_conv_stack.png",
                 "Seed 000: 8-layer conv stack (C=16, 16x16) fp32, speedup over the per-sample "
                 "loop (CUDA graph)", [f"batch {b}" for b in batches],
                 {v: [next(r["graph x"] for r in rows if r["batch"] == b and r["variant"] == v)
                      for b in batches] for v in variants if v != "per-sample loop"})


if __name__ == "__main__":
    main()
