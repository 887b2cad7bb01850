#!/usr/bin/env python3
"""Every symbol of the runtime table is exported by our libcudart.so.13, versioned with the
table's version node (NVIDIA's: libcudart.so.13), and nothing else is exported.

usage: check_exports.py READELF LIBCUDART runtime_api.json
"""
import json
import subprocess
import sys


def main() -> int:
    readelf, lib, table_path = sys.argv[1:4]
    with open(table_path) as f:
        table = json.load(f)
    want = {v["symbol"] for fn in table["functions"] for v in fn["variants"]}
    node = table["version_node"]
    out = subprocess.run([readelf, "--dyn-syms", "-W", lib], check=True, capture_output=True, text=True).stdout
    got, bad = set(), []
    for line in out.splitlines():
        f = line.split()
        if len(f) < 8 or f[6] == "UND" or f[3] not in ("FUNC", "OBJECT"):
            continue
        name, _, ver = f[7].partition("@@")
        if f[3] == "OBJECT" and name == node:
            continue  # the version node's own definition
        got.add(name)
        if ver != node:
            bad.append(f"{f[7]}: version {ver or '(none)'}, expected {node}")
    errors = [f"missing: {s}" for s in sorted(want - got)] + [f"unexpected export: {s}" for s in sorted(got - want)] + bad
    for e in errors:
        print(e)
    print(f"{len(want)} symbols in the table, {len(got)} exported, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
