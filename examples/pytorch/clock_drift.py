#!/usr/bin/env python3
"""How a GEMM's time moves as an idle GPU warms up: the cuBLAS route and the JIT kernel in turn.

A heavy GEMM drives an H100 to its power cap within tens of milliseconds, and
its clock then falls. Whatever runs first after an idle spell, a benchmark
column or a tuner's first candidate, meets the boost clock. This makes two
plans of one problem, `x W^T + bias` then an activation: one with the cuBLAS
backend, one with the JIT backend (tuning `fast` for each). Each is captured in
a CUDA graph of about 3 ms of calls over rotating copies of W (more bytes than
the L2 holds). After the GPU has idled for --idle seconds, the two graphs
replay in alternation for --seconds seconds, the order flipping every pair.
The table gives the median time per call in windows of time since the start,
and their ratio.

    PYTHONPATH=<package folder> python3 examples/pytorch/clock_drift.py \
        [--shape 4096x4096x4096] [--dtype f16] [--activation relu] [--seconds 4]
"""

import argparse
import statistics
import time

import torch

import jitgemm

WINDOWS_MS = (0, 25, 50, 100, 200, 400, 800, 1600, 3200, 6400, float("inf"))


def make_plan(m, n, k, dtype, activation, backend):
    p = jitgemm.gemm_problem(m, n, k, dtype)
    p.b.layout = jitgemm.COL_MAJOR  # W is (N, K), as nn.Linear keeps it
    p.bias_mode = jitgemm.BIAS_PER_COLUMN
    p.activation = jitgemm.ACTIVATIONS[activation]
    return jitgemm.Plan(p, jitgemm.Options(backend=backend, tuning="fast"))


def capture(plan, x, weights, bias, y, launches):
    """A graph of `launches` calls, call i reading weights[i % len(weights)]."""
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()

    def calls():
        for i in range(launches):
            plan.run(x.data_ptr(), weights[i % len(weights)].data_ptr(), y.data_ptr(), 0,
                     bias.data_ptr(), stream.cuda_stream)

    with torch.cuda.stream(stream):
        calls()  # outside capture first: loads every module
        torch.cuda.synchronize()
        with torch.cuda.graph(graph, stream=stream):
            calls()
    return graph


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="4096x4096x4096", help="MxNxK")
    parser.add_argument("--dtype", default="f16", choices=("f16", "bf16"))
    parser.add_argument("--activation", default="relu", choices=sorted(jitgemm.ACTIVATIONS))
    parser.add_argument("--seconds", type=float, default=4.0, help="how long to alternate")
    parser.add_argument("--idle", type=float, default=3.0, help="idle seconds before")
    args = parser.parse_args()
    m, n, k = (int(v) for v in args.shape.split("x"))
    dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    copies = max(2, int(200e6 // (n * k * 2)) + 1)  # 200 MB of weights: past any L2
    weights = [torch.randn(n, k, device="cuda", dtype=dtype) for _ in range(copies)]
    bias = torch.randn(n, device="cuda", dtype=dtype)
    y = torch.empty(m, n, device="cuda", dtype=dtype)
    plans = {b: make_plan(m, n, k, args.dtype, args.activation, b) for b in ("cublas", "jit")}
    for name, plan in plans.items():
        print(f"{name}: {plan.description}")

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def replay_us(graph):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e3

    one = replay_us(capture(plans["cublas"], x, weights, bias, y, 1))
    launches = max(1, min(40, int(3000 / one)))
    graphs = {name: capture(plan, x, weights, bias, y, launches) for name, plan in plans.items()}
    for graph in graphs.values():
        graph.replay()
    torch.cuda.synchronize()
    time.sleep(args.idle)

    series = []
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < args.seconds:
        row = {"ms": (time.perf_counter() - t0) * 1e3}
        order = list(graphs) if len(series) % 2 == 0 else list(graphs)[::-1]
        for name in order:
            row[name] = replay_us(graphs[name]) / launches
        series.append(row)

    print(f"{args.dtype} {m}x{n}x{k} + bias + {args.activation}: {launches} calls a graph, "
          f"{len(series)} pairs after {args.idle:.0f} s idle")
    print(f"{'ms since start':>16} {'cublas us':>10} {'jit us':>10} {'cublas/jit':>10}")
    for lo, hi in zip(WINDOWS_MS, WINDOWS_MS[1:]):
        rows = [r for r in series if lo <= r["ms"] < hi]
        if not rows:
            continue
        c = statistics.median(r["cublas"] for r in rows)
        j = statistics.median(r["jit"] for r in rows)
        print(f"{lo:7.0f}-{min(hi, series[-1]['ms']):7.0f} {c:10.2f} {j:10.2f} {c / j:10.3f}")


if __name__ == "__main__":
    main()
