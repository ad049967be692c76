#!/usr/bin/env python3
"""Fits the polynomial of GELU-erf's fp32 form (kernels_src/common/activation_f32.cuh)
and reports its error in fp32 arithmetic against float64.

GELU-erf(x) = x * Phi(x), with Phi(-u) = erfc(u / sqrt 2) / 2 = 2^P(u) for u = |x| in
[0, 4.5 sqrt 2]: P is fitted to log2 Phi(-u) with P(0) = -1 exactly, by least squares on
Chebyshev nodes reweighted towards the largest errors (Lawson's iteration, close to
minimax). The evaluation is simulated as the kernel does it: fp32 coefficients, Horner
with fused multiply-adds, 2^P rounded to fp32, 1 - h for x >= 0.

Usage: scripts/fit_gelu_erf.py [--degree 11]   (needs numpy)
"""
import argparse
import math

import numpy as np

END = 4.5 * math.sqrt(2)


def log2_phi_neg(u):
    return np.log2(np.array([0.5 * math.erfc(v / math.sqrt(2)) for v in u]))


def fit(degree, iterations=40, nodes=4000):
    u = ((1 - np.cos(np.linspace(0, np.pi, nodes))) * END / 2)[1:]
    y = log2_phi_neg(u) + 1.0
    vander = np.vander(u, degree + 1)[:, :-1]  # P(0) = -1: no free constant term
    w = np.ones(len(u))
    for _ in range(iterations):
        c, *_ = np.linalg.lstsq(vander * w[:, None], y * w, rcond=None)
        e = np.abs(vander @ c - y)
        w *= (e / e.max()) ** 0.3 + 1e-3
        w /= w.max()
    return np.append(c, -1.0)


def fma32(a, b, c):
    # The product of two fp32 values is exact in float64.
    return np.float32(np.float64(a) * np.float64(b) + np.float64(c))


def gelu_fp32(x, coeffs):
    c32 = [np.float32(v) for v in coeffs]
    u = np.minimum(np.abs(x), np.float32(END))
    p = np.full_like(u, c32[0])
    for v in c32[1:]:
        p = fma32(p, u, np.full_like(u, v))
    h = np.float32(np.exp2(np.float64(p)))
    phi = np.where(x >= 0, np.float32(1) - h, np.where(x >= -np.float32(END), h, np.float32(0)))
    return np.float32(x * phi)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--degree", type=int, default=11)
    args = ap.parse_args()
    c = fit(args.degree)
    print("coefficients, highest power first:")
    for v in c:
        print(f"  {np.float32(v):.9e}f")
    x = np.float32(np.linspace(-12, 12, 400001))
    want = np.array([v * 0.5 * math.erfc(-v / math.sqrt(2)) for v in np.float64(x)])
    got = np.float64(gelu_fp32(x, c))
    half = np.float32(0.5)
    erff_form = np.float64(np.float32(half * x * np.float32(
        1 + np.float32([math.erf(v) for v in np.float64(np.float32(x * np.float32(0.70710678)))]))))
    print("largest relative error by range of x (fp32 arithmetic; 2^P exact before rounding):")
    print("  range           this form   0.5 x (1 + erff(x / sqrt 2))")
    for lo, hi in [(-6.3, -4), (-4, -2), (-2, -0.5), (-0.5, 0.5), (0.5, 2), (2, 12)]:
        m = (x >= lo) & (x < hi) & (np.abs(want) > 1e-30)
        e1 = (np.abs(got - want)[m] / np.abs(want)[m]).max()
        e2 = (np.abs(erff_form - want)[m] / np.abs(want)[m]).max()
        print(f"  [{lo:5}, {hi:4})   {e1:9.2e}   {e2:9.2e}")


if __name__ == "__main__":
    main()
