// libcudamux.so: the cudamux extension API (api/include/cudamux.h).
#include <cudamux.h>

#include <string>

#include "cudamux/enum_policy.hpp"
#include "cudamux/log.hpp"

#define CUDAMUX_EXT_EXPORT extern "C" __attribute__((visibility("default")))

CUDAMUX_EXT_EXPORT CUresult cudamuxSetHallucinate(const char* enumType, int enable) {
  if (!enumType) return CUDA_ERROR_INVALID_VALUE;
  try {
    std::string why;
    if (!cudamux::policy::set_hallucinate(enumType, enable != 0, &why)) {
      cudamux::log::get()->error("cudamuxSetHallucinate(\"{}\", {}): {}", enumType, enable, why);
      return CUDA_ERROR_INVALID_VALUE;
    }
    cudamux::log::get()->info("cudamuxSetHallucinate: {} is now {} (rule 6: run-time setting wins)", enumType,
                              enable ? "hallucinate" : "strict");
    return CUDA_SUCCESS;
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

CUDAMUX_EXT_EXPORT CUresult cudamuxGetHallucinate(const char* enumType, int* enabled) {
  if (!enumType || !enabled) return CUDA_ERROR_INVALID_VALUE;
  try {
    const auto value = cudamux::policy::hallucinate(enumType);
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    *enabled = *value ? 1 : 0;
    return CUDA_SUCCESS;
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}
