#!/usr/bin/env python3
"""Seeds 002 and 004: GEMM + bias + ReLU, alone and as an 8-layer Linear+ReLU MLP.

Part 1 (seed 002), fp16, y = relu(x W^T + b) at (M, K, N) = (64, 256, 128),
(128, 256, 256), (1024, 1024, 1024): F.linear + relu (what nn.Linear + ReLU
runs: addmm, then relu), torch.compile of it, and torch.ops.jitgemm.linear
with the ReLU fused. CUDA graph of 100 calls, median of 5 replays.

Part 2 (seed 004), fp32 exact (tf32 off), nn.Sequential of 8 x (Linear, ReLU),
hidden 256..2048, batch 32/128/512, whole forward pass: PyTorch eager and in a
CUDA graph, and the same model after jitgemm.nn.replace_linears (bias and ReLU
fused into each GEMM), eager and in a CUDA graph.

    PYTHONPATH=<package folder> python3 examples/pytorch/seed002_004_mlp.py
"""

import argparse
import copy

import torch
import torch.nn.functional as F

import bench_util as bu


def part1(rows):
    import jitgemm  # noqa: F401

    def torch_fused(x, w, b):
        return torch.relu(F.linear(x, w, b))

    compiled = torch.compile(torch_fused)

    def jit(x, w, b):
        return torch.ops.jitgemm.linear(x, w, b, "relu")

    for m, k, n in ((64, 256, 128), (128, 256, 256), (1024, 1024, 1024)):
        x = torch.randn(m, k, device="cuda", dtype=torch.float16)
        w = torch.randn(n, k, device="cuda", dtype=torch.float16) / k ** 0.5
        b = torch.randn(n, device="cuda", dtype=torch.float16)
        ref = torch.relu(x.double() @ w.double().t() + b.double())
        row = {"M x K x N": f"{m}x{k}x{n}"}
        for name, fn in (("linear+relu", torch_fused), ("torch.compile", compiled),
                         ("jitgemm fused", jit)):
            err = ((fn(x, w, b).double() - ref).norm() / ref.norm()).item()
            assert err < 3e-3, f"{name} {m}x{k}x{n}: relative error {err}"
            row[name] = bu.graph_us(lambda i: fn(x, w, b))
        row["compile x"] = row["linear+relu"] / row["torch.compile"]
        row["jitgemm x"] = row["linear+relu"] / row["jitgemm fused"]
        rows.append(row)


def mlp(hidden, layers=8):
    mods = []
    for _ in range(layers):
        mods += [torch.nn.Linear(hidden, hidden), torch.nn.ReLU(inplace=True)]
    return torch.nn.Sequential(*mods).cuda()


def part2(rows, hiddens, batches):
    import jitgemm.nn

    for hidden in hiddens:
        model = mlp(hidden)
        fused = jitgemm.nn.replace_linears(copy.deepcopy(model))
        for batch in batches:
            x = torch.randn(batch, hidden, device="cuda")
            with torch.no_grad():
                ref = model(x.clone())
                got = fused(x.clone())
                err = ((got - ref).norm() / ref.norm()).item()
                assert err < 1e-4, f"hidden {hidden} batch {batch}: relative error {err}"
                row = {"hidden": hidden, "batch": batch}
                row["torch eager"] = bu.eager_us(lambda i: model(x), launches=50)
                row["torch graph"] = bu.graph_us(lambda i: model(x), launches=20)
                row["jitgemm eager"] = bu.eager_us(lambda i: fused(x), launches=50)
                row["jitgemm graph"] = bu.graph_us(lambda i: fused(x), launches=20)
            row["eager x"] = row["torch eager"] / row["jitgemm eager"]
            row["graph x"] = row["torch graph"] / row["jitgemm graph"]
            rows.append(row)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", default="256,512,1024,2048")
    parser.add_argument("--batch", default="32,128,512")
    args = parser.parse_args()
    bu.require_cuda()
    torch.backends.cuda.matmul.allow_tf32 = False  # seed 004 is fp32 exact
    print(f"seeds 002 / 004: GEMM + bias + ReLU and the 8-layer MLP; {bu.device_line()}")
    out = bu.out_dir("pytorch")

    rows1 = []
    part1(rows1)
    bu.print_table("seed 002, fp16 GEMM + bias + ReLU: µs per call (CUDA graph of 100); "
                   "x = speedup over linear+relu", rows1,
                   ["M x K x N", "linear+relu", "torch.compile", "jitgemm fused", "compile x",
                    "jitgemm x"])
    bu.write_csv(out / "seed002_gemm_bias_relu.csv", rows1)
    bu.bar_chart(out / "seed002_gemm_bias_relu.png",
                 "Seed 002: fp16 GEMM + bias + ReLU, speedup over F.linear + relu",
                 [r["M x K x N"] for r in rows1],
                 {"torch.compile": [r["compile x"] for r in rows1],
                  "jitgemm fused": [r["jitgemm x"] for r in rows1]})

    rows2 = []
    part2(rows2, [int(v) for v in args.hidden.split(",")],
          [int(v) for v in args.batch.split(",")])
    bu.print_table("seed 004, fp32 8-layer Linear+ReLU MLP forward: µs per forward; "
                   "x = speedup of jitgemm over torch in the same mode", rows2,
                   ["hidden", "batch", "torch eager", "jitgemm eager", "eager x", "torch graph",
                    "jitgemm graph", "graph x"])
    bu.write_csv(out / "seed004_mlp.csv", rows2)
    bu.bar_chart(out / "seed004_mlp.png",
                 "Seed 004: fp32 8-layer MLP, jitgemm (fused bias+ReLU) over PyTorch",
                 [f"h{r['hidden']} b{r['batch']}" for r in rows2],
                 {"eager": [r["eager x"] for r in rows2],
                  "CUDA graph": [r["graph x"] for r in rows2]})


if __name__ == "__main__":
    main()
