#!/usr/bin/env python3
"""Our libnvrtc.so.13 exports exactly the table's functions, each under the version node
libnvrtc.so.13, with soname libnvrtc.so.13; and, when NVIDIA's library is given, the same
symbols and version node as NVIDIA's (less the undeclared exports the table documents).
    check_symbols.py <readelf> <our lib> <nvrtc_api.json> [<NVIDIA's libnvrtc.so.13>]"""
import json
import re
import subprocess
import sys


def exports(readelf, lib):
    out = subprocess.run([readelf, "--dyn-syms", "-W", lib], check=True, capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) < 8 or f[6] in ("UND", "ABS") or f[3] not in ("FUNC", "OBJECT"):
            continue  # ABS: the symbol that defines the version node itself
        m = re.fullmatch(r"(\w+)(@@?)(\S+)", f[7])
        syms[m.group(1) if m else f[7]] = (m.group(3) if m else None, f[3], f[4])
    return syms


def main():
    readelf, ours, table_path = sys.argv[1:4]
    nvidia = sys.argv[4] if len(sys.argv) > 4 else None
    table = json.load(open(table_path))
    node = table["version_node"]
    errors = []
    mine = exports(readelf, ours)
    want = {fn["name"] for fn in table["functions"]}
    if set(mine) != want:
        errors.append(f"exported {sorted(set(mine) - want)} unexpectedly, missing {sorted(want - set(mine))}")
    for name, (ver, kind, bind) in mine.items():
        if ver != node or kind != "FUNC" or bind != "GLOBAL":
            errors.append(f"{name}: version {ver}, {kind} {bind} (want {node}, FUNC GLOBAL)")
    ver = subprocess.run([readelf, "-V", "-W", ours], check=True, capture_output=True, text=True).stdout
    if not re.search(r"Name: " + re.escape(node) + r"\b", ver):
        errors.append(f"no version definition {node}")
    dyn = subprocess.run([readelf, "-d", ours], check=True, capture_output=True, text=True).stdout
    if f"Library soname: [{table['soname']}]" not in dyn:
        errors.append("soname is not " + table["soname"])
    if nvidia:
        theirs = exports(readelf, nvidia)
        skipped = {u["symbol"] for u in table.get("undeclared_nvidia_exports", [])}
        if set(theirs) - skipped != set(mine):
            errors.append(f"differs from NVIDIA's: only theirs {sorted(set(theirs) - skipped - set(mine))}, "
                          f"only ours {sorted(set(mine) - set(theirs))}")
        for name in set(theirs) & set(mine):
            if theirs[name][0] != mine[name][0]:
                errors.append(f"{name}: version {mine[name][0]}, NVIDIA's {theirs[name][0]}")
    for e in errors:
        print("error:", e)
    print(f"{len(mine)} symbols checked" + (" against NVIDIA's" if nvidia else "") + (": OK" if not errors else ""))
    return 1 if errors else 0


sys.exit(main())
