/* Asks the driver on the library path for the private tables NVIDIA's runtime uses
 * (docs/export-tables.md) and prints what it answers: run on NVIDIA's driver (the oracle) and on
 * cudamux, the two outputs are compared by scripts/gpu-run.sh. Plain C over cuda.h. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

CUresult CUDAAPI cuGetExportTable(const void** table, const CUuuid* id);

static const unsigned char kTables[][16] = {
    {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9},
    {0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66},
    {0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc},
    {0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93},
    {0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e},
    {0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2},
    {0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9},
    {0x69, 0xa2, 0x8e, 0x9f, 0x24, 0x49, 0x8b, 0x47, 0xb0, 0x30, 0xc5, 0xda, 0x33, 0x0e, 0xa4, 0xe9},
    {0xda, 0x91, 0x51, 0xd3, 0x3a, 0xe6, 0xcc, 0x41, 0xa5, 0xc0, 0x4f, 0x26, 0xd5, 0x33, 0xe3, 0x28},
    {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff},
};
static const char* kNames[] = {"CUDART_INTERFACE", "TOOLS_RUNTIME_CALLBACK_HOOKS", "TOOLS_TLS",
                               "CONTEXT_LOCAL_STORAGE", "CONTEXT_CHECKS", "INTEGRITY_CHECK",
                               "RUNTIME_LOG_SINK", "asked-by-torch-jax-69a28e9f",
                               "asked-by-cupy-da9151d3", "made-up"};

int main(void) {
  const void* table = NULL;
  printf("before cuInit: %d\n", (int)cuGetExportTable(&table, (const CUuuid*)kTables[0]));
  if (cuInit(0) != CUDA_SUCCESS) return 1;
  printf("null table pointer: %d\n", (int)cuGetExportTable(NULL, (const CUuuid*)kTables[0]));
  for (unsigned i = 0; i < sizeof kTables / sizeof kTables[0]; ++i) {
    CUuuid id;
    memcpy(id.bytes, kTables[i], 16);
    table = NULL;
    const CUresult r = cuGetExportTable(&table, &id);
    printf("%-30s %d", kNames[i], (int)r);
    if (r == CUDA_SUCCESS && table && i != 3) printf(" size word %zu", *(const size_t*)table);
    printf("\n");
  }
  /* CUDART_INTERFACE slot 2: the primary context handle, not retained. */
  CUuuid id;
  memcpy(id.bytes, kTables[0], 16);
  if (cuGetExportTable(&table, &id) == CUDA_SUCCESS) {
    typedef CUresult (*PrimaryFn)(CUcontext*, CUdevice);
    CUcontext peeked = NULL, retained = NULL;
    unsigned flags = 0;
    int active = -1;
    const CUresult r = ((PrimaryFn)((void* const*)table)[2])(&peeked, 0);
    cuDevicePrimaryCtxGetState(0, &flags, &active);
    printf("slot 2: %d, active after it %d\n", (int)r, active);
    cuDevicePrimaryCtxRetain(&retained, 0);
    printf("slot 2 handle == retained handle: %d\n", peeked == retained);
    cuDevicePrimaryCtxReset(0);
    CUcontext again = NULL;
    cuDevicePrimaryCtxRetain(&again, 0);
    printf("handle kept across reset: %d\n", again == retained);
    unsigned version = 0;
    printf("cuCtxGetApiVersion after reset + retain: %d\n", (int)cuCtxGetApiVersion(again, &version));
  }
  return 0;
}
