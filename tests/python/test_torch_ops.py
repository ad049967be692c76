"""torch.ops.jitgemm.* without a GPU: schemas, fake kernels, argument checks and their
messages, torch.compile(fullgraph=True) and autograd traced with fake tensors, and
jitgemm.nn. Skips, saying why, where PyTorch is not installed. The same checks on a
GPU, against float64: python/tests/gpu_check.py.
"""

import unittest

try:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
except ImportError:  # the whole module skips
    torch = None

if torch is not None:
    import jitgemm
    import jitgemm.nn
    from jitgemm.ops import _kernels, _operands, _plan_table

SKIP = torch is None
REASON = "PyTorch is not installed"


def meta(*shape, dtype=None, grad=False):
    return torch.empty(*shape, device="meta", dtype=dtype or torch.bfloat16, requires_grad=grad)


@unittest.skipIf(SKIP, REASON)
class SchemaTest(unittest.TestCase):
    def test_schemas(self):
        self.assertEqual(
            str(torch.ops.jitgemm.linear.default._schema),
            "jitgemm::linear(Tensor x, Tensor weight, Tensor? bias=None, "
            "str activation=\"none\") -> Tensor")
        self.assertEqual(
            str(torch.ops.jitgemm.grouped_linear.default._schema),
            "jitgemm::grouped_linear(Tensor x, Tensor weight, Tensor? bias=None, "
            "str activation=\"none\") -> Tensor")
        self.assertEqual(str(torch.ops.jitgemm.matmul.default._schema),
                         "jitgemm::matmul(Tensor a, Tensor b) -> Tensor")
        self.assertFalse(hasattr(torch.ops.jitgemm, "gated_linear"),
                         "no gated epilogue in the library yet")

    def test_opcheck_on_fake_tensors(self):
        torch.library.opcheck(torch.ops.jitgemm.linear.default,
                              (meta(4, 8, 16), meta(32, 16), meta(32), "gelu"))
        torch.library.opcheck(torch.ops.jitgemm.grouped_linear.default,
                              (meta(6, 3, 16), meta(3, 8, 16), meta(3, 8), "silu"))
        torch.library.opcheck(torch.ops.jitgemm.matmul.default, (meta(5, 7, 16), meta(5, 16, 9)))


@unittest.skipIf(SKIP, REASON)
class FakeShapeTest(unittest.TestCase):
    def test_linear_shapes(self):
        self.assertEqual(torch.ops.jitgemm.linear(meta(16), meta(32, 16)).shape, (32,))
        self.assertEqual(torch.ops.jitgemm.linear(meta(2, 3, 5, 16), meta(32, 16)).shape,
                         (2, 3, 5, 32))

    def test_grouped_shapes(self):
        y = torch.ops.jitgemm.grouped_linear(meta(2560, 12, 64), meta(12, 96, 64), meta(12, 96))
        self.assertEqual(y.shape, (2560, 12, 96))
        self.assertEqual(torch.ops.jitgemm.grouped_linear(meta(2, 4, 12, 64),
                                                          meta(12, 96, 64)).shape,
                         (2, 4, 12, 96))

    def test_matmul_shapes(self):
        self.assertEqual(torch.ops.jitgemm.matmul(meta(7, 16), meta(16, 9)).shape, (7, 9))
        self.assertEqual(torch.ops.jitgemm.matmul(meta(7, 16), meta(3, 16, 9)).shape, (3, 7, 9))


