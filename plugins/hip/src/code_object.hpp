// AMDGPU code objects: how long an image is (cuModuleLoadData gets no size) and what its
// kernels look like (names, explicit parameters, resources), read from the ELF header and
// the NT_AMDGPU_METADATA note (MessagePack), without ROCm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cudamux::hip {

inline constexpr std::uint16_t kEmAmdgpu = 224;  // ELF e_machine of AMD GPUs

struct KernelArg {
  std::size_t offset = 0;
  std::size_t size = 0;
  std::string value_kind;  // "by_value", "global_buffer", "hidden_*", ...
};

struct KernelInfo {
  std::string name;             // .name: the source-level (mangled or extern "C") name
  std::vector<KernelArg> args;  // explicit arguments only, in order
  std::size_t kernarg_size = 0;
  int group_segment_size = 0;    // static LDS (CUDA: shared) bytes
  int private_segment_size = 0;  // scratch per work-item (CUDA: local) bytes
  int sgpr_count = 0;
  int vgpr_count = 0;
  int max_flat_workgroup_size = 0;
  int wavefront_size = 0;
};

struct CodeObject {
  std::size_t size = 0;  // bytes of the whole image
  std::string target;    // amdhsa.target, e.g. "amdgcn-amd-amdhsa--gfx90a"
  std::vector<KernelInfo> kernels;
};

// Size of a self-delimiting image at `image`: an AMDGPU ELF or a clang offload bundle
// holding them. nullopt (and `why`) for anything else.
std::optional<std::size_t> image_size(const void* image, std::string& why);

// Parses `bytes` (an AMDGPU ELF, or a bundle: its first amdgcn entry). nullopt and `why`
// when it is not one or is malformed.
std::optional<CodeObject> parse_code_object(const unsigned char* bytes, std::size_t size,
                                            std::string& why);

// hipRTC 5.2 reports success but no name from hiprtcGetLoweredName. It compiles name
// expression N (1-based, in order) into a variable __hiprtc_N holding the entity's address;
// this follows that variable's relocation to the symbol it points at. nullopt: not found.
std::optional<std::string> hiprtc_lowered_name(const unsigned char* elf, std::size_t size,
                                               std::size_t n);

}  // namespace cudamux::hip
