"""NVIDIA's own Python bindings (cuda.bindings.driver) against our libcuda.so.1.

cuda-python resolves every driver function through cuGetProcAddress_v2, so this
exercises the generated lookup table as a real client uses it, plus a few calls
end to end on the mock backend. Run by run.sh inside a virtual environment.
"""
import ctypes
import os
import sys

import numpy as np
from cuda.bindings import driver as cu


def ok(result):
    err = result[0]
    assert err == cu.CUresult.CUDA_SUCCESS, f"expected CUDA_SUCCESS, got {err!r}"
    return result[1] if len(result) == 2 else result[1:]


def main():
    # The bindings must have loaded *our* library, not a system one.
    libcuda = ctypes.CDLL("libcuda.so.1")
    path = os.path.realpath(libcuda._name) if os.path.isabs(libcuda._name) else None
    with open(f"/proc/{os.getpid()}/maps") as maps:
        loaded = {line.split()[-1] for line in maps if "libcuda.so" in line}
    expected = os.path.realpath(os.environ["CUDAMUX_EXPECT_LIBCUDA"])
    assert expected in {os.path.realpath(p) for p in loaded}, (loaded, expected, path)

    # Before cuInit every call but a few reports NOT_INITIALIZED.
    err, _ = cu.cuDeviceGetCount()
    assert err == cu.CUresult.CUDA_ERROR_NOT_INITIALIZED, err

    ok(cu.cuInit(0))
    assert ok(cu.cuDriverGetVersion()) == 13000
    count = ok(cu.cuDeviceGetCount())
    assert count >= 1
    dev = ok(cu.cuDeviceGet(0))
    name = ok(cu.cuDeviceGetName(128, dev)).split(b"\0")[0].decode()
    assert name, "empty device name"
    if os.environ.get("CUDAMUX_BACKEND", "mock") == "mock":
        assert "mock" in name, name
    major = ok(cu.cuDeviceGetAttribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    assert major >= 1

    # cuCtxCreate in the bindings resolves to cuCtxCreate_v4 (params may be None).
    ctx = ok(cu.cuCtxCreate(None, 0, dev))
    assert int(ok(cu.cuCtxGetCurrent())) == int(ctx)

    a = np.arange(1 << 16, dtype=np.float32)
    b = np.zeros_like(a)
    dptr = ok(cu.cuMemAlloc(a.nbytes))
    stream = ok(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING))
    ok((cu.cuMemcpyHtoDAsync(dptr, a.ctypes.data, a.nbytes, stream)[0], None))
    ok((cu.cuMemcpyDtoHAsync(b.ctypes.data, dptr, a.nbytes, stream)[0], None))
    ok((cu.cuStreamSynchronize(stream)[0], None))
    assert np.array_equal(a, b)

    ok((cu.cuMemsetD32(dptr, 7, a.size)[0], None))
    ok((cu.cuMemcpyDtoH(b.ctypes.data, dptr, a.nbytes)[0], None))
    assert (b.view(np.uint32) == 7).all()

    # A function cudamux does not implement yet: a stub, never a NULL pointer or fake success.
    err, = cu.cuGraphicsUnregisterResource(cu.CUgraphicsResource())
    assert err == cu.CUresult.CUDA_ERROR_NOT_SUPPORTED, err
    err, text = cu.cuGetErrorName(cu.CUresult.CUDA_ERROR_NOT_SUPPORTED)
    assert err == cu.CUresult.CUDA_SUCCESS and text == b"CUDA_ERROR_NOT_SUPPORTED", (err, text)

    ok((cu.cuStreamDestroy(stream)[0], None))
    ok((cu.cuMemFree(dptr)[0], None))
    ok((cu.cuCtxDestroy(ctx)[0], None))
    print("cuda.bindings against cudamux: all checks passed")


if __name__ == "__main__":
    sys.exit(main())
