#!/usr/bin/env python3
"""The jitgemm PyTorch ops on a GPU: correctness against float64, eager vs CUDA graph vs
torch.compile(fullgraph=True), capture of an unseen problem, and host time per call.

    PYTHONPATH=<package folder> python3 python/tests/gpu_check.py [--cases 240] [--tuning heuristic]

1. Random problems (>= 200 by default): every dtype, activation, bias or none,
   1-3 leading dims, transposed weights, unaligned pointers, the grouped linear;
   every third with gradients. Then 40 gated_linear problems (fp16/bf16, every
   activation, bias or none, 1-3 leading dims, stacked or transposed weights), and
   (1b) a few gated problems the sm90 family does not serve: correct, or refused at
   plan creation until another route serves them, never wrong. Outputs are
   poisoned with NaN first (the caching allocator hands the poisoned block
   back), so an unwritten element fails.
   Error: relative Frobenius norm against the same inputs in float64.
2. The same calls (with gated_linear for fp16/bf16) eager, replayed from a CUDA
   graph, and under torch.compile(fullgraph=True): results must be bitwise equal.
3. A problem first met inside capture: a plan made without compiling (warning),
   correct on replay; with set_capture_policy("error"), CaptureMissError.
4. Host time per call (the time to issue it) of torch.ops.jitgemm.linear vs
   F.linear, the modules, jitgemm.ops.linear (no dispatcher in no-grad eager code),
   and the bare ctypes Plan.run; the gated op vs PyTorch's three ops for SwiGLU.
   torch.ops.jitgemm.linear taking more than F.linear (+5%) is a failure.
Ends with a summary table; exits 1 if anything fails.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import random
import statistics
import sys
import time
import warnings

import torch
import torch.nn.functional as F

import jitgemm
import jitgemm.nn

from gpu_cases import (
    ACTS, DTYPES, GRAD_TOL, TOL, dtype_name, gated_cases, gated_outside_cases, grouped_case,
    linear_case, poison, ref_act, rel_err)


def reference(op, args):
    x, w, b, act = args
    xd, wd = x.double(), w.double()
    if op is torch.ops.jitgemm.gated_linear:
        z = xd @ wd.t() + (b.double() if b is not None else 0)
        gate, up = z.chunk(2, dim=-1)
        return ref_act(gate, act) * up
    if op is torch.ops.jitgemm.linear:
        z = xd @ wd.t() + (b.double() if b is not None else 0)
    else:
        z = torch.einsum("rgk,gnk->rgn", xd, wd) + (b.double() if b is not None else 0)
    return ref_act(z, act)


def check_case(desc, op, args, grad, results):
    x, w, b, act = args
    dtype = x.dtype
    out_shape = (*x.shape[:-1], w.shape[-2] // (2 if op is torch.ops.jitgemm.gated_linear else 1))
    poison(out_shape, dtype)
    if grad:
        leaves = [t.detach().requires_grad_(True) if t is not None else None for t in (x, w, b)]
        x, w, b = leaves
    y = op(x, w, b, act)
    err = rel_err(y, reference(op, (x.detach(), w.detach(), b.detach() if b is not None else None,
                                    act)))
    ok = err <= TOL[dtype]
    gerr = None
    if grad:
        gy = torch.randn_like(y)
        got = torch.autograd.grad(y, [t for t in (x, w, b) if t is not None], gy)
        dleaves = [t.detach().double().requires_grad_(True) if t is not None else None
                   for t in (x, w, b)]
        yd = reference(op, (*dleaves, act))
        want = torch.autograd.grad(yd, [t for t in dleaves if t is not None], gy.double())
        gerr = max(rel_err(g, r) for g, r in zip(got, want))
        ok = ok and gerr <= GRAD_TOL[dtype]
    results.append((desc, dtype, op, err, gerr, ok))


def random_cases(count: int, seed: int):
    rng = random.Random(seed)
    combos = [(d, a, bias) for d in DTYPES for a in ACTS for bias in (False, True)]
    cases = []
    for i in range(count):
        dtype, act, bias = combos[i % len(combos)]
        grouped = i % 4 == 3
        grad = i % 3 == 0
        make = grouped_case if grouped else linear_case
        cases.append(make(rng, dtype, act, bias, grad))
    return cases


def print_summary(results):
    print("\n1. random problems against float64 (relative Frobenius error)")
    print(f"{'op':8} {'dtype':5} {'cases':>5} {'with grad':>9} {'max err':>9} "
          f"{'max grad err':>12} {'failed':>6}")
    for opname, op in (("linear", torch.ops.jitgemm.linear),
                       ("grouped", torch.ops.jitgemm.grouped_linear),
                       ("gated", torch.ops.jitgemm.gated_linear)):
        for dtype in DTYPES:
            rows = [r for r in results if r[1] == dtype and r[2] is op]
            if not rows:
                continue
            gerrs = [r[4] for r in rows if r[4] is not None]
            print(f"{opname:8} {dtype_name(dtype):5} {len(rows):5d} {len(gerrs):9d} "
                  f"{max(r[3] for r in rows):9.2e} "
                  f"{(max(gerrs) if gerrs else float('nan')):12.2e} "
                  f"{sum(not r[5] for r in rows):6d}")
    for r in results:
        if not r[5]:
            print(f"  FAILED {r[0]}: err {r[3]:.3e} grad err {r[4]}")


def check_modes(rng: random.Random):
    """Eager, CUDA graph replay and torch.compile(fullgraph=True) give identical results."""
    print("\n2. eager vs CUDA graph vs torch.compile(fullgraph=True)")
    failures = 0
    for i in range(12):
        dtype = DTYPES[i % 3]
        act = ACTS[i % 5]
        m, n, k = rng.choice([1, 8, 64, 300]), rng.choice([64, 256, 1024]), rng.choice([64, 512])
        x = torch.randn(2, m, k, device="cuda", dtype=dtype)
        w = torch.randn(n, k, device="cuda", dtype=dtype)
        b = torch.randn(n, device="cuda", dtype=dtype)
        gx = torch.randn(m, 4, 64, device="cuda", dtype=dtype)
        gw = torch.randn(4, 96, 64, device="cuda", dtype=dtype)
        # The gated op where the sm90 family serves it (fp16, bf16).
        uw = (torch.randn(2 * n, k, device="cuda", dtype=dtype) / math.sqrt(k)
              if dtype != torch.float32 else None)

        def f(x, w, b, gx, gw, uw):
            out = (torch.ops.jitgemm.linear(x, w, b, act),
                   torch.ops.jitgemm.grouped_linear(gx, gw, None, act))
            if uw is not None:
                out += (torch.ops.jitgemm.gated_linear(x, uw, None, act),)
            return out

        args = (x, w, b, gx, gw, uw)
        eager = f(*args)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = f(*args)
        graph.replay()
        torch.cuda.synchronize()
        # A fresh trace per case: twelve dtype / activation cases would pass
        # Dynamo's recompile limit for one function.
        torch._dynamo.reset()
        compiled = torch.compile(f, fullgraph=True, dynamic=False)(*args)
        torch.cuda.synchronize()
        same = all(torch.equal(e, c) and torch.equal(e, g)
                   for e, c, g in zip(eager, compiled, captured))
        failures += not same
        diff = max(max((e.float() - c.float()).abs().max().item(),
                       (e.float() - g.float()).abs().max().item())
                   for e, c, g in zip(eager, compiled, captured))
        print(f"  {dtype_name(dtype):4} {act:9} x(2,{m},{k}) w({n},{k}) + grouped"
              f"{' + gated' if uw is not None else ''}: "
              f"{'identical' if same else f'DIFFERENT (max abs diff {diff:.3e})'}")
    return failures


def check_gated_outside(seed: int):
    """Gated problems outside the sm90 family's domain: correct, or refused at plan creation
    with the library's error (until a route for them exists); never a wrong result."""
    print("\n1b. gated problems the sm90 family does not serve")
    served = refused = wrong = 0
    for desc, op, args, _ in gated_outside_cases(seed):
        try:
            y = op(*args)
        except jitgemm.JitgemmError as e:
            refused += 1
            print(f"  {desc}: refused ({str(e).splitlines()[0][:110]})")
            continue
        err = rel_err(y, reference(op, args))
        ok = err <= TOL[args[0].dtype]
        served += ok
        wrong += not ok
        print(f"  {desc}: {'served' if ok else 'WRONG'}, err {err:.2e}")
    return served, refused, wrong


