#!/usr/bin/env python3
"""bench/manifests/unseen_mix.json is what scripts/make_unseen_manifest.py
writes with its defaults, and unseen_wide.json what it writes with
`--space wide --seed 20261129 --count 32`, and unseen_wild.json what it writes
with `--space wild --seed 20261128 --count 48`, so the committed problems can
be regenerated."""
import os
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


MANIFESTS = {
    "unseen_mix.json": [],
    "unseen_wide.json": ["--space", "wide", "--seed", "20261129", "--count", "32"],
    "unseen_wild.json": ["--space", "wild", "--seed", "20261128", "--count", "48"],
}


def main():
    failures = 0
    for name, args in MANIFESTS.items():
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, name)
            subprocess.run([sys.executable, os.path.join(TOP, "scripts", "make_unseen_manifest.py"),
                            *args, out], check=True)
            with open(out) as f:
                made = f.read()
        with open(os.path.join(TOP, "bench", "manifests", name)) as f:
            committed = f.read()
        if made != committed:
            print(f"bench/manifests/{name} differs from what "
                  f"scripts/make_unseen_manifest.py {' '.join(args)} writes; regenerate it")
            failures += 1
        else:
            print(f"{name} matches its generator")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
