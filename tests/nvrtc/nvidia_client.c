/* A client built against NVIDIA's own nvrtc.h (when the toolkit is found), linked against our
 * libnvrtc.so.13 and run on the "nvrtctest" backend: the ABI a real program sees. */
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                              \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                  \
    }                                                            \
  } while (0)

int main(void) {
  int major = 0, minor = -1;
  CHECK(nvrtcVersion(&major, &minor) == NVRTC_SUCCESS && major == 13 && minor == 0);
  nvrtcProgram prog = NULL;
  const char *hdrs[] = {"#define TWO 2\n"};
  const char *names[] = {"two.h"};
  CHECK(nvrtcCreateProgram(&prog, "#include \"two.h\"\n", "client.cu", 1, hdrs, names) == NVRTC_SUCCESS);
  CHECK(nvrtcAddNameExpression(prog, "k<TWO>") == NVRTC_SUCCESS);
  const char *opts[] = {"--gpu-architecture=sm_80", "--fmad=false"};
  CHECK(nvrtcCompileProgram(prog, 2, opts) == NVRTC_SUCCESS);
  size_t n = 0;
  CHECK(nvrtcGetPTXSize(prog, &n) == NVRTC_SUCCESS && n > 1);
  char *ptx = malloc(n);
  CHECK(ptx && nvrtcGetPTX(prog, ptx) == NVRTC_SUCCESS);
  CHECK(strncmp(ptx, "cudamux-test-image\n", 19) == 0);      /* ours, not NVIDIA's */
  CHECK(strstr(ptx, "arch=80 real=1 fmad=0") != NULL);
  free(ptx);
  CHECK(nvrtcGetCUBINSize(prog, &n) == NVRTC_SUCCESS && n == strlen("test-cubin sm_80"));
  const char *lowered = NULL;
  CHECK(nvrtcGetLoweredName(prog, "k<TWO>", &lowered) == NVRTC_SUCCESS && strcmp(lowered, "_lowered_6_k<TWO>") == 0);
  CHECK(strcmp(nvrtcGetErrorString(NVRTC_ERROR_INVALID_OPTION), "NVRTC_ERROR_INVALID_OPTION") == 0);
  CHECK(nvrtcDestroyProgram(&prog) == NVRTC_SUCCESS && prog == NULL);
  CHECK(nvrtcDestroyProgram(&prog) == NVRTC_ERROR_INVALID_PROGRAM);
  puts("nvidia_client: OK");
  return 0;
}
