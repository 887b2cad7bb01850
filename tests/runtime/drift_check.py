#!/usr/bin/env python3
"""The committed runtime headers (api/include) and docs/coverage-runtime.md must equal what
gen_runtime_api.py makes of the runtime table. usage: drift_check.py API_DIR DOCS_DIR"""
import filecmp
import os
import subprocess
import sys
import tempfile


def main() -> int:
    api, docs = sys.argv[1:3]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(api, "tools", "gen_runtime_api.py"),
                        "--data", os.path.join(api, "runtime"), "--headers", os.path.join(tmp, "include"),
                        "--coverage", os.path.join(tmp, "coverage-runtime.md")], check=True)
        stale = []
        for root, _, files in os.walk(os.path.join(tmp, "include")):
            for f in files:
                rel = os.path.relpath(os.path.join(root, f), os.path.join(tmp, "include"))
                if not filecmp.cmp(os.path.join(root, f), os.path.join(api, "include", rel), shallow=False):
                    stale.append(f"api/include/{rel}")
        if not filecmp.cmp(os.path.join(tmp, "coverage-runtime.md"), os.path.join(docs, "coverage-runtime.md"),
                           shallow=False):
            stale.append("docs/coverage-runtime.md")
    for s in stale:
        print(f"stale: {s} (run: ninja cudamux_runtime_regen_sources)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
