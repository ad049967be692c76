#!/usr/bin/env python3
"""Tests scripts/check_layers.py on a copy of the source tree: the copy as it
is passes, and each planted include outside the layer graph fails, naming the
file, the line and the edge. The real tree is never modified."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(REPO, "scripts", "check_layers.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import check_layers  # noqa: E402


class CheckLayersTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="check_layers_test.")
        for folder in check_layers.CPP_FOLDERS:
            src = os.path.join(REPO, folder)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(self.tmp, folder),
                                ignore=shutil.ignore_patterns("corpus", "*.json", "*.csv"))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_check(self):
        return subprocess.run([sys.executable, SCRIPT, self.tmp], capture_output=True, text=True)

    def plant(self, rel, line):
        """Appends `line` to the copy of `rel` (created if missing); returns its line number."""
        path = os.path.join(self.tmp, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        text = open(path).read() if os.path.exists(path) else ""
        if text and not text.endswith("\n"):
            text += "\n"
        text += line + "\n"
        with open(path, "w") as f:
            f.write(text)
        return text.count("\n")

    def assert_fails_with(self, expected):
        r = self.run_check()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(expected, r.stdout)

    def test_copy_of_the_tree_passes(self):
        r = self.run_check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_floor_including_a_layer_above_fails(self):
        line = self.plant("core/status_macros.h", '#include "tune/tuner.h"')
        self.assert_fails_with(f"core/status_macros.h:{line}: core -> tune (tune/tuner.h)")

    def test_upward_edge_between_layers_fails(self):
        line = self.plant("backends/backend.h", '#include "api/src/record.h"')
        self.assert_fails_with(f"backends/backend.h:{line}: backends -> api (api/src/record.h)")

    def test_lower_layer_including_the_plan_header_fails(self):
        line = self.plant("jit/planted.cc", '#include "jitgemm/plan.h"')
        self.assert_fails_with(f"jit/planted.cc:{line}: jit -> api (jitgemm/plan.h)")

    def test_tool_reaching_past_the_named_internals_fails(self):
        line = self.plant("tools/planted.cc", '#include "jit/kernel_store.h"')
        self.assert_fails_with(f"tools/planted.cc:{line}: tools -> jit (jit/kernel_store.h)")

    def test_tool_may_use_the_public_api_and_named_internals(self):
        self.plant("tools/planted.cc", '#include "jitgemm/plan.h"')
        self.plant("tools/planted.cc", '#include "api/src/manifest_kernels.h"')
        self.plant("tools/planted.cc", '#include "core/status_macros.h"')
        r = self.run_check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_include_of_a_moved_or_missing_file_fails(self):
        line = self.plant("tune/planted.cc", '#include "api/src/no_such_header.h"')
        self.assert_fails_with(f"tune/planted.cc:{line}: unresolved include (api/src/no_such_header.h)")

    def test_kernel_source_including_a_toolkit_header_fails(self):
        line = self.plant("kernels_src/common/planted.cuh", "#include <cuda_fp16.h>")
        self.assert_fails_with(f"kernels_src/common/planted.cuh:{line}: kernels_src -> outside")


if __name__ == "__main__":
    unittest.main()
