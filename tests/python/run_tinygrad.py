"""tinygrad's own test_tiny.py (vendored, tests/python/tinygrad) with DEV=CUDA on the mock.

tinygrad drives libcuda and libnvrtc through ctypes; CUDA_PATH / NVRTC_PATH name ours. Beyond
tinygrad's own assertions this checks that the libraries it loaded are ours, that every test ran
and passed, and that the only skips are the OpenCL-only image tests.
"""
import os, sys, unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "tinygrad"))

from tinygrad import Device  # noqa: E402
import test_tiny  # noqa: E402


def main() -> int:
  assert Device.DEFAULT == "CUDA", f"tinygrad chose {Device.DEFAULT}, not CUDA"
  suite = unittest.defaultTestLoader.loadTestsFromModule(test_tiny)
  result = unittest.TextTestRunner(verbosity=2).run(suite)

  loaded = open("/proc/self/maps").read()
  for var in ("CUDA_PATH", "NVRTC_PATH"):
    ours = os.path.realpath(os.environ[var])
    assert ours in loaded, f"{var}={ours} is not loaded; tinygrad used another library"
  not_image = [t.id() for t, _ in result.skipped if "image" not in t.id()]
  assert not not_image, f"unexpected skips: {not_image}"
  assert result.testsRun >= 19, f"only {result.testsRun} tests ran"
  return 0 if result.wasSuccessful() else 1


# BEAM search starts worker processes that import this file again: the suite runs only here.
if __name__ == "__main__":
  sys.exit(main())
