// A second process for the Ipc cases (ipc_test.cpp): opens the memory and event handles it is
// given (hex, on the command line), prints the word at the start of the memory, writes its
// complement after it, reports whether the event is still pending and then waits for it.
//   driver_ipc_child <mem handle hex> <event handle hex>
// With "pool", it imports a memory pool of the parent (its exported descriptor, inherited under
// the same number, else reached through /proc/<parent>/fd/<fd>) and a pointer from it, prints
// the word there, writes its complement after it and frees the import:
//   driver_ipc_child pool <parent pid> <pool fd> <pointer export data hex>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda.h"

namespace {
bool unhex(const char* s, void* out, size_t bytes) {
  if (std::strlen(s) != 2 * bytes) return false;
  auto* p = static_cast<unsigned char*>(out);
  for (size_t i = 0; i < bytes; ++i) {
    unsigned v = 0;
    if (std::sscanf(s + 2 * i, "%2x", &v) != 1) return false;
    p[i] = static_cast<unsigned char>(v);
  }
  return true;
}

bool make_context(CUcontext& ctx) {
  CUdevice dev = 0;
  return cuInit(0) == CUDA_SUCCESS && cuDeviceGet(&dev, 0) == CUDA_SUCCESS &&
         cuCtxCreate_v2(&ctx, 0, dev) == CUDA_SUCCESS;
}
}  // namespace

int import_pool(char** argv) {
  // The inherited descriptor is the exporter's own open file (what NVIDIA's driver needs: its
  // descriptors cannot be reopened through /proc); a memfd can be reopened either way.
  int fd = -1;
  if (const int inherited = std::atoi(argv[3]); fcntl(inherited, F_GETFD) != -1) {
    fd = dup(inherited);
  } else {
    const std::string path = std::string("/proc/") + argv[2] + "/fd/" + argv[3];
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) return 20;
  CUmemPoolPtrExportData data{};
  if (!unhex(argv[4], &data, sizeof data)) return 2;
  CUcontext ctx = nullptr;
  if (!make_context(ctx)) return 3;
  CUmemoryPool pool = nullptr;
  if (cuMemPoolImportFromShareableHandle(&pool, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0))
    return 21;
  close(fd);
  CUdeviceptr p = 0;
  if (cuMemPoolImportPointer(&p, pool, &data)) return 22;
  unsigned word = 0;
  if (cuMemcpyDtoH_v2(&word, p, sizeof word)) return 23;
  const unsigned reply = ~word;
  if (cuMemcpyHtoD_v2(p + 4, &reply, sizeof reply)) return 24;
  std::printf("%08x\n", word);
  CUstream s = nullptr;
  if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) || cuMemFreeAsync(p, s) || cuStreamSynchronize(s))
    return 25;
  if (cuStreamDestroy_v2(s) || cuMemPoolDestroy(pool)) return 26;
  return cuCtxDestroy_v2(ctx) ? 13 : 0;
}

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "pool") == 0) return import_pool(argv);
  if (argc != 3) return 2;
  CUipcMemHandle mh{};
  CUipcEventHandle eh{};
  if (!unhex(argv[1], &mh, sizeof mh) || !unhex(argv[2], &eh, sizeof eh)) return 2;
  CUcontext ctx = nullptr;
  if (!make_context(ctx)) return 3;
  CUdeviceptr p = 0;
  if (cuIpcOpenMemHandle_v2(&p, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)) return 4;
  // Opened twice in one context: the same pointer, one more reference.
  CUdeviceptr again = 0;
  if (cuIpcOpenMemHandle(&again, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) || again != p) return 5;
  unsigned word = 0;
  if (cuMemcpyDtoH_v2(&word, p, sizeof word)) return 6;
  const unsigned reply = ~word;
  if (cuMemcpyHtoD_v2(p + 4, &reply, sizeof reply)) return 7;
  std::printf("%08x\n", word);
  CUevent e = nullptr;
  if (cuIpcOpenEventHandle(&e, eh)) return 8;
  const CUresult q = cuEventQuery(e);
  std::printf("%s\n", q == CUDA_ERROR_NOT_READY ? "pending" : q == CUDA_SUCCESS ? "done" : "error");
  std::fflush(stdout);
  // A stream of this process waits for the other process's record.
  CUstream s = nullptr;
  if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) || cuStreamWaitEvent(s, e, 0)) return 9;
  if (cuStreamSynchronize(s) || cuEventSynchronize(e) || cuEventQuery(e)) return 10;
  std::printf("synchronized\n");
  if (cuStreamDestroy_v2(s) || cuEventDestroy_v2(e)) return 11;
  if (cuIpcCloseMemHandle(p) || cuIpcCloseMemHandle(again)) return 12;
  return cuCtxDestroy_v2(ctx) ? 13 : 0;
}
