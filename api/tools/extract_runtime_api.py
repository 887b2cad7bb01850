#!/usr/bin/python3
"""Extract the facts of NVIDIA's CUDA runtime API headers into cudamux's data files.

Dev-time only (needs libclang, an installed CUDA toolkit and its libcudart.so.13); the
build reads the committed JSON written here and never needs NVIDIA's files.

Only facts are taken: names, signatures, default arguments, enumerator values, record
layouts, macro values, and the set of symbols NVIDIA's libcudart.so.13 exports (with
their version node). No comments or documentation text are copied.

Outputs (under api/runtime/):
  runtime_api.json  one entry per exported runtime function with its symbol variants
                    (plain, _ptds, _ptsz), signature and status.
  runtime_h.json    the declarations of vector_types.h, driver_types.h, surface_types.h,
                    texture_types.h, device_types.h, cuda_runtime_api.h and
                    cuda_profiler_api.h, per file, to regenerate compatible headers.

Sources of signatures, in order: the runtime headers (parsed as C, and as C++ for the
`__dv(...)` default arguments); HOST_RUNTIME below for the registration entry points
that crt/host_runtime.h and crt/device_functions.h declare in C++-only code; exported
symbols declared nowhere in a parseable header (graphics interop: cudaGL*, cudaEGL*,
cudaVDPAU*, and three internal __cuda* hooks) are recorded with "params": null and
become stubs with an unknown signature (never declared in our headers).

Re-running preserves the "status" of every symbol already in runtime_api.json.
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
import extract_driver_api as drv  # noqa: E402  (shared libclang helpers, read-only)

K = ci.CursorKind

# Our header files, in dependency order, and the NVIDIA file each one mirrors.
HEADER_FILES = ["vector_types.h", "driver_types.h", "surface_types.h", "texture_types.h",
                "device_types.h", "cuda_runtime_api.h", "cuda_profiler_api.h"]

# Macros the generator writes itself (include guards, attribute and mode macros).
SPECIAL_MACROS = {"CUDART_CB", "CUDARTAPI", "CUDART_DEVICE", "EXCLUDE_FROM_RTC", "CU_UUID_HAS_BEEN_DEFINED",
                  "cudaDevicePropDontCare"}

# Functions usable without initialising the runtime (they never touch a device).
NO_INIT = {"cudaGetErrorName", "cudaGetErrorString", "cudaGetLastError", "cudaPeekAtLastError",
           "cudaRuntimeGetVersion", "cudaDriverGetVersion"}

# Signatures of the registration/launch hooks nvcc-generated host code calls; they are
# declared by NVIDIA only in C++-only internal headers (crt/host_runtime.h,
# crt/device_functions.h). Facts: (return type, [(type, name)]).
HOST_RUNTIME: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "__cudaRegisterFatBinary": ("void **", [("void *", "fatCubin")]),
    "__cudaRegisterFatBinaryEnd": ("void", [("void **", "fatCubinHandle")]),
    "__cudaUnregisterFatBinary": ("void", [("void **", "fatCubinHandle")]),
    "__cudaRegisterVar": ("void", [("void **", "fatCubinHandle"), ("char *", "hostVar"),
                                   ("char *", "deviceAddress"), ("const char *", "deviceName"),
                                   ("int", "ext"), ("size_t", "size"), ("int", "constant"),
                                   ("int", "global")]),
    "__cudaRegisterManagedVar": ("void", [("void **", "fatCubinHandle"), ("void **", "hostVarPtrAddress"),
                                          ("char *", "deviceAddress"), ("const char *", "deviceName"),
                                          ("int", "ext"), ("size_t", "size"), ("int", "constant"),
                                          ("int", "global")]),
    "__cudaInitModule": ("char", [("void **", "fatCubinHandle")]),
    "__cudaRegisterFunction": ("void", [("void **", "fatCubinHandle"), ("const char *", "hostFun"),
                                        ("char *", "deviceFun"), ("const char *", "deviceName"),
                                        ("int", "thread_limit"), ("uint3 *", "tid"), ("uint3 *", "bid"),
                                        ("dim3 *", "bDim"), ("dim3 *", "gDim"), ("int *", "wSize")]),
    "__cudaPushCallConfiguration": ("unsigned int", [("dim3", "gridDim"), ("dim3", "blockDim"),
                                                     ("size_t", "sharedMem"), ("struct CUstream_st *", "stream")]),
    "__cudaPopCallConfiguration": ("cudaError_t", [("dim3 *", "gridDim"), ("dim3 *", "blockDim"),
                                                   ("size_t *", "sharedMem"), ("void *", "stream")]),
    "__cudaGetKernel": ("cudaError_t", [("cudaKernel_t *", "kernel"), ("const void *", "entryFuncAddr")]),
    "__cudaLaunchKernel": ("cudaError_t", [("cudaKernel_t", "kernel"), ("dim3", "gridDim"), ("dim3", "blockDim"),
                                           ("void **", "args"), ("size_t", "sharedMem"),
                                           ("cudaStream_t", "stream")]),
}


def parse(inc: str, defines: list[str], cxx: bool = False) -> ci.TranslationUnit:
    lang = ["-x", "c++", "-std=c++17"] if cxx else ["-x", "c", "-std=c11"]
    args = lang + [f"-I{inc}"] + [f"-D{d}" for d in defines]
    src = "#include <cuda_runtime_api.h>\n#include <cuda_profiler_api.h>\n"
    tu = ci.Index.create().parse("extract.c", args=args, unsaved_files=[("extract.c", src)],
                                 options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)
    errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    if errors:
        sys.exit("libclang errors: " + "; ".join(str(e) for e in errors[:5]))
    return tu


def file_of(c: ci.Cursor) -> str | None:
    return os.path.basename(c.location.file.name) if c.location.file is not None else None


def header_items(tu: ci.TranslationUnit, fname: str) -> list[dict]:
    """Top-level declarations of one header, in order (as extract_driver_api.header_items)."""
    cursors = [c for c in tu.cursor.get_children() if file_of(c) == fname]
    cursors.sort(key=lambda c: c.extent.start.offset)
    inline_defs = {}
    for c in cursors:
        if c.kind == K.TYPEDEF_DECL:
            d = c.underlying_typedef_type.get_declaration()
            if (d.kind in (K.STRUCT_DECL, K.UNION_DECL, K.ENUM_DECL) and d.is_definition()
                    and d.extent.start.offset > c.extent.start.offset
                    and d.extent.end.offset <= c.extent.end.offset and d.hash not in inline_defs.values()):
                inline_defs[c.hash] = d.hash
    consumed = set(inline_defs.values())
    by_hash = {c.hash: c for c in cursors}
    items: list[dict] = []
    seen_fn = set()
    for c in cursors:
        if c.kind == K.MACRO_DEFINITION:
            params, body = drv.macro_body(c)
            special = c.spelling.startswith("__") or c.spelling in SPECIAL_MACROS
            items.append({"kind": "macro", "name": c.spelling, "params": params, "body": body,
                          "special": special})
        elif c.kind in (K.STRUCT_DECL, K.UNION_DECL, K.ENUM_DECL):
            if not c.is_definition() or c.hash in consumed:
                if not c.is_definition() and c.spelling:
                    # Opaque handle types (struct cudaArray; ...) are only forward-declared.
                    items.append({"kind": "forward", "tag": "union" if c.kind == K.UNION_DECL else
                                  "enum" if c.kind == K.ENUM_DECL else "struct", "name": c.spelling})
                continue
            items.append(drv.tag_item(c))
        elif c.kind == K.TYPEDEF_DECL:
            if c.hash in inline_defs:
                item = drv.tag_item(by_hash[inline_defs[c.hash]])
                item["typedef"] = c.spelling
                items.append(item)
            else:
                items.append({"kind": "typedef", "name": c.spelling,
                              "decl": drv.declarator(c.underlying_typedef_type, c.spelling)})
        elif c.kind == K.FUNCTION_DECL:
            if c.is_definition() or c.spelling in seen_fn:
                continue
            seen_fn.add(c.spelling)
            items.append(drv.function_item(c))
        elif c.kind in (K.MACRO_INSTANTIATION, K.INCLUSION_DIRECTIVE, K.VAR_DECL):
            continue
        else:
            sys.exit(f"unhandled top-level {c.kind} {c.spelling} in {fname}:{c.location.line}")
    return items


def default_args(tu: ci.TranslationUnit) -> dict[str, list[str | None]]:
    """C++ default argument text of each runtime function's parameters (from __dv(v))."""
    out: dict[str, list[str | None]] = {}
    for c in tu.cursor.walk_preorder():
        if c.kind != K.FUNCTION_DECL or file_of(c) != "cuda_runtime_api.h" or c.spelling in out:
            continue
        defs: list[str | None] = []
        for p in c.get_arguments():
            toks = [t.spelling for t in p.get_tokens()]
            if "=" in toks:
                defs.append(" ".join(toks[toks.index("=") + 1:]))
            elif "__dv" in toks:
                # The token extent ends inside the macro call: drop its closing paren if present.
                rest = toks[toks.index("__dv") + 2:]
                depth = sum(t == "(" for t in rest) - sum(t == ")" for t in rest)
                defs.append(" ".join(rest[:-1] if depth < 0 else rest))
            else:
                defs.append(None)
        if any(defs):
            out[c.spelling] = defs
    return out


