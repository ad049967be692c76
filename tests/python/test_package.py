"""The jitgemm package without PyTorch and without a GPU: loading, errors, options,
manifests, recording and cache statistics through the C ABI.

Run with PYTHONPATH=<repo>/python and JITGEMM_LIBRARY=<built libjitgemm.so>
(ctest sets both).
"""

import ctypes
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

import jitgemm
from jitgemm import _lib, _recording

REPO = pathlib.Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "examples" / "manifests"


def has_driver() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True,
                          text=True, timeout=120)


class ImportTest(unittest.TestCase):
    def test_import_loads_no_library_and_the_first_call_names_the_path(self):
        r = run_python(
            "import jitgemm, sys\n"
            "assert jitgemm._lib._lib is None, 'import must not load the library'\n"
            "try:\n"
            "    jitgemm.cache_stats()\n"
            "except jitgemm.JitgemmError as e:\n"
            "    print(e.code_name, e)\n",
            JITGEMM_LIBRARY="/nonexistent/libjitgemm.so")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("FAILED_PRECONDITION", r.stdout)
        self.assertIn("/nonexistent/libjitgemm.so does not exist", r.stdout)

    def test_an_unloadable_library_says_what_it_needs(self):
        with tempfile.NamedTemporaryFile(suffix=".so") as f:
            f.write(b"not an ELF file")
            f.flush()
            r = run_python("import jitgemm\n"
                           "try:\n"
                           "    jitgemm.Options.from_environment()\n"
                           "except jitgemm.JitgemmError as e:\n"
                           "    print(e)\n", JITGEMM_LIBRARY=f.name)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("cannot load", r.stdout)
        self.assertIn("libcublasLt.so.13", r.stdout)


class PlanTest(unittest.TestCase):
    @unittest.skipIf(has_driver(), "a CUDA driver is present: the no-driver message cannot show")
    def test_the_first_plan_says_there_is_no_driver(self):
        with self.assertRaises(jitgemm.JitgemmError) as cm:
            jitgemm.Plan(jitgemm.gemm_problem(8, 16, 32, "bf16"))
        self.assertEqual(cm.exception.code_name, "FAILED_PRECONDITION")
        self.assertIn("no CUDA driver", str(cm.exception))
        self.assertIn("bf16 8x16x32", str(cm.exception))

    def test_an_invalid_problem_names_the_field(self):
        p = jitgemm.gemm_problem(8, 16, 32, "f16")
        p.a.ld = 4
        with self.assertRaises(jitgemm.JitgemmError) as cm:
            jitgemm.Plan(p)
        self.assertEqual(cm.exception.code, _lib.INVALID_ARGUMENT)
        self.assertIn("lda", str(cm.exception))

    def test_a_gated_problem_reaches_the_library(self):
        # The gate field sits where jitgemm_problem_t has it: the library validates it.
        p = jitgemm.gemm_problem(8, 16, 32, "bf16")
        p.gate = jitgemm.GATE_HALVES
        p.b.layout = jitgemm.COL_MAJOR
        p.beta = 1.0
        with self.assertRaises(jitgemm.JitgemmError) as cm:
            jitgemm.Plan(p)
        self.assertIn("epilogue.beta: a gated epilogue", str(cm.exception))
        p.beta = 0.0
        p.b.layout, p.b.ld = jitgemm.ROW_MAJOR, 16  # N columns: a gated B has 2N = 32
        with self.assertRaises(jitgemm.JitgemmError) as cm:
            jitgemm.Plan(p)
        self.assertEqual(cm.exception.code, _lib.INVALID_ARGUMENT)
        self.assertIn("ldb", str(cm.exception))
        self.assertIn("gated", jitgemm.describe_problem(p))
        p.gate = jitgemm.GATE_NONE  # the same B is valid for an ungated problem
        try:
            jitgemm.Plan(p)
        except jitgemm.JitgemmError as e:  # no driver or GPU here
            self.assertNotEqual(e.code, _lib.INVALID_ARGUMENT, str(e))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "gated.json")
            p.gate = jitgemm.GATE_HALVES
            p.b.layout, p.b.ld = jitgemm.COL_MAJOR, 32
            _lib.check(_lib.load().jitgemm_manifest_add(path.encode(), ctypes.byref(p), None))
            (q,) = jitgemm.read_manifest(path)
            self.assertEqual((q.gate, q.n, q.b.layout), (1, 16, jitgemm.COL_MAJOR))

    def test_bad_options_are_refused_before_any_device(self):
        p = jitgemm.gemm_problem(8, 16, 32, "f32")
        with self.assertRaises(jitgemm.JitgemmError) as cm:
            jitgemm.Plan(p, jitgemm.Options(pointer_alignment=3))
        self.assertIn("pointer_alignment", str(cm.exception))
        with self.assertRaisesRegex(ValueError, "options.tuning"):
            jitgemm.Plan(p, jitgemm.Options(tuning="slow"))
        with self.assertRaisesRegex(ValueError, "options.backend"):
            jitgemm.Options(backend="cudnn").to_c()
        with self.assertRaisesRegex(ValueError, "options.regime"):
            jitgemm.Plan(p, jitgemm.Options(regime="l2"))

    def test_gemm_problem_checks_the_dtype(self):
        with self.assertRaisesRegex(ValueError, "dtype"):
            jitgemm.gemm_problem(1, 2, 3, "f64")

    def test_describe_problem(self):
        p = jitgemm.gemm_problem(8, 2048, 4096, "bf16")
        p.b.layout = jitgemm.COL_MAJOR
        p.bias_mode = jitgemm.BIAS_PER_COLUMN
        p.activation = jitgemm.ACTIVATIONS["relu"]
        self.assertEqual(jitgemm.describe_problem(p), "bf16 8x2048x4096 r.c->r bias relu")


