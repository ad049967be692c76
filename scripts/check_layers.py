#!/usr/bin/env python3
"""Checks the #include graph of the C++ tree against docs/architecture.md.

Every quoted #include of every source under the C++ folders is resolved to a
file of the repository and both ends are given a layer; an edge that the graph
below does not allow is printed as `file:line: layer -> layer (include)` and
the script exits with 1. Angle-bracket includes are third-party headers
(Abseil, the CUDA toolkit, the C++ library) and are not part of the graph,
except in kernels_src/, which must include nothing from outside itself.

Usage: check_layers.py [ROOT]   (ROOT defaults to the repository this script is in)
"""

import os
import re
import sys

SOURCE_SUFFIXES = (".h", ".cc", ".cuh", ".cu", ".cpp", ".hpp")
CPP_FOLDERS = ("core", "cache", "jit", "backends", "tune", "api", "support", "tools",
               "examples", "tests", "kernels_src")

# Layers, lowest first. A layer may include itself and the layers it lists.
ALLOWED = {
    "kernels_src": set(),
    "core": set(),
    "cache": {"core"},
    "jit": {"cache", "core"},
    "backends": {"jit", "cache", "core"},
    "tune": {"backends", "jit", "cache", "core"},
    "api": {"tune", "backends", "jit", "cache", "core"},
    "support": {"core"},
    # Programs: the public headers, the floor, the host support library, and
    # the internal headers named in TOOL_INTERNALS.
    "tools": {"core", "support"},
    "examples": set(),
    # Tests test internals by design.
    "tests": {"api", "tune", "backends", "jit", "cache", "core", "support", "tools"},
}

# The public headers that are vocabulary of every layer: they belong to core/.
PUBLIC_FLOOR = {"export.h", "problem.h", "options.h", "pointers.h"}

# Internal headers tools may include, and why.
TOOL_INTERNALS = {
    # The manifest format and the kernels of a manifest (jitgemm-warmup,
    # jitgemm-latency, jitgemm-cache export --manifest, jitgemm-bench
    # --manifest).
    "api/src/manifest.h",
    "api/src/manifest_kernels.h",
    # jitgemm-cache and jitgemm-warmup administer the on-disk cache itself.
    "cache/bundle.h",
    "cache/disk_cache.h",
    "cache/layout.h",
    # jitgemm-cache remote: the remote tier and the entries it pushes.
    "cache/remote_tier.h",
    "cache/entry_listing.h",
    # Escaping of the paths and names the tools print.
    "cache/log.h",
    # Signing bundles and keygen (jitgemm-cache export --sign-key, keygen).
    "cache/bundle_signature.h",
}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of(rel):
    """The layer of a repository-relative path, or None outside the graph."""
    parts = rel.split("/")
    if parts[0] == "api" and len(parts) >= 3 and parts[1] == "include":
        return "core" if parts[-1] in PUBLIC_FLOOR else "api"
    return parts[0] if parts[0] in ALLOWED else None


def is_public(rel):
    return rel.startswith("api/include/")


def resolve(root, rel_file, target):
    """The repository-relative path a quoted include names, or None if external."""
    if rel_file.startswith("kernels_src/"):
        # Embedded as "jitgemm/<path below kernels_src>".
        if target.startswith("jitgemm/"):
            return "kernels_src/" + target[len("jitgemm/"):]
        return os.path.normpath(os.path.join(os.path.dirname(rel_file), target))
    if target.startswith("jitgemm/"):
        return "api/include/" + target
    top = target.split("/")[0]
    if top in CPP_FOLDERS and os.path.exists(os.path.join(root, target)):
        return target
    local = os.path.normpath(os.path.join(os.path.dirname(rel_file), target))
    if os.path.exists(os.path.join(root, local)):
        return local
    return None  # a third-party header included with quotes ("xxhash.h")


def edge_allowed(src_layer, rel_file, dst_rel):
    dst_layer = layer_of(dst_rel)
    if dst_layer is None or dst_layer == src_layer:
        return True
    if src_layer in ("tools", "examples"):
        if is_public(dst_rel):
            return True
        if src_layer == "tools" and dst_rel in TOOL_INTERNALS:
            return True
    return dst_layer in ALLOWED[src_layer]


def check(root):
    problems = []
    for folder in CPP_FOLDERS:
        base = os.path.join(root, folder)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                src_layer = layer_of(rel)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE_RE.match(line)
                        if not m:
                            continue
                        bracket, target = m.groups()
                        if src_layer == "kernels_src":
                            dst = resolve(root, rel, target) if bracket == '"' else None
                            if dst is None or not dst.startswith("kernels_src/"):
                                problems.append(f"{rel}:{lineno}: kernels_src -> outside "
                                                f"({target}): kernels_src is self-contained")
                            continue
                        if bracket == "<":
                            continue
                        dst = resolve(root, rel, target)
                        if dst is None and target.split("/")[0] in CPP_FOLDERS:
                            problems.append(f"{rel}:{lineno}: unresolved include ({target})")
                            continue
                        if dst is not None and not edge_allowed(src_layer, rel, dst):
                            problems.append(f"{rel}:{lineno}: {src_layer} -> {layer_of(dst)} "
                                            f"({target})")
    return problems


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} include(s) outside the layer graph of "
              "docs/architecture.md", file=sys.stderr)
        return 1
    print("check_layers: every include follows the layer graph")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
