#!/usr/bin/python3
"""Extract the facts of NVIDIA's NVRTC 13.0 (nvrtc.h + libnvrtc.so.13) into api/nvrtc/nvrtc_api.json.

Dev-time only (needs libclang, an installed CUDA toolkit and binutils' readelf); the build
reads the committed JSON and never needs NVIDIA's files.

Only facts are taken: function names and signatures in header order, the nvrtcResult
enumerators, NVRTC's version macros/typedefs, the symbol version node of NVIDIA's library
and which symbols it exports. No comments or documentation text are copied.

Re-running preserves the "status" of every function already in the table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import OrderedDict

import clang.cindex as ci

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from extract_driver_api import LIBCLANG, declarator, in_file  # noqa: E402  (shared helpers, read-only)

K = ci.CursorKind

# Symbols NVIDIA's library exports that nvrtc.h does not declare, and what we do with them.
UNDECLARED_EXPORTS = {
    "__nvrtcCPEx": "not exported: undeclared NVIDIA-internal entry point with no documented "
                   "signature or behaviour; a stub with a guessed signature could corrupt a caller",
}


def parse(inc: str) -> ci.TranslationUnit:
    tu = ci.Index.create().parse(
        "extract.c", args=["-x", "c", "-std=c11", f"-I{inc}"],
        unsaved_files=[("extract.c", "#include <nvrtc.h>\n")])
    errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    if errors:
        sys.exit("libclang errors: " + "; ".join(str(e) for e in errors[:5]))
    return tu


def nvidia_exports(lib: str) -> tuple[str, list[str]]:
    """(version node, exported function names) of NVIDIA's libnvrtc."""
    out = subprocess.run(["readelf", "--dyn-syms", "-W", lib], check=True, capture_output=True,
                         text=True).stdout
    nodes, names = set(), []
    for line in out.splitlines():
        f = line.split()
        if len(f) < 8 or f[6] == "UND" or f[3] not in ("FUNC", "OBJECT"):
            continue
        m = re.fullmatch(r"(\w+)@@?(\S+)", f[7])
        if not m:
            continue
        names.append(m.group(1))
        nodes.add(m.group(2))
    if len(nodes) != 1:
        sys.exit(f"expected one version node in {lib}, found {sorted(nodes)}")
    return nodes.pop(), sorted(names)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuda-include", default="/usr/local/cuda/include")
    ap.add_argument("--lib", default="/usr/local/cuda/lib64/libnvrtc.so.13")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                  "nvrtc", "nvrtc_api.json"))
    args = ap.parse_args()
    ci.Config.set_library_file(LIBCLANG)
    tu = parse(args.cuda_include)

    enums, typedefs, functions = [], [], []
    for c in sorted((c for c in tu.cursor.get_children() if in_file(c, "nvrtc.h")),
                    key=lambda c: c.extent.start.offset):
        if c.kind == K.TYPEDEF_DECL:
            d = c.underlying_typedef_type.get_declaration()
            if d.kind == K.ENUM_DECL:
                enums.append(OrderedDict(name=c.spelling, enumerators=[
                    {"name": e.spelling, "value": e.enum_value}
                    for e in d.get_children() if e.kind == K.ENUM_CONSTANT_DECL]))
            else:
                typedefs.append(OrderedDict(name=c.spelling,
                                            decl=declarator(c.underlying_typedef_type, c.spelling)))
        elif c.kind == K.FUNCTION_DECL and not c.is_definition():
            functions.append(OrderedDict(
                name=c.spelling, ret=declarator(c.result_type),
                params=[{"type": declarator(p.type), "name": p.spelling} for p in c.get_arguments()]))

    node, exported = nvidia_exports(args.lib)
    declared = {f["name"] for f in functions}
    missing = declared - set(exported)
    if missing:
        sys.exit(f"declared in nvrtc.h but not exported by {args.lib}: {sorted(missing)}")
    extra = sorted(set(exported) - declared)
    for s in extra:
        if s not in UNDECLARED_EXPORTS:
            sys.exit(f"{s}: exported by NVIDIA's libnvrtc but undeclared; decide and add it to "
                     "UNDECLARED_EXPORTS with the reason")

    old = {}
    if os.path.exists(args.out):
        with open(args.out) as f:
            old = {fn["name"]: fn["status"] for fn in json.load(f)["functions"]}
    for fn in functions:
        fn["status"] = old.get(fn["name"], "not_supported")

    # The version nvrtcVersion reports, from the toolkit's cuda.h (NVRTC has no macro of its own).
    with open(os.path.join(args.cuda_include, "cuda.h")) as f:
        cv = int(re.search(r"#define CUDA_VERSION (\d+)", f.read()).group(1))

    table = OrderedDict(
        comment="The NVRTC API table, extracted by api/tools/extract_nvrtc_api.py from NVIDIA's "
                "nvrtc.h and libnvrtc.so.13. Edit only the status fields.",
        version={"major": cv // 1000, "minor": (cv % 1000) // 10},
        soname="libnvrtc.so.13",
        version_node=node,
        typedefs=typedefs,
        enums=enums,
        functions=functions,
        undeclared_nvidia_exports=[{"symbol": s, "decision": UNDECLARED_EXPORTS[s]} for s in extra],
    )
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(table, f, indent=1)
        f.write("\n")
    print(f"NVRTC {cv // 1000}.{(cv % 1000) // 10}: {len(functions)} functions, "
          f"{sum(len(e['enumerators']) for e in enums)} enumerators, version node {node}, "
          f"undeclared exports: {extra}")


if __name__ == "__main__":
    main()
