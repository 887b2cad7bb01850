// An ELF section that marks this libcuda.so.1 as cudamux's own. Our library carries
// NVIDIA's soname and symbol names, so the cuda backend (plugins/cuda), which looks
// for NVIDIA's libcuda.so.1 on the same paths, reads this section to skip ours (and
// copies of it) without loading it. Not a symbol: the export list stays cu* only.
#include <cstdint>

namespace {
struct IdentityNote {  // ELF note layout: namesz, descsz, type, name, desc (4-byte aligned)
  std::uint32_t namesz;
  std::uint32_t descsz;
  std::uint32_t type;
  char name[8];
  char desc[8];
};
}  // namespace

// Section name ".note.cudamux.libcuda" is what plugins/cuda/src/driver_locator.cpp reads.
__attribute__((section(".note.cudamux.libcuda"), used, aligned(4)))
const IdentityNote kCudamuxIdentityNote = {8, 8, 1, "cudamux", "libcuda"};