def exported_symbols(lib: str) -> tuple[list[str], str]:
    out = subprocess.run(["readelf", "--dyn-syms", "-W", lib], check=True, capture_output=True, text=True).stdout
    syms, node = [], None
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[6] != "UND":
            name, _, ver = f[7].partition("@@")
            syms.append(name)
            node = node or ver
    return sorted(set(syms)), node or ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuda-include", default="/usr/local/cuda/include")
    ap.add_argument("--libcudart", default="/usr/local/cuda/lib64/libcudart.so.13")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime"))
    args = ap.parse_args()
    ci.Config.set_library_file(drv.LIBCLANG)

    tu = parse(args.cuda_include, [])
    tu_ptds = parse(args.cuda_include, ["CUDA_API_PER_THREAD_DEFAULT_STREAM"])
    tu_int = parse(args.cuda_include, ["__CUDA_API_VERSION_INTERNAL"])
    tu_cxx = parse(args.cuda_include, [], cxx=True)
    files = {f: header_items(tu, f) for f in HEADER_FILES}
    version = next(int(it["body"]) for it in files["cuda_runtime_api.h"]
                   if it["kind"] == "macro" and it["name"] == "CUDART_VERSION")

    # Per-thread renames: macros cudaFoo -> __CUDART_API_PT{DS,SZ}(cudaFoo) in per-thread mode.
    renames = []
    for it in header_items(tu_ptds, "cuda_runtime_api.h"):
        if it["kind"] == "macro" and it["params"] is None:
            m = re.fullmatch(r"__CUDART_API_PT(DS|SZ)\((\w+)\)", it["body"])
            if m and m.group(2) == it["name"]:
                renames.append({"name": it["name"], "per_thread": "pt" + m.group(1).lower()})
    rename_names = {r["name"] for r in renames}
    files["cuda_runtime_api.h"] = [it for it in files["cuda_runtime_api.h"]
                                   if not (it["kind"] == "macro" and it["name"] in rename_names)]
    # Enumerators visible only to the library itself (none expected; kept for parity).
    defaults = default_args(tu_cxx)
    decls: dict[str, dict] = {}
    for f in ("cuda_runtime_api.h", "cuda_profiler_api.h"):
        for it in files[f]:
            if it["kind"] == "function":
                it["defaults"] = defaults.get(it["name"])
                decls[it["name"]] = it
    for it in header_items(tu_int, "cuda_runtime_api.h"):
        if it["kind"] == "function" and it["name"] not in decls:
            decls[it["name"]] = it

    exported, node = exported_symbols(args.libcudart)
    table_path = os.path.join(os.path.abspath(args.out), "runtime_api.json")
    old_status = {}
    if os.path.exists(table_path):
        with open(table_path) as fh:
            for fn in json.load(fh)["functions"]:
                for v in fn["variants"]:
                    old_status[v["symbol"]] = v["status"]

    groups: dict[str, list[str]] = OrderedDict()
    order = {it["name"]: i for i, it in enumerate(decls.values())}
    for s in exported:
        base = re.sub(r"_pt(ds|sz)$", "", s)
        groups.setdefault(base, []).append(s)
    functions = []
    unknown = []
    for base in sorted(groups, key=lambda b: (b not in order, order.get(b, 0), b)):
        syms = sorted(groups[base], key=lambda s: (s != base, s))
        has_pt = len(syms) > 1
        if base in decls:
            d = decls[base]
            ret = d["ret"]
            params = [{"type": p["type"], "name": p["name"]} for p in d["params"]]
            source = "cuda_profiler_api.h" if base.startswith("cudaProfiler") else "cuda_runtime_api.h"
        elif base in HOST_RUNTIME:
            ret, plist = HOST_RUNTIME[base]
            params = [{"type": t, "name": n} for t, n in plist]
            source = "host_runtime"
        else:
            ret, params, source = "cudaError_t", None, None
            unknown.append(base)
        variants = []
        for s in syms:
            pt = re.search(r"_(pt(?:ds|sz))$", s)
            variants.append(OrderedDict(
                symbol=s,
                flavor=("per_thread" if pt else "legacy") if has_pt else "none",
                ret=ret, params=params,
                status=old_status.get(s, "not_supported")))
        functions.append(OrderedDict(name=base, declared_in=source, needs_init=base not in NO_INIT,
                                     variants=variants))
    missing = sorted(set(decls) - set(exported))
    table = OrderedDict(
        comment="The runtime API table: one entry per exported function, one variant per symbol. "
                "Signatures come from extract_runtime_api.py; change status only with set_status.py --table.",
        cuda_version=version, version_node=node, functions=functions)
    header = OrderedDict(
        comment="Facts extracted from NVIDIA's runtime headers by api/tools/extract_runtime_api.py. Do not edit.",
        cuda_version=version, files=files, renames=renames,
        declared_not_exported=missing)
    os.makedirs(os.path.dirname(table_path), exist_ok=True)
    with open(table_path, "w") as fh:
        json.dump(table, fh, indent=1)
        fh.write("\n")
    with open(os.path.join(os.path.dirname(table_path), "runtime_h.json"), "w") as fh:
        json.dump(header, fh, indent=1)
        fh.write("\n")
    nsym = sum(len(fn["variants"]) for fn in functions)
    print(f"CUDART_VERSION {version}: {len(functions)} functions, {nsym} symbols, version node {node}; "
          f"{len(renames)} per-thread renames; unknown signatures: {unknown}; declared, not exported: {missing}")


if __name__ == "__main__":
    main()
