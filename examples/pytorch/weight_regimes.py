#!/usr/bin/env python3
"""y = x W^T against F.linear with the weight streaming from DRAM and resident in L2.

A model whose layers each read their own weight streams it from DRAM; a loop
that calls one layer again and again (a benchmark, a decode step of a small
model) finds it in L2. jitgemm times its candidates in both regimes when the
weight fits in L2 (docs/tuning.md), so its plan should hold in both. This
prints, per problem and regime, F.linear (what PyTorch's cuBLAS call runs),
torch.ops.jitgemm.linear, their ratio, and the GPU kernels each one launched.

Streaming rotates the launches of one CUDA graph over enough copies of W to
overflow L2; resident uses one W for every launch. BENCHMARKS.md's method
otherwise: 100 calls in a graph, 5 replays, the median per call; F.linear and
jitgemm alternate `--rounds` times and each keeps the median of its rounds.

    PYTHONPATH=<package folder> python3 examples/pytorch/weight_regimes.py \
        [--shapes 1x32768x512,128x2112x7168] [--dtype bf16]
"""

import argparse
import math
import statistics

import torch
import torch.nn.functional as F

import bench_util as bu

# The issue's two rows (DeepGEMM test shapes whose weights fit in an H100's
# L2), the small-M decode rows (S1, N = K = 4096) and mid-size prefill (S6).
DEFAULT_SHAPES = ("1x32768x512,128x2112x7168,"
                  "1x4096x4096,2x4096x4096,4x4096x4096,8x4096x4096,16x4096x4096,"
                  "32x4096x4096,64x4096x4096,128x4096x4096,256x4096x4096,512x4096x4096")


def kernels_of(fn) -> str:
    """The names of the GPU kernels one call of fn launches."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return " + ".join(n[:60] for n in names) or "?"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=DEFAULT_SHAPES, help="MxNxK,... (y is M x N)")
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "f16"])
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternating measurements of each side; the median is kept")
    parser.add_argument("--csv", default="weight_regimes.csv")
    args = parser.parse_args()
    bu.require_cuda()

    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    print(f"x W^T, {args.dtype}, L2 {l2 >> 20} MiB; {bu.device_line()}")
    rows = []
    for shape in args.shapes.split(","):
        m, n, k = (int(v) for v in shape.split("x"))
        w_bytes = n * k * x_size(dtype)
        x = torch.randn(m, k, device="cuda", dtype=dtype)
        weight = torch.randn(n, k, device="cuda", dtype=dtype) / math.sqrt(k)
        ref = x.double() @ weight.double().t()
        copies = max(2, math.ceil(3 * l2 / w_bytes))
        weights = [weight.clone() for _ in range(min(copies, 100))]
        variants = {"F.linear": lambda w: F.linear(x, w),
                    "jitgemm": lambda w: torch.ops.jitgemm.linear(x, w)}
        row = {"M": m, "N": n, "K": k, "weight MiB": round(w_bytes / 2**20, 1)}
        regimes = {"streaming": lambda fn: (lambda i: fn(weights[i % len(weights)]))}
        if w_bytes <= l2:
            regimes["resident"] = lambda fn: (lambda i: fn(weight))
        for name, fn in variants.items():
            err = ((fn(weight).double() - ref).norm() / ref.norm()).item()
            if not err < 2e-2:
                raise SystemExit(f"{shape} {name}: relative error {err:.3g}")
            row[f"{name} kernels"] = kernels_of(lambda: fn(weight))
        # The two sides alternate, `rounds` times, and each keeps its median:
        # a clock or placement drift during the run hits both alike.
        for regime, step in regimes.items():
            times = {name: [] for name in variants}
            for _ in range(args.rounds):
                for name, fn in variants.items():
                    times[name].append(bu.graph_us(step(fn)))
            for name in variants:
                row[f"{name} {regime}"] = statistics.median(times[name])
        for regime in ("streaming", "resident"):
            if f"jitgemm {regime}" in row:
                row[f"x {regime}"] = row[f"F.linear {regime}"] / row[f"jitgemm {regime}"]
        rows.append(row)
        print(f"{shape}: F.linear [{row['F.linear kernels']}]  jitgemm [{row['jitgemm kernels']}]",
              flush=True)

    bu.print_table("µs per call (speedup = F.linear / jitgemm; resident only where W fits in "
                   "L2, as jitgemm's tuner decides)", rows,
                   ["M", "N", "K", "weight MiB", "F.linear streaming", "jitgemm streaming",
                    "x streaming", "F.linear resident", "jitgemm resident", "x resident"])
    bu.write_csv(bu.out_dir("weight_regimes") / args.csv, rows)


def x_size(dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


if __name__ == "__main__":
    main()
