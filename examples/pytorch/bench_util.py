"""Timing, tables and plots shared by the seed examples (BENCHMARKS.md's method).

graph_us: CUDA events around a CUDA graph holding `launches` calls, replayed 5
times after 3 warm replays; the median per call. The function is warmed up
eagerly first, so compiling, tuning and cuBLAS handle creation stay out.
eager_us: the same with the calls issued from Python each time (host overhead
included), for variants whose point is that overhead.
"""

from __future__ import annotations

import csv
import os
import pathlib
import statistics
import sys
import textwrap
from typing import Callable, Dict, List, Optional, Sequence

try:
    import torch
except ImportError:  # tables and plots (replot.py) need no torch
    torch = None


def require_cuda() -> None:
    if torch is None or not torch.cuda.is_available():
        print("This example needs a CUDA GPU visible to PyTorch.")
        sys.exit(0)
    try:
        import jitgemm  # noqa: F401
    except ImportError:
        print("jitgemm is not importable: pip install ./python, or PYTHONPATH=<folder made by "
              "python/build_local.sh>")
        sys.exit(1)


def out_dir(default_name: str) -> pathlib.Path:
    """$OUT if set (device runs), else bench/results/pytorch/ of this checkout."""
    root = os.environ.get("OUT")
    path = pathlib.Path(root) if root else (
        pathlib.Path(__file__).resolve().parents[2] / "bench" / "results" / "pytorch")
    path.mkdir(parents=True, exist_ok=True)
    return path


def graph_us(step: Callable[[int], object], launches: int = 100, warmup: int = 3,
             replays: int = 5) -> float:
    """Median µs per call of step(i), i in [0, launches), captured in one CUDA graph."""
    for i in range(warmup):
        step(i)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(launches):
            step(i)
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1000 / launches)
    del graph
    return statistics.median(times)


def eager_us(step: Callable[[int], object], launches: int = 100, warmup: int = 3,
             repeats: int = 5) -> float:
    """Median µs per call of step(i) issued from Python, timed with CUDA events."""
    for i in range(warmup):
        step(i)
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(launches):
            step(i)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1000 / launches)
    return statistics.median(times)


def print_table(title: str, rows: List[Dict[str, object]], columns: Sequence[str]) -> None:
    print(f"\n{title}")
    widths = [max(len(c), *(len(fmt(r.get(c))) for r in rows)) for c in columns]
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    for r in rows:
        print("  ".join(fmt(r.get(c)).rjust(w) for c, w in zip(columns, widths)))


def fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def write_csv(path: pathlib.Path, rows: List[Dict[str, object]]) -> None:
    keys: List[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {path}")


def bar_chart(path: pathlib.Path, title: str, groups: Sequence[str],
              series: Dict[str, Sequence[Optional[float]]], ylabel: str = "speedup (x)") -> None:
    """Grouped bars (one group per problem, one bar per variant); table-only without
    matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed: no plot ({path.name}); the table above has "
              "the numbers")
        return
    fig, ax = plt.subplots(figsize=(max(7, 0.6 * len(groups) * max(1, len(series))), 4.5))
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        bars = ax.bar(xs, [v if v is not None else 0 for v in values], width, label=name)
        ax.bar_label(bars, fmt="%.2f", fontsize=7)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=20, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title("\n".join(textwrap.wrap(title, 70)), fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"wrote {path}")


def device_line() -> str:
    import jitgemm
    return (f"{torch.cuda.get_device_name()}, torch {torch.__version__}, "
            f"jitgemm {jitgemm.__version__}")
