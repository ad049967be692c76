"""Runs one test module of tests/python for ctest.

Exits 77 (ctest's SKIP_RETURN_CODE), printing why, when the module needs
PyTorch and it is not installed for this interpreter, so ctest reports a skip,
never a pass.
"""

import importlib.util
import pathlib
import sys
import unittest

here = pathlib.Path(__file__).resolve().parent
module = sys.argv[1]
if module.startswith("test_torch") and importlib.util.find_spec("torch") is None:
    print(f"SKIPPED: PyTorch is not installed for {sys.executable} "
          "(scripts/test.sh installs it in build/pyenv)")
    sys.exit(77)
sys.path.insert(0, str(here))
suite = unittest.defaultTestLoader.loadTestsFromName(module)
result = unittest.TextTestRunner(verbosity=2).run(suite)
sys.exit(0 if result.wasSuccessful() else 1)
