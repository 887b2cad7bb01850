// Module storage for PTX variables (issue 15, lazy compilation): the initial bytes of a
// module's .global/.const variables, computed from the IR on the host, so that a loader can
// allocate them once per module and share them between kernels compiled separately (each
// kernel's code reaches them through a table the loader fills; EmitOptions::external_globals).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cudamux/ptx/ir.hpp"

namespace cudamux::ptx {

// Variables kept in module storage: .global and .const (not .shared, .local or references).
bool in_module_storage(const Variable& v);

struct GlobalImage {
  std::uint32_t index = 0;  // into Module::globals
  std::string name;
  bool exported = false;  // found by name (cuModuleGetGlobal)
  std::uint64_t size = 0, align = 1;
  std::vector<unsigned char> bytes;  // initial value, `size` bytes (at least 1)
  // An element initialised with another variable's address: (address(target) + addend),
  // masked and shifted down when mask != 0, stored in `width` bytes at `at`.
  struct Reloc {
    std::uint64_t at = 0;
    unsigned width = 8;
    std::uint32_t slot = 0;  // the target's position in ModuleGlobals::vars
    std::int64_t addend = 0;
    std::uint64_t mask = 0;
  };
  std::vector<Reloc> relocs;
};

struct ModuleGlobals {
  std::vector<GlobalImage> vars;  // in Module::globals order: slot k = k-th storage variable
  // Some initialiser takes a function's address: code addresses exist only once compiled,
  // so such a module cannot keep its variables outside its code (the eager path does).
  bool function_addresses = false;
  std::vector<Diagnostic> problems;  // initialisers that cannot be honoured
};
ModuleGlobals module_globals(const Module& m);

}  // namespace cudamux::ptx
