// Warp-level matrix instructions built by nvcc (issue 15 item 2): mma.sync in every sm_80 shape
// the mock executes, ldmatrix, movmatrix and nvcuda::wmma, from tests/ptx/data/mma/. Each case
// is checked against a plain matmul on the host (exact inputs: bit for bit); a few run again on
// random inputs, checked within a tolerance. Every case prints an FNV-1a checksum of its raw
// output bytes, so a run on a GPU can be compared with a run on the mock line by line (the
// exact-input checksums must agree; random-input ones may differ in the last bits of the sums).
// Build: nvcc -arch=sm_80 (SASS + compute_80 PTX; the mock runs the PTX).
#include <cuda_runtime.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "mma_kernels.cu"
#include "mma_ref.h"

namespace {

using Kernel = void (*)(const void*, const void*, const void*, void*);

Kernel kernel_of(const char* name) {
#define K(n) \
  if (std::strcmp(name, #n) == 0) return reinterpret_cast<Kernel>(&n);
  K(mma_f16_f32_k16)
  K(mma_f16_f16_k16) K(mma_f16_f32_k8) K(mma_bf16_f32_k16) K(mma_tf32_k8) K(mma_tf32_k4) K(mma_f64)
      K(mma_s8_k32_satfinite) K(mma_u8_k16) K(ldmatrix_mma) K(wmma_f16_f32_rowcol)
          K(wmma_f16_f16_colrow) K(wmma_bf16_f32_rowrow) K(wmma_tf32_f32_rowrow) K(ldmatrix_raw)
              K(movmatrix_raw)
#undef K
                  return nullptr;
}

bool run(const mma_ref::Case& k, const mma_ref::Buffers& in, std::vector<uint8_t>& out) {
  void* p[4] = {};
  const std::vector<uint8_t>* src[3] = {&in.a, &in.b, &in.c};
  for (int i = 0; i < 3; ++i) {
    if (cudaMalloc(&p[i], src[i]->size()) != cudaSuccess) return false;
    cudaMemcpy(p[i], src[i]->data(), src[i]->size(), cudaMemcpyHostToDevice);
  }
  if (cudaMalloc(&p[3], in.d.size()) != cudaSuccess) return false;
  cudaMemset(p[3], 0, in.d.size());
  Kernel f = kernel_of(k.kernel);
  void* args[4] = {&p[0], &p[1], &p[2], &p[3]};
  cudaError_t e = cudaLaunchKernel(reinterpret_cast<const void*>(f), dim3(mma_ref::kBlocks),
                                   dim3(mma_ref::kThreads), args, 0, nullptr);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  out.resize(in.d.size());
  if (e == cudaSuccess) e = cudaMemcpy(out.data(), p[3], out.size(), cudaMemcpyDeviceToHost);
  for (void* q : p) cudaFree(q);
  if (e != cudaSuccess) std::printf("%s: %s\n", k.kernel, cudaGetErrorString(e));
  return e == cudaSuccess;
}

}  // namespace

int main() {
  int failures = 0;
  uint64_t all = 1469598103934665603ull;
  for (int pass = 0; pass < 2; ++pass) {
    const bool random = pass == 1;
    for (const auto& k : mma_ref::cases()) {
      // Random inputs only where the accumulation is in floating point on 16-bit inputs.
      if (random && (k.raw || (k.a != mma_ref::H && k.a != mma_ref::BF))) continue;
      const auto in = mma_ref::inputs(k, random, 12345 + pass);
      std::vector<uint8_t> out, expect;
      std::vector<double> tol;
      if (!run(k, in, out)) {
        ++failures;
        continue;
      }
      bool ok = true;
      if (k.raw) {
        mma_ref::raw_reference(k, in, expect);
        ok = out == expect;
      } else {
        mma_ref::reference(k, in, expect, tol);
        const size_t n = tol.size();
        for (size_t i = 0; i < n && ok; ++i) {
          const double got = mma_ref::get(k.d, out, i), want = mma_ref::get(k.d, expect, i);
          ok = random ? std::fabs(got - want) <= tol[i]
                      : std::memcmp(out.data() + i * mma_ref::size_of(k.d),
                                    expect.data() + i * mma_ref::size_of(k.d),
                                    mma_ref::size_of(k.d)) == 0;
          if (!ok) std::printf("  %s[%zu]: got %.9g, want %.9g\n", k.kernel, i, got, want);
        }
      }
      const uint64_t sum = mma_ref::fnv1a(out);
      if (!random) all = (all ^ sum) * 1099511628211ull;
      std::printf("%s%s: %s checksum %016" PRIx64 "\n", k.kernel, random ? " (random)" : "",
                  ok ? "ok" : "FAIL", sum);
      if (!ok) ++failures;
    }
  }
  std::printf("exact-input checksum %016" PRIx64 "\n", all);
  std::printf("%s\n", failures == 0 ? "PASS" : "FAIL");
  return failures == 0 ? 0 : 1;
}
