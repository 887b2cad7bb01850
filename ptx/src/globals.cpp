// Module storage for PTX variables (globals.hpp): the same bytes emit_cpp.cpp writes as C++
// array initialisers, for a loader that keeps the variables on the host side.
#include "cudamux/ptx/globals.hpp"

#include <algorithm>

namespace cudamux::ptx {
namespace {

std::uint64_t storage_size(const Variable& v) {
  std::uint64_t n = static_cast<std::uint64_t>(size_of(v.type)) * (v.vec ? v.vec : 1);
  for (auto d : v.dims) n *= d;
  // `[]` with an initializer: the initializer gives the size.
  if (n == 0 && !v.init.empty())
    n = v.init.size() * size_of(v.type) * static_cast<std::uint64_t>(v.vec ? v.vec : 1);
  return n;
}

std::uint64_t storage_align(const Variable& v) {
  std::uint64_t a = v.align ? v.align : size_of(v.type) * (v.vec ? v.vec : 1);
  return a ? a : 1;
}

bool plain_ident(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

bool in_module_storage(const Variable& v) {
  return v.space == Space::global || v.space == Space::const_;
}

ModuleGlobals module_globals(const Module& m) {
  ModuleGlobals out;
  std::vector<std::int64_t> slot_of(m.globals.size(), -1);
  for (std::size_t g = 0; g < m.globals.size(); ++g) {
    const auto& v = m.globals[g];
    if (!in_module_storage(v)) continue;
    slot_of[g] = static_cast<std::int64_t>(out.vars.size());
    GlobalImage img;
    img.index = static_cast<std::uint32_t>(g);
    img.name = v.name;
    img.exported = plain_ident(v.name);
    img.size = storage_size(v);
    img.align = std::max<std::uint64_t>(storage_align(v), 16);
    img.bytes.assign(std::max<std::uint64_t>(img.size, 1), 0);
    if (v.is_extern && v.init.empty() && img.size == 0)
      out.problems.push_back(
          {v.loc, "external variable '" + v.name + "' (defined in another module)"});
    const unsigned es = size_of(v.type);
    for (std::size_t k = 0; k < v.init.size(); ++k) {
      const auto& in = v.init[k];
      const std::uint64_t at = k * es;
      if (at + es > img.bytes.size()) break;
      if (!in.is_symbol) {
        for (unsigned b = 0; b < es && b < 8; ++b)
          img.bytes[at + b] = static_cast<unsigned char>(in.bits >> (8 * b));
        continue;
      }
      if (in.sym.kind == SymbolRef::Kind::function) {
        out.function_addresses = true;
        continue;
      }
      if (in.sym.kind != SymbolRef::Kind::global || in.sym.index >= m.globals.size() ||
          slot_of[in.sym.index] < 0) {
        out.problems.push_back(
            {v.loc, "initializer of '" + v.name + "' takes an address outside module storage"});
        continue;
      }
      img.relocs.push_back({at, std::min<unsigned>(es, 8),
                            static_cast<std::uint32_t>(slot_of[in.sym.index]), in.offset, in.mask});
    }
    out.vars.push_back(std::move(img));
  }
  return out;
}

}  // namespace cudamux::ptx
