// Facts about PTX types, spaces and opcodes.
#include "cudamux/ptx/ir.hpp"

namespace cudamux::ptx {}  // namespace cudamux::ptx
