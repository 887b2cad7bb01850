// Built-in (cudamux mock): NVIDIA's CCCL (cuda/std, cub, thrust), from the folder the program
// names, detects its compilers here. The mock's NVRTC is g++ behind NVRTC's predefined names,
// a pairing CCCL's table has no row for: __GNUC__ makes it take GCC as the host compiler and
// then find no CUDA compiler at all (its NVRTC row needs a compiler that is not GCC-like), so
// its toolkit check fails. After CCCL's own detection, the CUDA compiler is NVRTC 13.0 (what
// the program compiles with); the C++ compiler stays GCC (the builtins and host library g++
// really has).
#pragma GCC system_header
#if defined(__CUDAMUX_MOCK__)
// The built-in cuda_fp16.h / cuda_bf16.h are a subset of the toolkit's (no __hisinf, hexp,
// __double2half, ...): CCCL's __half and __nv_bfloat16 overloads stay off, as they do for a
// program compiled without those headers.
#ifndef CCCL_DISABLE_FP16_SUPPORT
#define CCCL_DISABLE_FP16_SUPPORT
#endif
#ifndef CCCL_DISABLE_BF16_SUPPORT
#define CCCL_DISABLE_BF16_SUPPORT
#endif
// NVRTC has no exceptions, so CCCL's NVRTC path never compiles its throwing helpers (newer
// CCCL's cuda_error.h would call the host's ::cudaGetErrorString); g++ has them on.
#if defined(__CUDACC_RTC__) && !defined(CCCL_DISABLE_EXCEPTIONS)
#define CCCL_DISABLE_EXCEPTIONS
#endif
// Nor NVTX ranges (host instrumentation, skipped under NVRTC): a host with the toolkit's
// nvtx3 in its include folders would otherwise pull <memory> into device code.
#if defined(__CUDACC_RTC__) && !defined(CCCL_DISABLE_NVTX)
#define CCCL_DISABLE_NVTX
#endif
#endif
#include_next <cuda/std/__cccl/compiler.h>

#if defined(__CUDACC_RTC__) && defined(__CUDAMUX_MOCK__) && !defined(__CUDAMUX_CCCL_COMPILER)
#define __CUDAMUX_CCCL_COMPILER 1
#undef _CCCL_CUDA_COMPILER_NVRTC
#define _CCCL_CUDA_COMPILER_NVRTC() (__CUDACC_VER_MAJOR__, __CUDACC_VER_MINOR__)
#undef _CCCL_HAS_CUDA_COMPILER
#define _CCCL_HAS_CUDA_COMPILER() 1
#undef _CCCL_CUDACC
#define _CCCL_CUDACC() (__CUDACC_VER_MAJOR__, __CUDACC_VER_MINOR__)
#endif