class OptionsTest(unittest.TestCase):
    def test_defaults_and_environment(self):
        self.assertEqual(jitgemm.Options.from_environment(), jitgemm.Options())
        r = run_python("import jitgemm; print(jitgemm.Options.from_environment())",
                       JITGEMM_TUNING="heuristic", JITGEMM_JIT="off", JITGEMM_BACKEND="cublas")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("tuning='heuristic'", r.stdout)
        self.assertIn("jit_enabled=False", r.stdout)
        self.assertIn("backend='cublas'", r.stdout)
        r = run_python("import jitgemm; print(jitgemm.Options.from_environment())",
                       JITGEMM_REGIME="resident")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("regime='resident'", r.stdout)

    def test_the_regime_reaches_the_library(self):
        self.assertEqual(jitgemm.Options(regime="streaming").to_c().regime, 1)
        self.assertEqual(jitgemm.Options().to_c().regime, 0)
        self.assertEqual(jitgemm.Options(win_margin=0.25).to_c().win_margin, 0.25)
        self.assertEqual(ctypes.sizeof(_lib.Options), 40)  # the C struct's, as before the regime


class ManifestTest(unittest.TestCase):
    def test_reads_the_seed_manifests(self):
        problems = jitgemm.read_manifest(str(MANIFESTS / "seed001_grouped_linear.json"))
        self.assertGreater(len(problems), 0)
        grouped = [p for p in problems if p.batch_count == 12]
        self.assertTrue(grouped, [jitgemm.describe_problem(p) for p in problems])

    def test_a_bad_manifest_names_path_and_field(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.json")
            with open(path, "w") as f:
                f.write('{"problems": [{"m": "eight"}]}')
            with self.assertRaises(jitgemm.JitgemmError) as cm:
                jitgemm.read_manifest(path)
            self.assertIn("bad.json", str(cm.exception))
            with self.assertRaises(jitgemm.JitgemmError) as cm:
                jitgemm.read_manifest(os.path.join(d, "absent.json"))
            self.assertEqual(cm.exception.code_name, "NOT_FOUND")

    def test_recording_adds_each_planned_problem_once(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "recorded.json")
            a = jitgemm.gemm_problem(1, 2048, 4096, "bf16")
            b = jitgemm.gemm_problem(64, 256, 128, "f16")
            with jitgemm.record(path):
                # What Plan does after a successful create (no GPU here to make one).
                for p in (a, b, a):
                    _recording.on_plan_created(p, None)
            _recording.on_plan_created(b, None)  # not recording any more
            got = [jitgemm.describe_problem(p) for p in jitgemm.read_manifest(path)]
            self.assertEqual(got, ["bf16 1x2048x4096 r.r->r", "f16 64x256x128 r.r->r"])

    def test_recording_keeps_the_options_of_each_plan(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "recorded.json")
            p = jitgemm.gemm_problem(8, 4096, 4096, "bf16")
            with jitgemm.record(path):
                for regime in ("resident", "streaming", "resident"):
                    _recording.on_plan_created(p, jitgemm.Options(regime=regime).to_c())
            self.assertEqual(len(jitgemm.read_manifest(path)), 2)
            with open(path) as f:
                manifest = json.load(f)
            self.assertEqual(manifest["options"]["regime"], "resident")
            self.assertEqual(manifest["problems"][1]["options"]["regime"], "streaming")

    @unittest.skipIf(has_driver(), "a CUDA driver is present")
    def test_warmup_without_a_driver_raises(self):
        with self.assertRaisesRegex(jitgemm.JitgemmError, "no CUDA driver"):
            jitgemm.warmup(str(MANIFESTS / "seed003_small_m_linear.json"))


class CacheStatsTest(unittest.TestCase):
    def test_stats_of_a_fresh_cache(self):
        with tempfile.TemporaryDirectory() as d:
            r = run_python("import jitgemm; s = jitgemm.cache_stats(); "
                           "print(s['mode'], s['root'], s['entries'], s['compiles'])",
                           JITGEMM_CACHE_DIR=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.split(), ["readwrite", d, "0", "0"])
        stats = jitgemm.cache_stats()
        for key in ("hits", "misses", "compiles", "stores", "corrupt", "entries", "bytes"):
            self.assertIsInstance(stats[key], int)


if __name__ == "__main__":
    unittest.main()
