#!/usr/bin/env python3
"""The committed api/include/nvrtc.h and docs/coverage-nvrtc.md are what gen_nvrtc_api.py makes
of the table.   drift_check.py <gen_nvrtc_api.py> <nvrtc_api.json> <nvrtc.h> <coverage-nvrtc.md>"""
import filecmp
import os
import subprocess
import sys
import tempfile

gen, table, header, coverage = sys.argv[1:5]
with tempfile.TemporaryDirectory() as tmp:
    h, c = os.path.join(tmp, "nvrtc.h"), os.path.join(tmp, "coverage.md")
    subprocess.run([sys.executable, gen, "--table", table, "--header", h, "--coverage", c], check=True)
    stale = [p for fresh, p in ((h, header), (c, coverage)) if not filecmp.cmp(fresh, p, shallow=False)]
for p in stale:
    print(f"stale: {p} (rebuild target cudamux_nvrtc_regen_sources and commit it)")
sys.exit(1 if stale else 0)
