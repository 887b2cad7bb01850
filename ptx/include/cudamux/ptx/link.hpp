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
  // Functions and variables declared `.extern` and defined by no module, referenced or not
  // (the device runtime's vprintf, malloc ... are among them; the caller decides which it
  // provides, and whether code that is reached refers to the rest: prune_unreachable).
  std::vector<std::string> unresolved_functions;
  std::vector<std::string> unresolved_variables;
};

// One module holding every module's definitions:
//  * `.visible`/`.weak` functions and variables are one symbol across modules: an `.extern`
//    declaration refers to the definition of that name in any module; two strong definitions
//    of a name fail the link ("multiple definition"); with a `.weak` or `.common` one the
//    first definition in link order is kept;
//  * everything else (internal functions and variables, `$str` format strings, static
//    `__shared__` arrays) stays each module's own, renamed where a name is taken;
//  * `.extern` functions and variables defined nowhere stay declarations, one per name
//    (unresolved_functions, unresolved_variables; `.extern .shared` arrays, dynamic shared
//    memory, are not listed).
// The version is the highest; target and address size are the first module's, the
// architecture the highest.
LinkOutcome link(std::vector<Module> modules);

// Drops what no kernel can reach, as NVIDIA's linker does: kept are the `.entry` functions and
// everything they reach through calls, function addresses (`.calltargets` lists included),
// variable references and the initializers of kept variables; `.visible` variables too when
// `keep_visible_variables` (a program may read them by name: cuModuleGetGlobal). The library
// a program links (CUDA's device runtime: hundreds of functions) shrinks to what it uses.
void prune_unreachable(Module& module, bool keep_visible_variables = true);

}  // namespace cudamux::ptx
