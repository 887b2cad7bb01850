#!/usr/bin/env python3
"""Set the status of driver API symbols in api/driver/driver_api.json.

usage: set_status.py implemented|not_supported NAME...

NAME is an exported symbol (cuMemAlloc_v2) or a function name (cuMemAlloc), which
sets every variant of that function. docs/coverage.md is regenerated afterwards;
the build regenerates the entry points from the JSON by itself.
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.normpath(os.path.join(HERE, "..", "driver", "driver_api.json"))
COVERAGE = os.path.normpath(os.path.join(HERE, "..", "..", "docs", "coverage.md"))


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("implemented", "not_supported"):
        print(__doc__, file=sys.stderr)
        return 2
    status, names = argv[0], argv[1:]
    with open(TABLE) as f:
        table = json.load(f)
    by_symbol = {v["symbol"]: v for fn in table["functions"] for v in fn["variants"]}
    by_function = {fn["name"]: fn["variants"] for fn in table["functions"]}
    unknown = [n for n in names if n not in by_symbol and n not in by_function]
    if unknown:
        print(f"unknown symbol(s): {' '.join(unknown)}", file=sys.stderr)
        return 1
    changed = []
    for n in names:
        for v in by_function.get(n) or [by_symbol[n]]:
            if v["status"] != status:
                v["status"] = status
                changed.append(v["symbol"])
    with open(TABLE, "w") as f:
        json.dump(table, f, indent=1)
        f.write("\n")
    subprocess.run([sys.executable, os.path.join(HERE, "gen_driver_api.py"), "--coverage", COVERAGE], check=True)
    print(f"{status}: {' '.join(changed) if changed else '(no change)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
