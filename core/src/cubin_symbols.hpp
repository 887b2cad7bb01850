// Initial values of device variables, read from an NVIDIA cubin's symbol table (issue 14).
// nvcc leaves a __device__ variable's host shadow zero: the initialiser lives only in the
// device image. Where a backend runs no code from the image (so there is no module whose
// storage holds the variable), the runtime still starts its device copy from these bytes.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cudamux::core {

// The bytes of the variable `name` in the 64-bit ELF `elf`: its section's contents at the
// symbol's offset (zeros for a .bss-like section). nullopt when there is no such defined
// object, or the ELF is malformed (`why` says how); every offset is checked against `elf`.
std::optional<std::vector<std::byte>> cubin_variable_bytes(std::span<const std::byte> elf,
                                                           std::string_view name, std::string& why);

}  // namespace cudamux::core
