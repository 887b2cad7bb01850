/* Prints what cuInit and the policy say under the environment/config it was started
 * with; CTest checks the output (tests/policy/CMakeLists.txt). */
#include <cuda.h>
#include <cudamux.h>
#include <stdio.h>

int main(void) {
  CUresult r = cuInit(0);
  const char* name = "?";
  cuGetErrorName(r, &name);
  int enabled = -1;
  cudamuxGetHallucinate("CUresult", &enabled);
  printf("cuInit=%s hallucinate=%d\n", name, enabled);
  return 0;
}
