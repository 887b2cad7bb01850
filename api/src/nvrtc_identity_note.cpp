// An ELF section that marks this libnvrtc.so.13 as cudamux's own, as identity_note.cpp
// does for libcuda.so.1: the cuda backend looks for NVIDIA's libnvrtc.so.13 on the same
// paths (plugins/cuda/src/nvrtc_locator.cpp) and reads this section to skip ours.
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

__attribute__((section(".note.cudamux.libnvrtc"), used, aligned(4)))
const IdentityNote kCudamuxNvrtcIdentityNote = {8, 8, 2, "cudamux", "nvrtc"};
