"""The torch ops' per-call path without a GPU: what a call hands the plan up to the
launch (pointers, stream, alignment, the signature cache), the Autograd<backend>
shortcut through the real dispatcher, and when jitgemm.ops.linear may skip the
dispatcher. Skips, saying why, without PyTorch.
"""

import unittest

try:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
except ImportError:  # the whole module skips
    torch = None

if torch is not None:
    import jitgemm
    from jitgemm.ops import _fast_path, _kernels, _plan_table
    from torch.utils._python_dispatch import TorchDispatchMode

SKIP = torch is None
REASON = "PyTorch is not installed"


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
        self.assertEqual(len(self.gets), 1, "the repeated call ran the plan it kept")
        _kernels.linear(x, w, None, "gelu")  # another signature
        self.assertEqual(self.describes, 2)
        self.assertEqual(self.gets[1][3].bias_mode, 0)

    def test_each_stream_gets_its_plan_and_clear_drops_the_memo(self):
        x = torch.randn(4, 64, dtype=torch.bfloat16)
        w = torch.randn(96, 64, dtype=torch.bfloat16)
        _kernels.linear(x, w)
        _kernels._raw_stream = lambda index: 99
        _kernels.linear(x, w)
        self.assertEqual([g[1] for g in self.gets], [1234, 99])
        _kernels.linear(x, w)
        self.assertEqual(len(self.gets), 2)
        _plan_table.clear()  # as set_options: plans made before are not handed out again
        _kernels.linear(x, w)
        self.assertEqual((len(self.gets), self.describes), (3, 2))

    def test_gated_without_k_is_the_bias_halves(self):
        x, w, b = torch.randn(3, 0), torch.randn(8, 0), torch.randn(8)
        y = _kernels.gated_linear(x, w, b, "silu")
        torch.testing.assert_close(y, (torch.nn.functional.silu(b[:4]) * b[4:]).expand(3, 4))
        self.assertEqual(_kernels.gated_linear(x, w, None, "gelu").abs().sum().item(), 0)
        self.assertEqual(_kernels.gated_linear(torch.randn(0, 5), torch.randn(8, 5)).shape,
                         (0, 4))
        y = _kernels.linear(torch.randn(2, 3, 0), torch.randn(5, 0), b[:5], "relu")
        torch.testing.assert_close(y, torch.relu(b[:5]).expand(2, 3, 5))
        self.assertEqual(self.runs, [], "nothing to launch")

    def test_alignment_follows_the_pointers(self):
        w = torch.randn(32, 16, dtype=torch.float16)
        x = torch.randn(4 * 16 + 1, dtype=torch.float16)[1:].view(4, 16)  # 2-byte aligned
        _kernels.linear(x, w, None, "none")
        self.assertEqual(self.gets[0][2], 2)
        self.assertEqual(self.gets[0][0][-1], 2, "the alignment is part of the plan's key")


@unittest.skipIf(SKIP, REASON)
class FastPathTest(unittest.TestCase):
    """The Autograd<backend> shortcut of _fast_path, through the real dispatcher on an op of
    its own with a CPU kernel (the ops register it for CUDA the same way): which calls reach
    the kernel directly and which go through register_autograd's kernel."""

    @classmethod
    def setUpClass(cls):
        cls.lib = torch.library.Library("jitgemm_fast_path_test", "DEF")
        cls.lib.define("lin(Tensor x, Tensor weight, Tensor? bias=None, str activation='none')"
                       " -> Tensor")
        cls.calls = []

        def kernel(x, weight, bias=None, activation="none"):
            # register_autograd's kernel runs the kernel below autograd; the shortcut does not.
            below = torch._C._dispatch_tls_is_dispatch_key_excluded(
                torch._C.DispatchKey.AutogradFunctionality)
            cls.calls.append("autograd kernel" if below else "direct")
            return torch.nn.functional.linear(x, weight, bias)

        def backward(ctx, grad):
            x, weight = ctx.saved_tensors
            return grad @ weight, grad.t() @ x, grad.sum(0) if ctx.bias else None, None

        def setup(ctx, inputs, output):
            ctx.save_for_backward(inputs[0], inputs[1])
            ctx.bias = inputs[2] is not None

        cls.lib.impl("lin", kernel, "CPU")
        cls.lib.impl("lin", lambda x, w, b=None, a="none": x.new_empty(x.shape[0], w.shape[0]),
                     "Meta")
        _fast_path.register(cls.lib, "lin", kernel, backward, setup, backend="CPU")
        cls.op = torch.ops.jitgemm_fast_path_test.lin

    @classmethod
    def tearDownClass(cls):
        cls.lib._destroy()

    def setUp(self):
        self.calls.clear()
        self.x, self.w, self.b = torch.randn(4, 8), torch.randn(3, 8), torch.randn(3)

    def test_calls_needing_no_autograd_skip_the_wrapper(self):
        with torch.no_grad():
            self.op(self.x, self.w.requires_grad_(), self.b)
        y = self.op(self.x, self.w.detach(), self.b, "relu")
        self.assertEqual(self.calls, ["direct", "direct"])
        self.assertIsNone(y.grad_fn)
        torch.testing.assert_close(y, torch.nn.functional.linear(self.x, self.w, self.b))
        with torch.inference_mode():  # no autograd key at all: the CPU kernel directly
            self.op(self.x, self.w)
        self.assertEqual(len(self.calls), 3)

    def test_any_input_requiring_grad_goes_through_autograd(self):
        for leaf in range(3):
            with self.subTest(leaf):
                self.calls.clear()
                args = [self.x.clone(), self.w.clone(), self.b.clone()]
                args[leaf].requires_grad_()
                y = self.op(*args)
                self.assertEqual(self.calls, ["autograd kernel"])
                (g,) = torch.autograd.grad(y.sum(), args[leaf])
                self.assertEqual(g.shape, args[leaf].shape)

    def test_dispatch_modes_and_fake_tensors_see_the_op(self):
        seen = []

        class Record(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                seen.append(str(func))
                return func(*args, **(kwargs or {}))

        with torch.no_grad(), Record():
            self.op(self.x, self.w)
        self.assertIn("jitgemm_fast_path_test.lin.default", seen)
        self.assertEqual(self.calls, ["autograd kernel"])
        with FakeTensorMode():
            y = self.op(torch.empty(5, 8), torch.empty(3, 8))
        self.assertEqual(y.shape, (5, 3))
        self.assertEqual(self.calls, ["autograd kernel"], "the fake call ran no kernel")


@unittest.skipIf(SKIP, REASON)
class DirectCallTest(unittest.TestCase):
    """When jitgemm.ops.linear may skip the dispatcher."""

    def test_only_plain_cuda_tensors_without_autograd(self):
        direct = jitgemm.ops._direct
        with FakeTensorMode():
            fake = torch.empty(2, 3, device="cuda")
            self.assertFalse(direct(fake, None), "fake tensors go through the dispatcher")
        cpu = torch.empty(2, 3)
        self.assertFalse(direct(cpu, None))
        cuda_like = torch.empty(2, 3, device="meta")
        self.assertFalse(direct(cuda_like, None))

    def test_autograd_needs_the_dispatcher(self):
        needs = jitgemm.ops._needs_autograd
        x, w = torch.empty(2, 3), torch.nn.Parameter(torch.empty(4, 3))
        self.assertTrue(needs(x, w, None))
        self.assertFalse(needs(x, w.detach(), None))
        with torch.no_grad():
            self.assertFalse(needs(x, w, None))
        with torch.inference_mode():
            self.assertFalse(needs(x, w, None))


if __name__ == "__main__":
    unittest.main()
