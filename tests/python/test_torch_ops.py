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
    from jitgemm.ops import _kernels, _operands

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
        self.assertEqual(
            str(torch.ops.jitgemm.gated_linear.default._schema),
            "jitgemm::gated_linear(Tensor x, Tensor weight, Tensor? bias=None, "
            "str activation=\"silu\") -> Tensor")
        self.assertEqual(str(torch.ops.jitgemm.matmul.default._schema),
                         "jitgemm::matmul(Tensor a, Tensor b) -> Tensor")

    def test_opcheck_on_fake_tensors(self):
        torch.library.opcheck(torch.ops.jitgemm.linear.default,
                              (meta(4, 8, 16), meta(32, 16), meta(32), "gelu"))
        torch.library.opcheck(torch.ops.jitgemm.grouped_linear.default,
                              (meta(6, 3, 16), meta(3, 8, 16), meta(3, 8), "silu"))
        torch.library.opcheck(torch.ops.jitgemm.gated_linear.default,
                              (meta(2, 4, 16), meta(64, 16), meta(64), "gelu_tanh"))
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

    def test_gated_shapes(self):
        self.assertEqual(torch.ops.jitgemm.gated_linear(meta(16), meta(64, 16)).shape, (32,))
        y = torch.ops.jitgemm.gated_linear(meta(2, 3, 5, 16), meta(64, 16), meta(64), "relu")
        self.assertEqual((y.shape, y.dtype), ((2, 3, 5, 32), torch.bfloat16))

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

    def test_gated_errors_name_the_tensor(self):
        op = torch.ops.jitgemm.gated_linear
        cases = [
            ((meta(4, 16), meta(63, 16)), ValueError, "weight: first dimension 63 is odd"),
            ((meta(4, 16), meta(64, 16, dtype=torch.float16)), TypeError,
             "weight: dtype torch.float16 differs from x's torch.bfloat16"),
            ((meta(4, 16), meta(64, 8)), ValueError, "x: last dimension 16 differs"),
            ((meta(4, 16), meta(64)), ValueError, "weight: expected a 2-D"),
            ((meta(4, 16), meta(64, 16), meta(32)), ValueError, "bias: expected shape (64,)"),
            ((meta(4, 16), meta(64, 16), meta(64, dtype=torch.float32)), TypeError,
             "bias: dtype torch.float32 differs"),
            ((meta(4, 16), meta(64, 16), None, "swish"), ValueError, "activation: expected"),
        ]
        for args, error, text in cases:
            with self.subTest(text):
                with self.assertRaisesRegex(error, "jitgemm.gated_linear: " + text.replace(
                        "(", r"\(").replace(")", r"\)")):
                    op(*args)
        with FakeTensorMode():
            x = torch.empty(4, 16, device="cuda", dtype=torch.float16)
            w = torch.empty(64, 16, device="cpu", dtype=torch.float16)
            with self.assertRaisesRegex(ValueError,
                                        "jitgemm.gated_linear: weight: on cpu, but x is on"):
                _kernels.gated_linear(x, w, None, "silu")

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

    def test_compile_fullgraph_keeps_the_gated_op(self):
        graphs = []

        def backend(gm, example_inputs):
            graphs.append(gm)
            return gm.forward

        def f(x, w, b, wd):
            h = torch.ops.jitgemm.gated_linear(x, w, b, "silu")
            return torch.ops.jitgemm.linear(h, wd)

        with FakeTensorMode(allow_non_fake_inputs=True):
            args = (torch.empty(2, 8, 16, device="cuda", dtype=torch.bfloat16),
                    torch.empty(64, 16, device="cuda", dtype=torch.bfloat16),
                    torch.empty(64, device="cuda", dtype=torch.bfloat16),
                    torch.empty(16, 32, device="cuda", dtype=torch.bfloat16))
            y = torch.compile(f, fullgraph=True, backend=backend)(*args)
            self.assertEqual(y.shape, (2, 8, 16))
            self.assertIn("torch.ops.jitgemm.gated_linear", graphs[0].code)
            y = torch.compile(f, fullgraph=True, backend="aot_eager")(*args)
            self.assertEqual(y.shape, (2, 8, 16))

    def test_gated_backward_is_made_of_jitgemm_ops(self):
        for act in ("none", "relu", "gelu", "gelu_tanh", "silu"):
            with self.subTest(act):
                def f(x, w, b):
                    y = torch.ops.jitgemm.gated_linear(x, w, b, act)
                    return torch.autograd.grad(y.sum(), (x, w, b))
                gm = make_fx(f, tracing_mode="fake")(
                    meta(4, 8, 16, grad=True), meta(64, 16, grad=True), meta(64, grad=True))
                code = gm.code
                # forward, the recomputed 2N product and dx; dW as one matmul
                self.assertEqual(code.count("jitgemm.gated_linear"), 1)
                self.assertEqual(code.count("jitgemm.linear"), 2)
                self.assertEqual(code.count("jitgemm.matmul"), 1)

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

    def test_compiled_module_keeps_the_op(self):
        # Eager no-grad calls skip the dispatcher; under torch.compile the op must show.
        graphs = []

        def backend(gm, example_inputs):
            graphs.append(gm)
            return gm.forward

        with FakeTensorMode(allow_non_fake_inputs=True):
            m = jitgemm.nn.Linear(16, 32, device="cuda", activation="relu")
            with torch.no_grad():
                y = torch.compile(m, fullgraph=True, backend=backend)(
                    torch.empty(4, 16, device="cuda"))
        self.assertEqual(y.shape, (4, 32))
        self.assertIn("torch.ops.jitgemm.linear", graphs[0].code)

    def test_gated_linear_module(self):
        torch.manual_seed(0)
        gate, up = torch.nn.Linear(16, 8), torch.nn.Linear(16, 8)
        m = jitgemm.nn.GatedLinear.from_linears(gate, up, activation="gelu")
        self.assertEqual((m.weight.shape, m.bias.shape), ((16, 16), (16,)))
        self.assertIn("activation='gelu'", repr(m))
        x = torch.randn(3, 16)
        # On the CPU the module computes with torch: the two layers' result.
        torch.testing.assert_close(m(x), torch.nn.functional.gelu(gate(x)) * up(x))
        self.assertEqual(jitgemm.nn.GatedLinear(16, 8).weight.shape, (16, 16))
        with self.assertRaisesRegex(ValueError, "from_linears: gate"):
            jitgemm.nn.GatedLinear.from_linears(gate, torch.nn.Linear(16, 9))

    def test_capture_policy_names(self):
        with self.assertRaisesRegex(ValueError, "capture policy"):
            jitgemm.ops.set_capture_policy("compile")


if __name__ == "__main__":
    unittest.main()
