"""The torch ops' internals without a GPU: the GEMM problem each op describes, the
plan table (capture, options), and the backward formulas checked numerically on the
CPU (the per-call path is in test_torch_call_path.py). Skips, saying why, without
PyTorch.
"""

import unittest

try:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
except ImportError:  # the whole module skips
    torch = None

if torch is not None:
    import jitgemm
    from jitgemm.ops import _kernels, _plan_table

SKIP = torch is None
REASON = "PyTorch is not installed"


@unittest.skipIf(SKIP, REASON)
class ProblemLayoutTest(unittest.TestCase):
    """The GEMM problem each op describes, recorded at the launch (fake CUDA tensors)."""

    def setUp(self):
        self.launched = []
        self.saved = _kernels._run

        def run(sig, describe, device, a, *tensors):
            call = describe()
            self.launched.append(call.build())
            return torch.empty(call.out_shape, dtype=a.dtype, device=device)

        _kernels._run = run
        self.mode = FakeTensorMode()
        self.mode.__enter__()

    def tearDown(self):
        self.mode.__exit__(None, None, None)
        _kernels._run = self.saved

    @staticmethod
    def cuda(*shape):
        return torch.empty(*shape, device="cuda", dtype=torch.bfloat16)

    def op(self, o):
        return (o.type, o.layout, o.ld, o.batch_stride)

    def test_linear_reads_the_weight_as_column_major_b(self):
        y = _kernels.linear(self.cuda(2, 3, 64), self.cuda(96, 64), self.cuda(96), "relu")
        self.assertEqual(y.shape, (2, 3, 96))
        p = self.launched[0]
        self.assertEqual((p.m, p.n, p.k, p.batch_count), (6, 96, 64, 1))
        self.assertEqual(self.op(p.a), (2, 0, 64, -1))
        self.assertEqual(self.op(p.b), (2, 1, 64, -1))
        self.assertEqual(self.op(p.d), (2, 0, 96, -1))
        self.assertEqual((p.bias_mode, p.activation), (1, 1))

    def test_linear_with_a_transposed_weight_reads_b_row_major(self):
        _kernels.linear(self.cuda(5, 64), self.cuda(64, 96).t(), None, "none")
        self.assertEqual(self.op(self.launched[0].b), (2, 0, 96, -1))
        self.assertEqual(self.launched[0].bias_mode, 0)

    def test_grouped_is_the_problem_h_example(self):
        rows, g, din, dout = 2560, 12, 1024, 3072
        _kernels.grouped_linear(self.cuda(rows, g, din), self.cuda(g, dout, din), None, "none")
        p = self.launched[0]
        self.assertEqual((p.m, p.n, p.k, p.batch_count), (rows, dout, din, g))
        self.assertEqual(self.op(p.a), (2, 0, g * din, din))
        self.assertEqual(self.op(p.b), (2, 1, din, din * dout))
        self.assertEqual(self.op(p.d), (2, 0, g * dout, dout))

    def test_grouped_bias_has_a_per_group_stride(self):
        _kernels.grouped_linear(self.cuda(7, 3, 16), self.cuda(3, 8, 16), self.cuda(3, 8), "silu")
        p = self.launched[0]
        self.assertEqual((p.bias_mode, p.bias_batch_stride, p.activation), (1, 8, 4))

    def test_gated_reads_the_stacked_weight_as_a_2n_column_b(self):
        y = _kernels.gated_linear(self.cuda(2, 3, 64), self.cuda(2 * 96, 64), self.cuda(2 * 96),
                                  "silu")
        self.assertEqual(y.shape, (2, 3, 96))
        p = self.launched[0]
        self.assertEqual((p.m, p.n, p.k, p.batch_count, p.gate), (6, 96, 64, 1, 1))
        self.assertEqual(self.op(p.a), (2, 0, 64, -1))
        self.assertEqual(self.op(p.b), (2, 1, 64, -1))  # K x 2N column-major, ld K
        self.assertEqual(self.op(p.d), (2, 0, 96, -1))
        self.assertEqual((p.bias_mode, p.activation, p.beta), (1, 4, 0.0))
        _kernels.gated_linear(self.cuda(5, 64), self.cuda(64, 2 * 96).t(), None, "none")
        p = self.launched[1]
        self.assertEqual((self.op(p.b), p.bias_mode, p.gate), ((2, 0, 2 * 96, -1), 0, 1))
        self.assertIn("gated", jitgemm.describe_problem(p))

    def test_the_backward_gemms(self):
        g, rows, n, k = 3, 10, 8, 16
        dz, x, w = self.cuda(rows, g, n), self.cuda(rows, g, k), self.cuda(g, n, k)
        _kernels.grouped_linear(dz, w.transpose(1, 2), None, "none")  # dx
        dw = _kernels.matmul(dz.permute(1, 2, 0), x.permute(1, 0, 2))  # dW
        self.assertEqual(dw.shape, (g, n, k))
        px, pw = self.launched
        self.assertEqual((px.m, px.n, px.k, px.batch_count), (rows, k, n, g))
        self.assertEqual(self.op(px.b), (2, 0, k, n * k))  # W[g] (n x k) row-major
        self.assertEqual((pw.m, pw.n, pw.k, pw.batch_count), (n, k, rows, g))
        self.assertEqual(self.op(pw.a), (2, 1, g * n, n))  # dz[:, g, :]^T
        self.assertEqual(self.op(pw.b), (2, 0, g * k, k))
        self.assertEqual(self.op(pw.d), (2, 0, k, n * k))

    def test_matmul_broadcasts_a_2d_operand(self):
        _kernels.matmul(self.cuda(16, 144), self.cuda(4, 144, 256))
        p = self.launched[0]
        self.assertEqual((p.m, p.n, p.k, p.batch_count), (16, 256, 144, 4))
        self.assertEqual(self.op(p.a), (2, 0, 144, 0))
        self.assertEqual(self.op(p.b), (2, 0, 256, 144 * 256))


