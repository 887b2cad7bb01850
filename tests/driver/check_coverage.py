#!/usr/bin/env python3
"""Fails unless the conformance programs call every symbol docs/coverage.md marks as
implemented (struck-through symbols are the not-supported ones).

usage: check_coverage.py coverage.md NM PROGRAM...
"""
import re
import subprocess
import sys


def implemented(coverage: str) -> set:
    symbols = set()
    for line in open(coverage, encoding="utf-8"):
        if not line.startswith("| `cu"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or cells[1] not in ("implemented", "partial"):
            continue
        # `sym` is implemented, ~~`sym`~~ is not.
        for struck, sym in re.findall(r"(~~)?`(cu\w+)`", cells[2]):
            if not struck:
                symbols.add(sym)
    return symbols


def called(nm: str, programs: list) -> set:
    out = set()
    for p in programs:
        text = subprocess.run([nm, "-D", "--undefined-only", p], check=True,
                              capture_output=True, text=True).stdout
        out.update(line.split()[-1].split("@")[0] for line in text.splitlines() if line.strip())
    return out


def main() -> int:
    coverage, nm, programs = sys.argv[1], sys.argv[2], sys.argv[3:]
    want = implemented(coverage)
    have = called(nm, programs)
    missing = sorted(want - have)
    print(f"{len(want)} implemented symbols, {len(want & have)} called by the conformance suite")
    if missing:
        print("not called:\n  " + "\n  ".join(missing))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
