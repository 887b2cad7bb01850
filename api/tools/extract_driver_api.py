#!/usr/bin/python3
"""Extract the facts of NVIDIA's CUDA driver API headers into cudamux's data files.

Dev-time only (needs libclang and an installed CUDA toolkit); the build reads the
committed JSON written here and never needs NVIDIA's headers.

Only facts are taken: names, signatures, enumerator values, record layouts, macro
values and the CUDA version each exported variant appeared in. No comments or
documentation text are copied.

Outputs (under api/driver/):
  driver_api.json  one entry per API function with every exported symbol variant.
  cuda_h.json      the declarations needed to regenerate a compatible cuda.h.

The header is parsed three times:
  public    : as a user sees it (no extra defines)
  internal  : with __CUDA_API_VERSION_INTERNAL (old variants, per-thread symbols,
              the PFN typedefs of old variants in cudaTypedefs.h)
  ptds      : with CUDA_API_PER_THREAD_DEFAULT_STREAM (per-thread renames)

Version of each symbol: cudaTypedefs.h declares PFN_<name>_v<version>[_ptds|_ptsz]
for each variant. Symbols of one function are matched to PFNs by canonical
parameter types (typedefs resolved); ties (identical signatures, e.g. cuCtxCreate
and cuCtxCreate_v2) are resolved by pairing PFNs in version order with symbols in
suffix order (plain, _v2, _v3, ...).

Symbols without a PFN typedef (none in CUDA 13.0, but the rules stay for new headers):
  1. a per-thread symbol takes the version of its legacy twin, raised to 7000
     (CUDA 7.0 introduced the per-thread default stream entry points);
  2. anything else must be listed in VERSION_OVERRIDES with the reason: the
     extractor stops rather than guess. (A function declared in cuda.h with no PFN
     at all would be reported here too.)
Only what cuda.h declares is extracted: graphics-interop entry points that NVIDIA's
libcuda also exports but declares in cudaGL.h / cudaEGL.h / cudaVDPAU.h are not in
the table yet.

Re-running preserves the "status" of every symbol already in driver_api.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import OrderedDict, defaultdict

import clang.cindex as ci

LIBCLANG = "/usr/lib/x86_64-linux-gnu/libclang-14.so.1"
K = ci.CursorKind
T = ci.TypeKind

# Functions usable before cuInit (NVIDIA documents these as not requiring it).
NO_INIT = {"cuInit", "cuDriverGetVersion", "cuGetErrorName", "cuGetErrorString", "cuGetProcAddress"}

# Explicit versions for symbols the PFN rules cannot place (documented above).
VERSION_OVERRIDES: dict[str, int] = {}

# Macros whose definition depends on the platform or on the header's own modes;
# the generator writes them itself.
SPECIAL_MACROS = {
    "__cuda_cuda_h__", "__CUDA_DEPRECATED", "__CUDA_API_PER_THREAD_DEFAULT_STREAM",
    "__CUDA_API_PTDS", "__CUDA_API_PTSZ", "CU_UUID_HAS_BEEN_DEFINED", "CUDA_CB", "CUDAAPI",
}

SUFFIX_RE = re.compile(r"^(?P<base>.+?)(?:_v(?P<num>\d+))?(?:_(?P<pt>ptds|ptsz))?$")
PFN_RE = re.compile(r"^PFN_(?P<base>\w+?)_v(?P<ver>\d+)(?:_(?P<pt>ptds|ptsz))?$")


def parse(inc: str, defines: list[str]) -> ci.TranslationUnit:
    args = ["-x", "c", "-std=c11", f"-I{inc}"] + [f"-D{d}" for d in defines]
    tu = ci.Index.create().parse(
        "extract.c", args=args, unsaved_files=[("extract.c", "#include <cudaTypedefs.h>\n")],
        options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)
    errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    if errors:
        sys.exit("libclang errors: " + "; ".join(str(e) for e in errors[:5]))
    return tu


def in_file(c: ci.Cursor, name: str) -> bool:
    return c.location.file is not None and os.path.basename(c.location.file.name) == name


# ---------------------------------------------------------------- declarators

def declarator(t: ci.Type, inner: str = "") -> str:
    """C declaration of `inner` (a name or abstract declarator) with type t."""
    quals = []
    if t.is_const_qualified():
        quals.append("const")
    if t.is_volatile_qualified():
        quals.append("volatile")
    k = t.kind
    if k == T.POINTER:
        s = "*" + (" ".join(quals) + " " if quals else "") + inner
        if t.get_pointee().kind in (T.FUNCTIONPROTO, T.FUNCTIONNOPROTO, T.CONSTANTARRAY,
                                    T.INCOMPLETEARRAY):
            s = "(" + s + ")"
        return declarator(t.get_pointee(), s)
    if k == T.CONSTANTARRAY:
        return declarator(t.element_type, f"{inner}[{t.element_count}]")
    if k == T.INCOMPLETEARRAY:
        return declarator(t.element_type, f"{inner}[]")
    if k == T.FUNCTIONPROTO:
        params = ", ".join(declarator(a) for a in t.argument_types()) or "void"
        if t.is_function_variadic():
            params += ", ..."
        return declarator(t.get_result(), f"{inner}({params})")
    if k == T.FUNCTIONNOPROTO:
        return declarator(t.get_result(), f"{inner}()")
    base = t.spelling
    if "(unnamed" in base or "(anonymous" in base:
        raise ValueError(f"anonymous type needs an inline definition: {base}")
    return base + (" " + inner if inner else "")


def macro_body(c: ci.Cursor) -> tuple[list[str] | None, str]:
    toks = list(c.get_tokens())
    name = toks[0]
    rest = toks[1:]
    params = None
    # Function-like iff '(' follows the name with no space in between.
    if rest and rest[0].spelling == "(" and rest[0].extent.start.offset == name.extent.end.offset:
        close = next(i for i, t in enumerate(rest) if t.spelling == ")")
        params = [t.spelling for t in rest[1:close] if t.spelling != ","]
        rest = rest[close + 1:]
    out = ""
    prev = None
    for t in rest:
        s = t.spelling
        if prev is not None and (prev[-1].isalnum() or prev[-1] == "_") and (s[0].isalnum() or s[0] == "_"):
            out += " "
        out += s
        prev = s
    return params, out


# ---------------------------------------------------------------- records / enums

def record_item(c: ci.Cursor) -> dict:
    fields = []
    children = list(c.get_children())
    # Records defined inside this one; in C a named nested struct belongs to the file
    # scope, so match by identity rather than by semantic parent.
    nested = {ch.hash for ch in children if ch.kind in (K.STRUCT_DECL, K.UNION_DECL) and ch.is_definition()}
    used = set()
    for ch in children:
        if ch.kind == K.FIELD_DECL:
            t = ch.type
            while t.kind == T.CONSTANTARRAY:
                t = t.element_type
            d = t.get_declaration()
            if d.hash in nested:
                used.add(d.hash)
    natural = 1
    for ch in children:
        if ch.kind in (K.STRUCT_DECL, K.UNION_DECL) and ch.is_definition() and ch.hash not in used:
            # C11 anonymous member (union { ... };)
            fields.append({"anonymous": True, "record": record_item(ch)})
            natural = max(natural, ch.type.get_align())
        elif ch.kind == K.FIELD_DECL:
            f: dict = {"name": ch.spelling}
            t = ch.type
            dims = ""
            while t.kind == T.CONSTANTARRAY:
                dims += f"[{t.element_count}]"
                t = t.element_type
            d = t.get_declaration()
            if d.kind in (K.STRUCT_DECL, K.UNION_DECL) and d.is_definition() and d.hash in used:
                f["record"] = record_item(d)
                f["dims"] = dims
            else:
                f["decl"] = declarator(ch.type, ch.spelling)
            if ch.is_bitfield():
                f["bits"] = ch.get_bitfield_width()
            fields.append(f)
            natural = max(natural, ch.type.get_align())
    item = {
        "kind": "record",
        "tag": "union" if c.kind == K.UNION_DECL else "struct",
        "name": c.spelling or None,
        "fields": fields,
        "size": c.type.get_size(),
        "align": c.type.get_align(),
    }
    if item["align"] > natural:
        item["explicit_align"] = item["align"]
    return item


def enum_item(c: ci.Cursor) -> dict:
    return {
        "kind": "enum",
        "name": c.spelling or None,
        "enumerators": [{"name": e.spelling, "value": e.enum_value}
                        for e in c.get_children() if e.kind == K.ENUM_CONSTANT_DECL],
    }


def tag_item(c: ci.Cursor) -> dict:
    if c.kind == K.ENUM_DECL:
        item = enum_item(c)
        item["deprecated"] = c.availability == ci.AvailabilityKind.DEPRECATED
        return item
    return record_item(c)


def header_items(tu: ci.TranslationUnit) -> list[dict]:
    """Top-level declarations of cuda.h in header order."""
    cursors = [c for c in tu.cursor.get_children() if in_file(c, "cuda.h")]
    cursors.sort(key=lambda c: c.extent.start.offset)
    # `typedef struct X {...} Y;` arrives as the typedef (it starts first) plus the record
    # nested in its extent: emit them as one item at the typedef's position.
    inline_defs = {}
    for c in cursors:
        if c.kind == K.TYPEDEF_DECL:
            d = c.underlying_typedef_type.get_declaration()
            if (d.kind in (K.STRUCT_DECL, K.UNION_DECL, K.ENUM_DECL) and d.is_definition()
                    and d.extent.start.offset > c.extent.start.offset
                    and d.extent.end.offset <= c.extent.end.offset and d.hash not in inline_defs.values()):
                inline_defs[c.hash] = d.hash
    consumed = set(inline_defs.values())
    items: list[dict] = []
    by_hash = {c.hash: c for c in cursors}
    for c in cursors:
        if c.kind == K.MACRO_DEFINITION:
            params, body = macro_body(c)
            items.append({"kind": "macro", "name": c.spelling, "params": params, "body": body,
                          "special": c.spelling in SPECIAL_MACROS})
        elif c.kind in (K.STRUCT_DECL, K.UNION_DECL, K.ENUM_DECL):
            if not c.is_definition() or c.hash in consumed:
                continue  # forward declarations come back with the typedef that uses them
            items.append(tag_item(c))
        elif c.kind == K.TYPEDEF_DECL:
            if c.hash in inline_defs:
                item = tag_item(by_hash[inline_defs[c.hash]])
                item["typedef"] = c.spelling
                items.append(item)
            else:
                items.append({"kind": "typedef", "name": c.spelling,
                              "decl": declarator(c.underlying_typedef_type, c.spelling)})
        elif c.kind == K.FUNCTION_DECL:
            if c.is_definition():
                continue  # cuda.h's static inline helper; the generator writes its own
            items.append(function_item(c))
        elif c.kind in (K.MACRO_INSTANTIATION, K.INCLUSION_DIRECTIVE):
            continue
        else:
            sys.exit(f"unhandled top-level {c.kind} {c.spelling} at line {c.location.line}")
    return items


def function_item(c: ci.Cursor) -> dict:
    params = [{"name": p.spelling, "type": declarator(p.type), "decl": declarator(p.type, p.spelling),
               "canonical": p.type.get_canonical().spelling}
              for p in c.get_arguments()]
    return {
        "kind": "function", "name": c.spelling, "ret": declarator(c.result_type),
        "params": params, "deprecated": c.availability == ci.AvailabilityKind.DEPRECATED,
    }


def item_key(it: dict) -> str:
    if it["kind"] == "record" or it["kind"] == "enum":
        return f"{it['kind']}:{it.get('typedef') or ''}:{it.get('name') or ''}"
    return f"{it['kind']}:{it['name']}"


# ---------------------------------------------------------------- renames

def renames(items: list[dict]) -> dict[str, tuple[str, str | None]]:
    out = {}
    for it in items:
        if it["kind"] != "macro" or it["params"] is not None or not it["name"].startswith("cu"):
            continue
        m = re.fullmatch(r"(?:__CUDA_API_(PTDS|PTSZ)\((\w+)\)|(\w+))", it["body"])
        if not m:
            continue
        if m.group(3):
            out[it["name"]] = (m.group(3), None)
        else:
            out[it["name"]] = (m.group(2), m.group(1).lower())
    return out


# ---------------------------------------------------------------- main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuda-include", default="/usr/local/cuda/include")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "driver"))
    args = ap.parse_args()
    ci.Config.set_library_file(LIBCLANG)

    tu_pub = parse(args.cuda_include, [])
    tu_int = parse(args.cuda_include, ["__CUDA_API_VERSION_INTERNAL"])
    tu_ptds = parse(args.cuda_include, ["CUDA_API_PER_THREAD_DEFAULT_STREAM"])
    pub, internal, ptds = header_items(tu_pub), header_items(tu_int), header_items(tu_ptds)

    version = next(int(it["body"]) for it in pub if it["kind"] == "macro" and it["name"] == "CUDA_VERSION")

    # --- header facts
    pub_keys = {item_key(it) for it in pub}
    ptds_funcs = [it for it in ptds if it["kind"] == "function" and item_key(it) not in pub_keys]
    ptds_keys = {item_key(it) for it in ptds_funcs}
    internal_only = []
    for it in internal:
        k = item_key(it)
        if it["kind"] == "macro" or k in ptds_keys:
            continue
        if k not in pub_keys:
            internal_only.append(it)
    # Enumerators only visible with __CUDA_API_VERSION_INTERNAL (..._MAX sentinels).
    int_enums = {item_key(it): it for it in internal if it["kind"] == "enum"}
    for it in pub:
        if it["kind"] == "enum":
            names = {e["name"] for e in it["enumerators"]}
            extra = [e for e in int_enums[item_key(it)]["enumerators"] if e["name"] not in names]
            for e in extra:
                it["enumerators"].append(dict(e, internal=True))
    pub_ren, ptds_ren = renames(pub), renames(ptds)
    rename_list = []
    for name, (target, pt) in pub_ren.items():
        rename_list.append({"name": name, "target": target, "per_thread": pt, "per_thread_only": False})
    for name, (target, pt) in ptds_ren.items():
        if name not in pub_ren:
            rename_list.append({"name": name, "target": target[: -len("_" + pt)] if pt and target.endswith("_" + pt) else target,
                                "per_thread": pt, "per_thread_only": True})
    # In PTDS mode the macro expands to target_ptds; store the un-suffixed target.
    for r in rename_list:
        if r["per_thread_only"] and r["per_thread"] is None:
            m = re.fullmatch(r"(\w+)_(ptds|ptsz)", r["target"])
            if m:
                r["target"], r["per_thread"] = m.group(1), m.group(2)
    pub_items = [it for it in pub if not (it["kind"] == "macro" and it["name"] in pub_ren)]

    header = OrderedDict(
        comment="Facts extracted from NVIDIA's cuda.h by api/tools/extract_driver_api.py. Do not edit.",
        cuda_version=version,
        items=pub_items,
        per_thread_functions=ptds_funcs,
        internal_items=internal_only,
        renames=rename_list,
    )

    # --- function table
    decls: dict[str, dict] = {}
    order: dict[str, int] = {}
    for src in (pub, ptds, internal):
        for it in src:
            if it["kind"] == "function" and it["name"] not in decls:
                decls[it["name"]] = it
                order[it["name"]] = len(order)

    pfns: dict[str, list[tuple[int, str | None, list[str], str]]] = defaultdict(list)
    for c in tu_int.cursor.get_children():
        if c.kind != K.TYPEDEF_DECL or not in_file(c, "cudaTypedefs.h"):
            continue
        m = PFN_RE.match(c.spelling)
        if not m:
            continue
        fn = c.underlying_typedef_type.get_pointee()
        canon = [a.get_canonical().spelling for a in fn.argument_types()]
        pfns[m.group("base")].append((int(m.group("ver")), m.group("pt"), canon, c.spelling))

    groups: dict[str, list[str]] = defaultdict(list)
    for sym in decls:
        m = SUFFIX_RE.match(sym)
        base = m.group("base")
        # A name like cuFoo_v2 whose base has no PFN of its own is still cuFoo's variant.
        groups[base].append(sym)
    for base in list(groups):
        if base not in pfns:
            print(f"note: no PFN typedef for function {base}: {groups[base]}", file=sys.stderr)

    def suffix_num(sym: str) -> int:
        m = SUFFIX_RE.match(sym)
        return int(m.group("num") or 1)

    def is_pt(sym: str) -> str | None:
        return SUFFIX_RE.match(sym).group("pt")

    versions: dict[str, int] = {}
    unmatched_pfn = []
    for base, syms in groups.items():
        for want_pt in (False, True):
            cand = sorted([s for s in syms if (is_pt(s) is not None) == want_pt], key=suffix_num)
            plist = sorted([p for p in pfns.get(base, []) if (p[1] is not None) == want_pt])
            for ver, pt, canon, pname in plist:
                hit = next((s for s in cand if s not in versions and
                            [p["canonical"] for p in decls[s]["params"]] == canon and
                            (pt is None or is_pt(s) == pt)), None)
                if hit is None:
                    unmatched_pfn.append(pname)
                else:
                    versions[hit] = ver
    # Rules for symbols without a PFN (see module docstring).
    for base, syms in groups.items():
        for s in syms:
            if s in versions:
                continue
            if s in VERSION_OVERRIDES:
                versions[s] = VERSION_OVERRIDES[s]
                continue
            pt = is_pt(s)
            if pt:
                twin = s[: -len("_" + pt)]
                if twin in versions:
                    versions[s] = max(versions[twin], 7000)
                    print(f"note: {s}: no PFN, per-thread twin of {twin} -> {versions[s]}", file=sys.stderr)
                    continue
            sys.exit(f"error: no version for {s}; add it to VERSION_OVERRIDES with a reason")
    for p in unmatched_pfn:
        print(f"note: PFN without an exported symbol: {p}", file=sys.stderr)

    out_dir = os.path.abspath(args.out)
    table_path = os.path.join(out_dir, "driver_api.json")
    old_status = {}
    if os.path.exists(table_path):
        with open(table_path) as f:
            for fn in json.load(f)["functions"]:
                for v in fn["variants"]:
                    old_status[v["symbol"]] = v["status"]

    functions = []
    for base in sorted(groups, key=lambda b: min(order[s] for s in groups[b])):
        syms = groups[base]
        has_pt = any(is_pt(s) for s in syms)
        variants = []
        for s in sorted(syms, key=lambda s: (versions[s], is_pt(s) is not None, suffix_num(s))):
            d = decls[s]
            variants.append(OrderedDict(
                symbol=s,
                version=versions[s],
                flavor=("per_thread" if is_pt(s) else "legacy") if has_pt else "none",
                ret=d["ret"],
                params=[{"type": p["type"], "name": p["name"]} for p in d["params"]],
                status=old_status.get(s, "not_supported"),
                needs_init=base not in NO_INIT,
            ))
        functions.append(OrderedDict(name=base, variants=variants))

    table = OrderedDict(
        comment="The driver API table: one entry per function, one variant per exported symbol. "
                "Signatures/versions come from extract_driver_api.py; change status only with set_status.py.",
        cuda_version=version,
        functions=functions,
    )
    os.makedirs(out_dir, exist_ok=True)
    with open(table_path, "w") as f:
        json.dump(table, f, indent=1)
        f.write("\n")
    with open(os.path.join(out_dir, "cuda_h.json"), "w") as f:
        json.dump(header, f, indent=1)
        f.write("\n")

    nsym = sum(len(fn["variants"]) for fn in functions)
    npt = sum(1 for fn in functions for v in fn["variants"] if v["flavor"] == "per_thread")
    print(f"CUDA_VERSION {version}: {len(functions)} functions, {nsym} symbols "
          f"({npt} per-thread), {len(pub_items)} header items, {len(internal_only)} internal items, "
          f"{len(rename_list)} renames")
    for probe in ("cuCtxCreate", "cuMemAlloc", "cuMemcpyHtoDAsync", "cuStreamQuery", "cuMemcpy",
                  "cuGetProcAddress", "cuGraphInstantiate"):
        fn = next((f for f in functions if f["name"] == probe), None)
        if fn:
            print(f"  {probe}: " + ", ".join(f"{v['symbol']}({v['version']},{v['flavor']})" for v in fn["variants"]))


if __name__ == "__main__":
    main()
