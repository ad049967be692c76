"""Gated MLPs (SwiGLU) through jitgemm plans, against what PyTorch runs.

A gated plan (problem.gate = 1: B is K x 2N = [W_gate | W_up], D = silu(gate) * up)
computes both projections in one kernel and writes the hidden tensor once. Two
workloads, each checked against an fp32 PyTorch reference first:

- a dense Llama-style MLP block, bf16, M = 16, 128, 2048 tokens, 4096 -> 14336 -> 4096:
  the gated plan + a down plan against F.linear(silu(F.linear(x, W_gate)) * F.linear(x, W_up), W_down);
- seed 001's grouped MLP, x (B=2560, G=12, 1024), per group [W_gate | W_up] (1024, 6144) and
  W_down (3072, 1024), as two batched plans over the (B, G, D) layout with no copies, against
  torch.bmm on the transposed view (two BMMs + silu * mul + the down BMM).

Times: CUDA graphs of repeated calls, median of 5 replays, microseconds per call.
Environment: GATED_BACKEND (jit or auto, default jit: the sm90 family serves gated
problems), GATED_TUNING (fast), GATED_M (16,128,2048).
    PYTHONPATH=<package folder> python3 examples/pytorch/gated_mlp.py
"""
import os
import statistics
import sys
import time
import torch
import torch.nn.functional as F
import jitgemm
from jitgemm import plan as jp

TOLERANCE = 1e-2  # bf16 output, relative Frobenius error

torch.manual_seed(0)
dev = "cuda"
bf = torch.bfloat16
stream = torch.cuda.current_stream()


def timeit(fn, calls=20, reps=5):
    fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) * 1000 / calls)
    return statistics.median(ts)


def run_plan(plan, a, b, d, bias=0):
    plan.run(a=a.data_ptr(), b=b.data_ptr(), d=d.data_ptr(), bias=bias,
             stream=torch.cuda.current_stream().cuda_stream)


def rel(got, want):
    got = got.float()
    want = want.float()
    if not torch.isfinite(got).all():
        return float("inf")
    return ((got - want).norm() / want.norm()).item()


backend = os.environ.get("GATED_BACKEND", "jit")
opts = jp.Options(backend=backend, tuning=os.environ.get("GATED_TUNING", "fast"))
rows = []

# Dense Llama MLP block: x (M, 4096); W_gate, W_up (14336, 4096); W_down (4096, 14336).
H, I = 4096, 14336
wg = torch.randn(I, H, device=dev, dtype=bf) * 0.02
wu = torch.randn(I, H, device=dev, dtype=bf) * 0.02
wd = torch.randn(H, I, device=dev, dtype=bf) * 0.02
wcat = torch.cat([wg, wu]).contiguous()
for M in [int(x) for x in os.environ.get("GATED_M", "16,128,2048").split(",")]:
    x = torch.randn(M, H, device=dev, dtype=bf)
    p = jitgemm.gemm_problem(M, I, H, "bf16")
    p.b.layout = jitgemm.COL_MAJOR
    p.activation = jitgemm.ACTIVATIONS["silu"]
    p.gate = 1
    t0 = time.time()
    plan = jitgemm.Plan(p, opts)
    create_s = time.time() - t0
    pd = jitgemm.gemm_problem(M, H, I, "bf16")
    pd.b.layout = jitgemm.COL_MAJOR
    down = jitgemm.Plan(pd, jp.Options(backend="auto"))
    h = torch.empty(M, I, device=dev, dtype=bf)
    y = torch.empty(M, H, device=dev, dtype=bf)
    run_plan(plan, x, wcat, h)
    torch.cuda.synchronize()
    ref = F.silu(x.float() @ wg.float().t()) * (x.float() @ wu.float().t())
    err = rel(h, ref)
    t_jit = timeit(lambda: run_plan(plan, x, wcat, h))
    t_two = timeit(lambda: F.silu(F.linear(x, wg)) * F.linear(x, wu))
    def cat_route():
        gu = F.linear(x, wcat)
        return F.silu(gu[:, :I]) * gu[:, I:]
    t_cat = timeit(cat_route)
    t_gemm2n = timeit(lambda: F.linear(x, wcat))
    t_block_jit = timeit(lambda: (run_plan(plan, x, wcat, h), run_plan(down, h, wd, y)))
    t_block_torch = timeit(lambda: F.linear(F.silu(F.linear(x, wg)) * F.linear(x, wu), wd))
    rows.append((f"dense M={M} gate+up", plan.description[:110], err, t_jit, t_two, t_cat, t_gemm2n,
                 t_block_jit, t_block_torch, create_s))