@unittest.skipIf(SKIP, REASON)
class ArgumentCheckTest(unittest.TestCase):
    def test_dtype_and_shape_errors_name_the_tensor(self):
        cases = [
            ((meta(4, 16), meta(32, 16, dtype=torch.float16)), TypeError, "weight: dtype"),
            ((meta(4, 16, dtype=torch.float64), meta(32, 16, dtype=torch.float64)), TypeError,
             "x: dtype torch.float64 is not supported"),
            ((meta(4, 16), meta(32, 8)), ValueError, "x: last dimension 16 differs"),
            ((meta(4, 16), meta(2, 32, 16)), ValueError, "weight: expected a 2-D"),
            ((meta(4, 16), meta(32, 16), meta(31)), ValueError, "bias: expected shape (32,)"),
        ]
        for args, error, text in cases:
            with self.subTest(text):
                with self.assertRaisesRegex(error, "jitgemm.linear: " + text.replace("(", r"\(")
                                            .replace(")", r"\)")):
                    torch.ops.jitgemm.linear(*args)

    def test_activation_names(self):
        with self.assertRaisesRegex(ValueError, "activation: expected one of"):
            torch.ops.jitgemm.linear(meta(4, 16), meta(32, 16), None, "tanh")

    def test_grouped_errors(self):
        with self.assertRaisesRegex(ValueError, r"jitgemm.grouped_linear: x: last two dimensions"):
            torch.ops.jitgemm.grouped_linear(meta(8, 4, 16), meta(3, 8, 16))
        with self.assertRaisesRegex(ValueError, r"jitgemm.grouped_linear: bias: expected shape"):
            torch.ops.jitgemm.grouped_linear(meta(8, 3, 16), meta(3, 8, 16), meta(8))

    def test_cpu_tensors_are_refused(self):
        with self.assertRaisesRegex(ValueError, "CUDA devices only"):
            torch.ops.jitgemm.linear(torch.randn(2, 3), torch.randn(4, 3))

    def test_strides_no_layout_expresses_name_the_tensor(self):
        # Fake CUDA tensors reach the CUDA kernel's checks, which raise before any launch.
        with FakeTensorMode():
            x = torch.empty(4, 32, device="cuda", dtype=torch.float16)
            w = torch.empty(64, 16, device="cuda", dtype=torch.float16)
            with self.assertRaisesRegex(ValueError, r"jitgemm.linear: x: strides \(32, 2\)"):
                _kernels.linear(x[:, ::2], w, None, "none")
            w2 = torch.empty(64, 64, device="cuda", dtype=torch.float16)
            with self.assertRaisesRegex(ValueError, r"jitgemm.linear: weight: strides"):
                _kernels.linear(torch.empty(4, 32, device="cuda", dtype=torch.float16),
                                w2[::2, ::2], None, "none")
            x3 = torch.empty(6, 8, 16, device="cuda", dtype=torch.float16).transpose(0, 1)
            with self.assertRaisesRegex(ValueError, "jitgemm.linear: x: the leading dimensions"):
                _kernels.linear(x3[:, ::2], w, None, "none")
            b = torch.empty(128, device="cuda", dtype=torch.float16)[::2]
            with self.assertRaisesRegex(ValueError, "jitgemm.linear: bias: the last dimension"):
                _kernels.linear(torch.empty(4, 16, device="cuda", dtype=torch.float16), w, b,
                                "none")

    def test_matrix_layouts(self):
        w = torch.empty(48, 16, device="meta")  # nn.Linear weight (N, K): B = w^T is col-major
        self.assertEqual(_operands.matrix("op", "w", w, 16, 48, 16, w.stride(1), 48, w.stride(0)),
                         (1, 16))
        t = w.t()  # as a weight: B = t^T = w, row-major
        self.assertEqual(_operands.matrix("op", "t", t, 48, 16, 48, t.stride(1), 16, t.stride(0)),
                         (0, 16))
        self.assertEqual(_operands.alignment(0x1000, 0x1008, 0), 8)
        self.assertEqual(_operands.alignment(0x1000, 0x2000), 16)


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
class RunPathTest(unittest.TestCase):
    """The per-call path up to the launch, on CPU tensors with the plan table and the
    device queries stubbed: pointers, stream and alignment handed to the plan, and the
    signature cache that lets a repeated call skip the checks."""

    def setUp(self):
        self.saved = {n: getattr(_kernels, n) for n in ("check_tensor", "_raw_stream",
                                                        "_current_device", "_describe_linear")}
        self.saved_get = _kernels._plan_table.get
        self.runs, self.gets, self.describes = [], [], 0
        test = self

        class Plan:
            def run(self, *args):
                test.runs.append(args)

        def get(key, stream, index, align, build):
            self.gets.append((key, stream, align, build()))
            return Plan()

        def describe(*args):
            self.describes += 1
            return self.saved["_describe_linear"](*args)

        _kernels.check_tensor = lambda op, name, t, like=None, fake=False: \
            self.saved["check_tensor"](op, name, t, like, True)
        _kernels._raw_stream = lambda index: 1234
        _kernels._current_device = lambda: None  # CPU tensors have no device index
        _kernels._describe_linear = describe
        _kernels._plan_table.get = get

    def tearDown(self):
        for name, value in self.saved.items():
            setattr(_kernels, name, value)
        _kernels._plan_table.get = self.saved_get
        _kernels._described.clear()

    def test_repeated_calls_reuse_the_description(self):
        x = torch.randn(2, 3, 64, dtype=torch.bfloat16)
        w = torch.randn(96, 64, dtype=torch.bfloat16)
        b = torch.randn(96, dtype=torch.bfloat16)
        y = _kernels.linear(x, w, b, "gelu")
        y2 = _kernels.linear(x, w, b, "gelu")
        self.assertEqual(self.describes, 1)
        self.assertEqual((y.shape, y.dtype), ((2, 3, 96), torch.bfloat16))
        self.assertEqual(self.runs[1], (x.data_ptr(), w.data_ptr(), y2.data_ptr(), 0,
                                        b.data_ptr(), 1234))
        key, stream, align, problem = self.gets[0]
        self.assertEqual((stream, problem.m, problem.activation), (1234, 6, 3))
        _kernels.linear(x, w, None, "gelu")  # another signature
        self.assertEqual(self.describes, 2)
        self.assertEqual(self.gets[2][3].bias_mode, 0)

    def test_alignment_follows_the_pointers(self):
        w = torch.randn(32, 16, dtype=torch.float16)
        x = torch.randn(4 * 16 + 1, dtype=torch.float16)[1:].view(4, 16)  # 2-byte aligned
        _kernels.linear(x, w, None, "none")
        self.assertEqual(self.gets[0][2], 2)
        self.assertEqual(self.gets[0][0][-1], 2, "the alignment is part of the plan's key")


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
class TraceTest(unittest.TestCase):
    def test_compile_fullgraph_keeps_the_ops(self):
        graphs = []

        def backend(gm, example_inputs):
            graphs.append(gm)
            return gm.forward

        def f(x, w, b, gw):
            h = torch.ops.jitgemm.linear(x, w, b, "relu")
            return torch.ops.jitgemm.grouped_linear(h.view(8, 4, 8), gw, None, "silu") * 2

        compiled = torch.compile(f, fullgraph=True, backend=backend)
        y = compiled(meta(8, 16), meta(32, 16), meta(32), meta(4, 5, 8))
        self.assertEqual(y.shape, (8, 4, 5))
        self.assertEqual(len(graphs), 1)
        code = graphs[0].code
        self.assertIn("jitgemm.linear", code)
        self.assertIn("jitgemm.grouped_linear", code)
        # And through AOTAutograd's fake-tensor trace, as inductor would see it.
        y = torch.compile(f, fullgraph=True, backend="aot_eager")(
            meta(8, 16), meta(32, 16), meta(32), meta(4, 5, 8))
        self.assertEqual(y.shape, (8, 4, 5))

    def test_backward_is_made_of_jitgemm_ops(self):
        for act in ("none", "relu", "gelu", "gelu_tanh", "silu"):
            with self.subTest(act):
                def f(x, w, b):
                    y = torch.ops.jitgemm.linear(x, w, b, act)
                    return torch.autograd.grad(y.sum(), (x, w, b))
                code = make_fx(f, tracing_mode="fake")(
                    meta(4, 8, 16, grad=True), meta(32, 16, grad=True), meta(32, grad=True)).code
                self.assertIn("jitgemm.matmul", code)
                self.assertEqual(code.count("jitgemm.linear"), 2 if act in ("none", "relu") else 3)

    def test_grouped_backward_shapes(self):
        x, w, b = meta(10, 3, 16, grad=True), meta(3, 8, 16, grad=True), meta(3, 8, grad=True)
        y = torch.ops.jitgemm.grouped_linear(x, w, b, "gelu")
        dx, dw, db = torch.autograd.grad(y.sum(), (x, w, b))
        self.assertEqual((dx.shape, dw.shape, db.shape), (x.shape, w.shape, b.shape))


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

    def test_grouped_linear(self):
        def ref(x, w, b, a):
            return self.ACTS[a](torch.stack([torch.nn.functional.linear(x[:, i], w[i], b[i])
                                             for i in range(w.shape[0])], dim=1))
        for act in self.ACTS:
            with self.subTest(act):
                self.check(torch.ops.jitgemm.grouped_linear, ref, [(6, 3, 16), (3, 8, 16), (3, 8)],
                           act)


