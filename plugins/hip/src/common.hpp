// What the hip backend's parts share: native status codes, the per-thread current device and
// the reporting of CUDA arguments the mapping tables give no HIP counterpart.
#pragma once

#include <spdlog/spdlog.h>

#include <cstdint>

#include "cudamux/backend.hpp"
#include "hip_api.hpp"
#include "mapping.hpp"

namespace cudamux::hip {

constexpr backend::Status status(hipError_t e) {
  return backend::Status{static_cast<std::int32_t>(e)};
}
inline constexpr backend::Status kNotSupported = status(hipErrorNotSupported);
inline constexpr backend::Status kInvalidValue = status(hipErrorInvalidValue);

// The device this thread last made current in HIP. Only this plugin drives HIP in the
// process, so the cache cannot go stale (a program calling HIP itself is not supported).
inline thread_local int t_device = -1;

inline backend::Status use_device(const HipApi& api, int ordinal) {
  if (t_device == ordinal) return backend::kOk;
  if (const hipError_t e = api.hipSetDevice(ordinal); e != hipSuccess) return status(e);
  t_device = ordinal;
  return backend::kOk;
}

// Logs a CUDA argument the table has no HIP counterpart for (policy rule 4: arguments are
// never guessed) and returns not_supported.
inline backend::Status unmapped_argument(spdlog::logger& log, mapping::Table t,
                                         std::int64_t cuda_value, const char* what) {
  const auto* r = mapping::by_cuda(t, cuda_value);
  log.warn("hip backend: {}: {} ({}) has no HIP counterpart ({}): returning not supported", what,
           r != nullptr ? r->cuda_name : std::string_view("value"), cuda_value,
           r != nullptr ? r->meaning : std::string_view("no row in the mapping tables"));
  return kNotSupported;
}

inline backend::Status map_flags(spdlog::logger& log, mapping::Table t, unsigned cuda,
                                 unsigned& hip, const char* what) {
  unsigned bad = 0;
  if (!mapping::flags_to_hip(t, cuda, hip, bad)) return unmapped_argument(log, t, bad, what);
  return backend::kOk;
}

// The CUmemorytype of the memory a copy's end lies in (the tables map it to HIP's).
inline CUmemorytype cuda_memory_type(backend::MemKind k) {
  switch (k) {
    case backend::MemKind::host_pageable:
    case backend::MemKind::host_pinned:
      return CU_MEMORYTYPE_HOST;
    case backend::MemKind::device:
      return CU_MEMORYTYPE_DEVICE;
    case backend::MemKind::managed:
      return CU_MEMORYTYPE_UNIFIED;
  }
  return CU_MEMORYTYPE_UNIFIED;
}

}  // namespace cudamux::hip