# Seed 001 grouped MLP: x (B, G, 1024), per group W_gate|W_up (1024, 6144) row-major, W_down (3072, 1024).
B, G, D, N = 2560, 12, 1024, 3072
x = torch.randn(B, G, D, device=dev, dtype=bf)
w = torch.randn(G, D, 2 * N, device=dev, dtype=bf) * 0.03
wdn = torch.randn(G, N, D, device=dev, dtype=bf) * 0.03
p = jitgemm.gemm_problem(B, N, D, "bf16")
p.batch_count = G
p.a.ld, p.a.batch_stride = G * D, D
p.b.ld, p.b.batch_stride = 2 * N, D * 2 * N
p.c.ld, p.c.batch_stride = G * N, N
p.d.ld, p.d.batch_stride = G * N, N
p.activation = jitgemm.ACTIVATIONS["silu"]
p.gate = 1
t0 = time.time()
plan = jitgemm.Plan(p, opts)
create_s = time.time() - t0
pd = jitgemm.gemm_problem(B, D, N, "bf16")
pd.batch_count = G
pd.a.ld, pd.a.batch_stride = G * N, N
pd.b.ld, pd.b.batch_stride = D, N * D
pd.c.ld, pd.c.batch_stride = G * D, D
pd.d.ld, pd.d.batch_stride = G * D, D
down = jitgemm.Plan(pd, jp.Options(backend="auto"))
h = torch.empty(B, G, N, device=dev, dtype=bf)
y = torch.empty(B, G, D, device=dev, dtype=bf)
run_plan(plan, x, w, h)
torch.cuda.synchronize()
xt = x.transpose(0, 1)  # (G, B, D) view
gate = torch.bmm(xt.float(), w[:, :, :N].float())
up = torch.bmm(xt.float(), w[:, :, N:].float())
ref = (F.silu(gate) * up).transpose(0, 1)
err = rel(h, ref)
del gate, up, ref
wg_ = w[:, :, :N]
wu_ = w[:, :, N:]
t_jit = timeit(lambda: run_plan(plan, x, w, h), calls=5)
t_two = timeit(lambda: F.silu(torch.bmm(xt, wg_)) * torch.bmm(xt, wu_), calls=5)
t_gemm2n = timeit(lambda: torch.bmm(xt, w), calls=5)
t_block_jit = timeit(lambda: (run_plan(plan, x, w, h), run_plan(down, h, wdn, y)), calls=5)
t_block_torch = timeit(lambda: torch.bmm(F.silu(torch.bmm(xt, wg_)) * torch.bmm(xt, wu_), wdn), calls=5)
rows.append(("grouped seed001 gate+up", plan.description[:110], err, t_jit, t_two, float("nan"), t_gemm2n,
             t_block_jit, t_block_torch, create_s))

print("| case | plan | rel err | jit gated us | torch 2 linear+silu*mul | torch cat+silu*mul | torch 2N gemm | block jit | block torch | block x | create s |")
for r in rows:
    print("| %s | %s | %.2e | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2fx | %.2f |" % (
        r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[8] / r[7], r[9]))

worst = max(r[2] for r in rows)
if not worst <= TOLERANCE:
    print(f"FAILED: relative error {worst:.2e} above {TOLERANCE}")
    sys.exit(1)
