// Linking PTX modules (relocatable device code: nvcc -rdc, NVRTC -rdc=true) into one module,
// as NVIDIA's linker links them before code generation: a pass over the IR, not over text.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cudamux/ptx/ir.hpp"

namespace cudamux::ptx {

struct LinkOutcome {
  std::optional<Module> module;  // nullopt when the link failed (diagnostics say why)
  std::vector<Diagnostic> diagnostics;
  // Functions declared `.extern` and defined by no module, referenced or not (the device
  // runtime's vprintf, malloc ... are among them; the caller decides which it provides).
  std::vector<std::string> unresolved_functions;
};

// One module holding every module's definitions:
//  * `.visible`/`.weak` functions and variables are one symbol across modules: an `.extern`
//    declaration refers to the definition of that name in any module; two strong definitions
//    of a name fail the link ("multiple definition"); with a `.weak` or `.common` one the
//    first definition in link order is kept;
//  * everything else (internal functions and variables, `$str` format strings, static
//    `__shared__` arrays) stays each module's own, renamed where a name is taken;
//  * `.extern` variables defined nowhere fail the link ("undefined reference"), except
//    `.extern .shared` arrays (dynamic shared memory), one per name;
//  * `.extern` functions defined nowhere stay declarations (unresolved_functions).
// The version is the highest; target and address size are the first module's, the
// architecture the highest.
LinkOutcome link(std::vector<Module> modules);

}  // namespace cudamux::ptx