@unittest.skipIf(SKIP, REASON)
class PlanTableTest(unittest.TestCase):
    """When plans are made, with which options, and what capture does (Plan stubbed)."""

    def setUp(self):
        self.made = []
        test = self

        class FakePlan:
            def __init__(self, problem, options):
                test.made.append(options)
                self.problem, self.description = problem, f"fake {len(test.made)}"

        self.saved = (_plan_table.Plan, torch.cuda.is_current_stream_capturing)
        _plan_table.Plan = FakePlan
        self.capturing = False
        torch.cuda.is_current_stream_capturing = lambda: self.capturing
        _plan_table.clear()
        _plan_table._capture_warned = False
        self.problem = jitgemm.gemm_problem(8, 16, 32, "bf16")

    def tearDown(self):
        _plan_table.Plan, torch.cuda.is_current_stream_capturing = self.saved
        _plan_table.set_capture_policy("heuristic")
        _plan_table.set_options(None)
        _plan_table.clear()

    def get(self, key, stream, align=16):
        return _plan_table.get(key, stream, -1, align, lambda: self.problem)

    def test_one_plan_per_problem_and_stream(self):
        a = self.get(("p",), stream=1)
        self.assertIs(self.get(("p",), stream=1), a)
        self.assertIsNot(self.get(("p",), stream=2), a)
        self.assertEqual(len(self.made), 2)
        self.assertEqual(self.made[0], jitgemm.Options.from_environment())

    def test_alignment_lowers_the_promise(self):
        self.get(("p",), stream=1, align=4)
        self.assertEqual(self.made[0].pointer_alignment, 4)

    def test_capture_reuses_the_plan_of_another_stream(self):
        eager = self.get(("p",), stream=1)
        self.capturing = True
        self.assertIs(self.get(("p",), stream=7), eager)
        self.assertEqual(len(self.made), 1, "nothing planned inside capture")

    def test_an_unseen_problem_in_capture_plans_without_compiling(self):
        self.capturing = True
        with self.assertWarnsRegex(UserWarning, "inside CUDA graph capture without compiling"):
            self.get(("q",), stream=7)
        self.assertFalse(self.made[0].jit_enabled)
        self.assertEqual(self.made[0].tuning, "heuristic")

    def test_an_unseen_problem_in_capture_can_raise(self):
        _plan_table.set_capture_policy("error")
        self.capturing = True
        with self.assertRaisesRegex(_plan_table.CaptureMissError,
                                    "bf16 8x16x32.*run the op once before capturing"):
            self.get(("q",), stream=7)
        self.assertEqual(self.made, [])

    def test_options_have_their_own_plans(self):
        default = self.get(("p",), stream=1)
        _plan_table.set_options(jitgemm.Options(constant_b=True))
        constant = self.get(("p",), stream=1)
        self.assertIsNot(constant, default)
        self.assertTrue(self.made[1].constant_b)
        _plan_table.set_options(None)
        self.assertIs(self.get(("p",), stream=1), default)
        self.assertEqual(len(_plan_table.plans()), 2)


