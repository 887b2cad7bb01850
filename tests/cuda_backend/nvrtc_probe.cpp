// An NVRTC client on our libnvrtc.so.13 for the cuda backend tests: compiles SAXPY (and
// a program with an error) and prints what it saw, one fact a line; always exits 0.
#include <nvrtc.h>

#include <cstdio>
#include <string>

namespace {

const char* kSaxpy = R"(
template <typename T>
__global__ void axpy(T a, const T* x, T* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  axpy<float><<<1, 1>>>(a, x, y, n);
}
)";

std::string log_of(nvrtcProgram p) {
  size_t n = 0;
  nvrtcGetProgramLogSize(p, &n);
  std::string log(n, '\0');
  nvrtcGetProgramLog(p, log.data());
  return log;
}

}  // namespace

int main() {
  nvrtcProgram p = nullptr;
  // Dynamic parallelism needs -rdc: this also checks that the option reaches NVIDIA's NVRTC.
  nvrtcCreateProgram(&p, kSaxpy, "saxpy.cu", 0, nullptr, nullptr);
  nvrtcAddNameExpression(p, "axpy<float>");
  const char* opts[] = {"-arch=compute_90", "-rdc=true"};
  const nvrtcResult r = nvrtcCompileProgram(p, 2, opts);
  std::printf("compile %s\n", nvrtcGetErrorString(r));
  std::printf("log %s\n", log_of(p).c_str());
  if (r == NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetPTXSize(p, &n);
    std::string ptx(n, '\0');
    nvrtcGetPTX(p, ptx.data());
    std::printf("ptx entry saxpy %s\n",
                ptx.find(".entry saxpy") != std::string::npos ? "yes" : "no");
    const char* lowered = nullptr;
    nvrtcGetLoweredName(p, "axpy<float>", &lowered);
    std::printf("lowered %s\n", lowered ? lowered : "(none)");
  }
  nvrtcDestroyProgram(&p);

  nvrtcCreateProgram(&p, "__global__ void k() { undeclared(); }", "bad.cu", 0, nullptr, nullptr);
  std::printf("bad compile %s\n", nvrtcGetErrorString(nvrtcCompileProgram(p, 0, nullptr)));
  std::printf("bad log %s\n", log_of(p).c_str());
  nvrtcDestroyProgram(&p);
  return 0;
}