@unittest.skipIf(SKIP, REASON)
class NnTest(unittest.TestCase):
    def test_replace_linears_fuses_activations_and_keeps_parameters(self):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                    torch.nn.Linear(32, 8), torch.nn.GELU(approximate="tanh"),
                                    torch.nn.Sequential(torch.nn.Linear(8, 4)))
        x = torch.randn(5, 16)
        expected = model(x)
        keys = list(model.state_dict())
        weight = model[0].weight
        jitgemm.nn.replace_linears(model)
        self.assertIsInstance(model[0], jitgemm.nn.Linear)
        self.assertEqual(model[0].activation, "relu")
        self.assertIsInstance(model[1], torch.nn.Identity)
        self.assertEqual(model[2].activation, "gelu_tanh")
        self.assertIsInstance(model[4][0], jitgemm.nn.Linear)
        self.assertIs(model[0].weight, weight)
        self.assertEqual(list(model.state_dict()), keys)
        # On the CPU the module falls back to torch: same numbers.
        torch.testing.assert_close(model(x), expected)

    def test_linear_is_a_drop_in(self):
        m = jitgemm.nn.Linear(16, 8, activation="silu")
        self.assertIsInstance(m, torch.nn.Linear)
        self.assertIn("activation='silu'", repr(m))
        x = torch.randn(3, 16)
        torch.testing.assert_close(m(x), torch.nn.functional.silu(
            torch.nn.functional.linear(x, m.weight, m.bias)))

    def test_capture_policy_names(self):
        with self.assertRaisesRegex(ValueError, "capture policy"):
            jitgemm.ops.set_capture_policy("compile")


if __name__ == "__main__":
    unittest.main()