def check_capture_miss():
    print("\n3. a problem first met inside CUDA graph capture")
    failures = 0
    x = torch.randn(3, 77, device="cuda", dtype=torch.float16)
    w = torch.randn(45, 77, device="cuda", dtype=torch.float16)
    graph = torch.cuda.CUDAGraph()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.cuda.graph(graph):
            y = torch.ops.jitgemm.linear(x, w, None, "relu")
    graph.replay()
    torch.cuda.synchronize()
    err = rel_err(y, ref_act(x.double() @ w.double().t(), "relu"))
    warned = any("inside CUDA graph capture" in str(c.message) for c in caught)
    print(f"  heuristic policy: error {err:.2e}, warned: {warned}")
    failures += not (err < TOL[torch.float16] and warned)
    jitgemm.ops.set_capture_policy("error")
    x2 = torch.randn(3, 79, device="cuda", dtype=torch.float16)
    w2 = torch.randn(45, 79, device="cuda", dtype=torch.float16)
    raised = False
    try:
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            torch.ops.jitgemm.linear(x2, w2, None, "none")
    except jitgemm.ops.CaptureMissError as e:
        raised = "run the op once before capturing" in str(e)
    except Exception as e:  # the capture itself may report the abandoned graph
        raised = isinstance(e.__context__, jitgemm.ops.CaptureMissError)
    jitgemm.ops.set_capture_policy("heuristic")
    print(f"  error policy: CaptureMissError raised: {raised}")
    return failures + (not raised)


