// placeholder (issue 15): filled in by the front end's implementation.
#include "cudamux/ptx/ir.hpp"
namespace cudamux::ptx {
std::optional<Module> parse(std::string_view, std::vector<Diagnostic>& diagnostics) {
  diagnostics.push_back({{1, 1}, "the PTX parser is not implemented yet"});
  return std::nullopt;
}
}  // namespace cudamux::ptx
