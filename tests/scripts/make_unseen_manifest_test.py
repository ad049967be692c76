#!/usr/bin/env python3
"""bench/manifests/unseen_mix.json is what scripts/make_unseen_manifest.py
writes with its defaults, so the committed problems can be regenerated."""
import os
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "unseen_mix.json")
        subprocess.run([sys.executable, os.path.join(TOP, "scripts", "make_unseen_manifest.py"),
                        out], check=True)
        with open(out) as f:
            made = f.read()
    with open(os.path.join(TOP, "bench", "manifests", "unseen_mix.json")) as f:
        committed = f.read()
    if made != committed:
        print("bench/manifests/unseen_mix.json differs from what "
              "scripts/make_unseen_manifest.py writes; regenerate it")
        return 1
    print("unseen_mix.json matches its generator")
    return 0


if __name__ == "__main__":
    sys.exit(main())
