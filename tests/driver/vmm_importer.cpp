// A second process for Vmm.AnotherProcessMapsTheExportedMemory: imports the POSIX file
// descriptor it inherited, maps it and prints the word at the given offset, as a program
// receiving memory from another process over IPC would.
//   driver_vmm_importer <fd> <size> <offset>
#include <cstdio>
#include <cstdlib>

#include "cuda.h"

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const int fd = std::atoi(argv[1]);
  const size_t size = std::strtoull(argv[2], nullptr, 10);
  const size_t offset = std::strtoull(argv[3], nullptr, 10);
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate_v2(&ctx, 0, dev)) return 3;
  CUmemGenericAllocationHandle h = 0;
  if (cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return 4;
  CUdeviceptr va = 0;
  if (cuMemAddressReserve(&va, size, 0, 0, 0) || cuMemMap(va, size, 0, h, 0)) return 5;
  CUmemAccessDesc rw{};
  rw.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  rw.location.id = dev;
  rw.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (cuMemSetAccess(va, size, &rw, 1)) return 6;
  unsigned word = 0;
  if (cuMemcpyDtoH_v2(&word, va + offset, sizeof word)) return 7;
  std::printf("%08x\n", word);
  // Written back for the parent to see: the memory is shared, not copied.
  const unsigned reply = ~word;
  if (cuMemcpyHtoD_v2(va + offset + 4, &reply, sizeof reply)) return 8;
  if (cuMemUnmap(va, size) || cuMemRelease(h) || cuMemAddressFree(va, size)) return 9;
  return cuCtxDestroy_v2(ctx) ? 10 : 0;
}
