#!/usr/bin/env python3
"""Fail (with a diff) when committed generated files are stale.

usage: drift_check.py GENERATOR DATA_DIR COMMITTED_CUDA_H COMMITTED_COVERAGE_MD
Fix: build target cudamux_api_regen_sources (or run gen_driver_api.py) and commit.
"""

import difflib
import os
import subprocess
import sys
import tempfile


def main() -> int:
    gen, data, header, coverage = sys.argv[1:5]
    stale = 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh_h, fresh_md = os.path.join(tmp, "cuda.h"), os.path.join(tmp, "coverage.md")
        subprocess.run([sys.executable, gen, "--data", data, "--header", fresh_h, "--coverage", fresh_md],
                       check=True)
        for committed, fresh in ((header, fresh_h), (coverage, fresh_md)):
            with open(committed) as f:
                old = f.readlines()
            with open(fresh) as f:
                new = f.readlines()
            if old != new:
                stale += 1
                sys.stdout.writelines(difflib.unified_diff(old, new, committed, "regenerated", n=1))
    if stale:
        print(f"\n{stale} committed generated file(s) are stale: build cudamux_api_regen_sources and commit.")
        return 1
    print("committed cuda.h and coverage.md match the API table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