@unittest.skipIf(SKIP, REASON)
class BackwardMathTest(unittest.TestCase):
    """The backward formulas, numerically: the ops' CPU kernels are replaced by torch
    references for the test, so the registered autograd (the real one) runs on the CPU."""

    ACTS = {"none": lambda t: t, "relu": torch.relu, "gelu": torch.nn.functional.gelu,
            "gelu_tanh": lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
            "silu": torch.nn.functional.silu}

    def setUp(self):
        import warnings
        self.lib = torch.library.Library("jitgemm", "IMPL")
        acts = self.ACTS

        def linear(x, w, b=None, activation="none"):
            return acts[activation](torch.nn.functional.linear(x, w, b))

        def grouped(x, w, b=None, activation="none"):
            y = torch.einsum("...gk,gnk->...gn", x, w)
            return acts[activation](y + b if b is not None else y)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
            self.lib.impl("linear", linear, "CPU")
            self.lib.impl("grouped_linear", grouped, "CPU")
            self.lib.impl("gated_linear", self.gated_ref, "CPU")
            self.lib.impl("matmul", lambda a, b: torch.matmul(a, b).contiguous(), "CPU")

    def tearDown(self):
        self.lib._destroy()

    def check(self, op, ref, shapes, act, transpose_weight=False):
        torch.manual_seed(0)
        x, w, b = (torch.randn(*s, dtype=torch.float32) for s in shapes)
        if transpose_weight:
            w = w.transpose(-1, -2).contiguous().transpose(-1, -2)
        leaves = [t.clone().requires_grad_(True) for t in (x, w, b)]
        ref_leaves = [t.clone().requires_grad_(True) for t in (x, w, b)]
        y = op(*leaves, act)
        gy = torch.randn_like(y)
        got = torch.autograd.grad(y, leaves, gy)
        want = torch.autograd.grad(ref(*ref_leaves, act), ref_leaves, gy)
        for name, g, r in zip(("dx", "dw", "db"), got, want):
            self.assertEqual(g.shape, r.shape, name)
            torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-4, msg=f"{name} {act}")

    def test_linear(self):
        for act in self.ACTS:
            with self.subTest(act):
                self.check(torch.ops.jitgemm.linear,
                           lambda x, w, b, a: self.ACTS[a](torch.nn.functional.linear(x, w, b)),
                           [(2, 5, 16), (8, 16), (8,)], act)
        self.check(torch.ops.jitgemm.linear,
                   lambda x, w, b, a: self.ACTS[a](torch.nn.functional.linear(x, w, b)),
                   [(7, 16), (8, 16), (8,)], "silu", transpose_weight=True)

    def gated_ref(self, x, w, b=None, activation="silu"):
        g, u = torch.nn.functional.linear(x, w, b).chunk(2, dim=-1)
        return self.ACTS[activation](g) * u

    def test_gated_linear(self):
        for act in self.ACTS:
            with self.subTest(act):
                self.check(torch.ops.jitgemm.gated_linear, self.gated_ref,
                           [(2, 5, 16), (16, 16), (16,)], act)
        self.check(torch.ops.jitgemm.gated_linear, self.gated_ref, [(7, 16), (16, 16), (16,)],
                   "gelu_tanh", transpose_weight=True)

    def test_grouped_linear(self):
        def ref(x, w, b, a):
            return self.ACTS[a](torch.stack([torch.nn.functional.linear(x[:, i], w[i], b[i])
                                             for i in range(w.shape[0])], dim=1))
        for act in self.ACTS:
            with self.subTest(act):
                self.check(torch.ops.jitgemm.grouped_linear, ref, [(6, 3, 16), (3, 8, 16), (3, 8)],
                           act)


if __name__ == "__main__":
    unittest.main()
