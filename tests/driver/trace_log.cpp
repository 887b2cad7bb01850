// With CUDAMUX_LOG_LEVEL=trace and CUDAMUX_LOG_SINK=file:<path> (set by CTest), calls are
// logged with their arguments, result and duration. Usage: driver_trace_log <path>.
#include <cuda.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what.c_str());
    ++failures;
  }
}

// The first line containing every one of `parts`, or "".
std::string find_line(const std::string& log, const std::vector<std::string>& parts) {
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    bool all = true;
    for (const auto& p : parts) all = all && line.find(p) != std::string::npos;
    if (all) return line;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::printf("usage: %s <log file named by CUDAMUX_LOG_SINK=file:...>\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  std::remove(path.c_str());  // the file sink appends

  check(cuInit(0) == CUDA_SUCCESS, "cuInit");
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUdeviceptr p = 0, q = 0;
  check(cuDeviceGet(&dev, 0) == CUDA_SUCCESS, "cuDeviceGet");
  check(cuCtxCreate_v2(&ctx, 0, dev) == CUDA_SUCCESS, "cuCtxCreate_v2");
  check(cuMemAlloc_v2(&p, 4096) == CUDA_SUCCESS, "cuMemAlloc_v2");
  check(cuMemAlloc_v2(&q, 0) == CUDA_ERROR_INVALID_VALUE, "cuMemAlloc_v2 of 0 bytes");
  check(cuMemsetD32_v2_ptds(p, 0xabcd, 1024) == CUDA_SUCCESS, "cuMemsetD32_v2_ptds");
  check(cuMemFree_v2(p) == CUDA_SUCCESS, "cuMemFree_v2");
  check(cuCtxDestroy_v2(ctx) == CUDA_SUCCESS, "cuCtxDestroy_v2");

  std::ifstream in(path);
  check(static_cast<bool>(in), "the log file " + path + " exists");
  std::stringstream text;
  text << in.rdbuf();
  const std::string log = text.str();

  char addr[32];
  std::snprintf(addr, sizeof addr, "%p", reinterpret_cast<void*>(&p));
  // cuMemAlloc_v2(dptr=0x..., bytesize=4096) -> CUDA_SUCCESS [123 ns]
  const std::string ok =
      find_line(log, {"cuMemAlloc_v2(", "dptr=", "bytesize=4096", "-> CUDA_SUCCESS", " ns]"});
  check(!ok.empty(), "a trace line for cuMemAlloc_v2(.., 4096) with its result and duration");
  check(ok.find(std::string("dptr=") + addr) != std::string::npos,
        "the out-pointer argument is logged as its address " + std::string(addr) + ": " + ok);
  check(ok.find("[trace]") != std::string::npos, "the line is at trace level: " + ok);
  check(!find_line(log, {"cuMemAlloc_v2(", "bytesize=0", "-> CUDA_ERROR_INVALID_VALUE"}).empty(),
        "the rejected cuMemAlloc_v2 is traced with its error");
  check(
      !find_line(log, {"cuMemsetD32_v2_ptds(", "ui=43981", "N=1024", "-> CUDA_SUCCESS"}).empty() ||
          !find_line(log, {"cuMemsetD32_v2_ptds(", "43981", "1024", "-> CUDA_SUCCESS"}).empty(),
      "cuMemsetD32_v2_ptds is traced with its value and count");
  check(!find_line(log, {"cuMemFree_v2(", "-> CUDA_SUCCESS"}).empty(), "cuMemFree_v2 is traced");
  check(!find_line(log, {"cuCtxDestroy_v2(", "-> CUDA_SUCCESS"}).empty(),
        "cuCtxDestroy_v2 is traced");
  if (failures) {
    std::printf("%d failure(s); the log was:\n%s\n", failures, log.c_str());
    return 1;
  }
  std::printf("trace_log: all checks passed\n");
  return 0;
}