def host_times(fns, calls: int = 500, repeats: int = 9) -> list[float]:
    """Median µs to issue one call of each of `fns`: each loop is timed without waiting for
    the GPU, and stays short enough (500 calls) that the launch queue never fills and
    blocks it. The functions take turns within every repeat, so that a slow spell of the
    host (which moved one function's time by half in earlier runs) hits all of them."""
    for fn in fns:
        for _ in range(200):
            fn()
    torch.cuda.synchronize()
    times = [[] for _ in fns]
    for _ in range(repeats):
        for fn, out in zip(fns, times):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            out.append((time.perf_counter() - start) / calls * 1e6)
            torch.cuda.synchronize()
    return [statistics.median(t) for t in times]


def check_host_time():
    """Host µs per call, no_grad eager: F.linear vs torch.ops.jitgemm.linear (through the
    dispatcher) vs jitgemm.ops.linear (no dispatcher), the modules, and the bare Plan.run.
    Fails where the torch.ops path takes more than F.linear (5% noise allowed)."""
    print("\n4. host time per call (µs to issue one call, median of 9 x 500 calls, in turns)")
    rows = []
    print(f"  {'problem':28} {'F.linear':>9} {'torch.ops':>9} {'ops.linear':>10} "
          f"{'nn.Linear':>9} {'jitgemm.nn':>10} {'Plan.run':>9}  {'inference_mode:':>15} "
          f"{'F.linear':>8} {'torch.ops':>9}")
    for m, n, k in ((1, 256, 256), (8, 2048, 4096), (64, 256, 128)):
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        ref = torch.nn.Linear(k, n, device="cuda", dtype=torch.bfloat16)
        mod = jitgemm.nn.Linear.from_linear(ref)
        w, b = ref.weight.detach(), ref.bias.detach()
        with torch.no_grad():
            t_f, t_j, t_m, t_jm, t_d = host_times([
                lambda: F.linear(x, w, b),
                lambda: torch.ops.jitgemm.linear(x, w, b, "none"),
                lambda: ref(x),
                lambda: mod(x),
                lambda: jitgemm.ops.linear(x, w, b),  # no dispatcher
            ])
        with torch.inference_mode():  # no autograd key: the dispatcher's floor
            t_fi, t_ji = host_times([lambda: F.linear(x, w, b),
                                     lambda: torch.ops.jitgemm.linear(x, w, b, "none")])
        # The floor: the C ABI's run through ctypes, output preallocated.
        p = jitgemm.gemm_problem(m, n, k, "bf16")
        p.b.layout = jitgemm.COL_MAJOR
        p.bias_mode = jitgemm.BIAS_PER_COLUMN
        plan = jitgemm.Plan(p)
        y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        stream = torch.cuda.current_stream().cuda_stream
        ptrs = (x.data_ptr(), w.data_ptr(), y.data_ptr(), 0, b.data_ptr(), stream)
        (t_p,) = host_times([lambda: plan.run(*ptrs)])
        name = f"bf16 {m}x{n}x{k} + bias"
        print(f"  {name:28} {t_f:9.1f} {t_j:9.1f} {t_d:10.1f} {t_m:9.1f} {t_jm:10.1f} "
              f"{t_p:9.1f}  {'':15} {t_fi:8.1f} {t_ji:9.1f}")
        rows.append((name, t_f, t_j, t_d))
    # The gated op against what PyTorch runs for it: one GEMM over 2N, silu, multiply.
    m, n, k = 8, 1024, 1024
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    wcat = torch.randn(2 * n, k, device="cuda", dtype=torch.bfloat16)

    def torch_swiglu():
        z = F.linear(x, wcat)
        return F.silu(z[:, :n]) * z[:, n:]

    with torch.no_grad():
        t_f, t_j, t_d = host_times([
            torch_swiglu,
            lambda: torch.ops.jitgemm.gated_linear(x, wcat, None, "silu"),
            lambda: jitgemm.ops.gated_linear(x, wcat),
        ])
    print(f"  {'swiglu 8x1024x1024 (torch: 3 ops)':28} {t_f:9.1f} {t_j:9.1f} {t_d:10.1f}")
    failures = sum(t_j > t_f * 1.05 for _, t_f, t_j, _ in rows)
    return failures, rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=240)
    parser.add_argument("--gated-cases", type=int, default=40)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--tuning", default="heuristic",
                        help="tuning for the plans made here (heuristic: one compile each)")
    parser.add_argument("--skip-host-time", action="store_true")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("SKIPPED: no CUDA device visible to PyTorch")
        return 0
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"jitgemm {jitgemm.__version__} ({jitgemm.library_path()})")
    jitgemm.ops.set_options(
        dataclasses.replace(jitgemm.Options.from_environment(), tuning=args.tuning))
    start = time.perf_counter()
    results = []
    cases = random_cases(args.cases, args.seed) + gated_cases(args.gated_cases, args.seed)
    for desc, op, op_args, grad in cases:
        try:
            check_case(desc, op, op_args, grad, results)
        except Exception as e:  # a failure of one case is reported, not fatal
            results.append((f"{desc}: {type(e).__name__}: {e}", op_args[0].dtype, op,
                            math.inf, None, False))
    print_summary(results)
    served, refused, wrong = check_gated_outside(args.seed)
    mode_failures = check_modes(random.Random(args.seed))
    capture_failures = check_capture_miss()
    host_failures, host_rows = (0, []) if args.skip_host_time else check_host_time()
    stats = jitgemm.cache_stats()
    print(f"\nplans made: {len(jitgemm.ops.plans())}; cache: {stats['compiles']} compiles, "
          f"{stats['hits']} hits, {stats['entries']} entries; {time.perf_counter() - start:.0f} s")

    def counts(ops):
        rows = [r for r in results if r[2] in ops]
        bad = sum(not r[5] for r in rows)
        return f"{len(rows) - bad} passed, {bad} failed"

    print("\nsummary")
    print(f"  {'1. random linear + grouped vs float64':44} "
          f"{counts((torch.ops.jitgemm.linear, torch.ops.jitgemm.grouped_linear))}")
    print(f"  {'1. random gated_linear vs float64':44} "
          f"{counts((torch.ops.jitgemm.gated_linear,))}")
    print(f"  {'1b. gated outside the sm90 domain':44} {served} served, {refused} refused "
          f"at plan creation, {wrong} wrong")
    print(f"  {'2. eager = CUDA graph = torch.compile':44} "
          f"{12 - mode_failures} identical, {mode_failures} different")
    print(f"  {'3. first met in capture':44} {'ok' if not capture_failures else 'FAILED'}")
    if host_rows:
        print(f"  {'4. host µs/call (no_grad)':30} {'F.linear':>8} {'torch.ops':>9} "
              f"{'ops.linear':>10}  verdict")
        for name, t_f, t_j, t_d in host_rows:
            verdict = "ok" if t_j <= t_f * 1.05 else "SLOWER than F.linear"
            print(f"     {name:27} {t_f:8.1f} {t_j:9.1f} {t_d:10.1f}  {verdict}")
    failures = (sum(not r[5] for r in results) + wrong + mode_failures + capture_failures +
                host_failures)
    print(f"{len(results) - sum(not r[5] for r in results)} passed, "
          f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
