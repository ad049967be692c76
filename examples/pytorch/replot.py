"""Renders the seed 004 chart again from its committed table, on any machine with
matplotlib (no GPU): the figures are the ones seed002_004_mlp.py measured.

    python3 examples/pytorch/replot.py bench/results/pytorch
"""
import csv
import pathlib
import sys

import bench_util as bu


def main() -> None:
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    with open(out / "seed004_mlp.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    bu.bar_chart(out / "seed004_mlp.png",
                 "Seed 004: fp32 8-layer MLP, jitgemm (fused bias+ReLU) over PyTorch",
                 [f"h{r['hidden']} b{r['batch']}" for r in rows],
                 {"eager": [float(r["eager x"]) for r in rows],
                  "CUDA graph": [float(r["graph x"]) for r in rows]})


if __name__ == "__main__":
    main()
