// CUDA's error log management (cuLogs*): see driver_logs.cpp.
#pragma once

#include <cuda.h>

namespace cudamux::core {

// Records one message of a failed call (the API entry point and why) for cuLogsDumpTo*,
// callbacks and CUDA_LOG_FILE.
void record_driver_log(CUlogLevel level, const char* function, const char* message) noexcept;

}  // namespace cudamux::core
