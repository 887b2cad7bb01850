// placeholder (issue 15): filled in by the front end's implementation.
#include "cudamux/ptx/emit_cpp.hpp"
namespace cudamux::ptx {
EmitResult emit_cpp(const Module&, const EmitOptions&) { return {}; }
}  // namespace cudamux::ptx
