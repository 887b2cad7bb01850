// Textures and surfaces of PTX on the mock (issue 15 item 2, issue 17): each tex / tld4 / txq /
// suld / sust / sured / suq form becomes a call of the device runtime's sampler
// (cudamux_tex_sample, cudamux_tex_fetch, cudamux_tex_gather, cudamux_surf_access) or of the
// "ptx-tex" helpers of ptx_ops.h, so PTX kernels sample exactly as the mock's NVRTC kernels
// (texture.h) do. Handles are 64-bit texture / surface objects (unified mode, the only form
// nvcc emits since CUDA 12 removed texture and surface references).
#include "emit_texture.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace cudamux::ptx::detail {
namespace {

bool has(const Instruction& i, std::string_view m) {
  return std::find(i.extra.begin(), i.extra.end(), m) != i.extra.end();
}

// Geometry of a texture or surface instruction, and where its coordinates sit in the vector.
struct Geometry {
  std::string_view name;
  unsigned dims = 0;     // CUDAMUX_TEX_1D/2D/3D/CUBE (4)
  bool layered = false;  // the layer index is the vector's first element
  unsigned coords = 0;   // coordinates after the layer
};
constexpr std::array<Geometry, 9> kGeometries{{
    {"1d", 1, false, 1},
    {"2d", 2, false, 2},
    {"3d", 3, false, 3},
    {"a1d", 1, true, 1},
    {"a2d", 2, true, 2},
    {"cube", 4, false, 3},
    {"acube", 4, true, 3},
    {"2dms", 0, false, 0},  // multisample textures: no CUDA API creates them
    {"a2dms", 0, false, 0},
}};
const Geometry* geometry_of(const Instruction& i) {
  for (const auto& g : kGeometries)
    if (has(i, g.name)) return &g;
  return nullptr;
}

class TexEmitter {
 public:
  TexEmitter(const Instruction& i, const TextureEmitEnv& e) : ins_(i), env_(e) {}

  std::string run() {
    switch (ins_.op) {
      case Opcode::tex:
        return tex();
      case Opcode::tld4:
        return tld4();
      case Opcode::txq:
      case Opcode::suq:
        return query();
      case Opcode::suld:
      case Opcode::sust:
        return surface_access();
      case Opcode::sured:
        return sured();
      default:
        env_.fail("-");
        return ";";
    }
  }

 private:
  const Operand& op(std::size_t k) const {
    static const Operand none{};
    return k < ins_.operands.size() ? ins_.operands[k] : none;
  }
  Type type(std::size_t k) const { return k < ins_.types.size() ? ins_.types[k] : Type::none; }

  // The handle of `[h, ...]` or `[h]`: a 64-bit register (texture/surface object). A symbol
  // names a .texref/.surfref/.samplerref, which CUDA 12 and later cannot bind.
  std::string handle(const Operand& a) {
    const Operand* h = nullptr;
    Operand reg;
    if (a.kind == Operand::Kind::address && a.base_is_reg) {
      reg.kind = Operand::Kind::reg;
      reg.reg = a.reg;
      h = &reg;
    } else if (a.kind == Operand::Kind::address && !a.elems.empty()) {
      h = &a.elems[0];
    }
    if (h == nullptr || h->kind == Operand::Kind::symbol ||
        (a.kind == Operand::Kind::address && !a.base_is_reg && a.elems.empty())) {
      env_.fail(
          "texture/surface references (.texref/.surfref/.samplerref) cannot be bound since CUDA "
          "12; only texture and surface objects are supported");
      return "0ull";
    }
    if (h->kind != Operand::Kind::reg && h->kind != Operand::Kind::imm_int) {
      env_.fail("texture handle is not a register");
      return "0ull";
    }
    return env_.rd(*h, Type::u64);
  }
  // The coordinate vector of `[h, {c...}]` (independent mode `[t, s, {c}]` is refused).
  const Operand* coords(const Operand& a) {
    if (a.kind != Operand::Kind::address || a.elems.size() < 2) {
      env_.fail("expected [handle, {coordinates}]");
      return nullptr;
    }
    if (a.elems.size() > 2) {
      env_.fail("independent texturing mode (separate sampler) is not supported");
      return nullptr;
    }
    return &a.elems[1];
  }
  std::string elem(const Operand* v, std::size_t k, Type t) {
    if (v == nullptr) return "0";
    if (v->kind != Operand::Kind::vector) {
      if (k == 0) return env_.rd(*v, t);
      env_.fail("too few coordinates");
      return "0";
    }
    if (k >= v->elems.size()) {
      env_.fail("too few coordinates");
      return "0";
    }
    return env_.rd(v->elems[k], t);
  }
  // Writes the four 32-bit components in `o_` to the destination vector.
  std::string write_vector(const Operand& d, Type t, const std::string& src) {
    if (t != Type::f32 && t != Type::s32 && t != Type::u32) {
      env_.fail("only .f32, .s32 and .u32 texel types are supported");
      return {};
    }
    std::string s;
    if (d.kind == Operand::Kind::vector) {
      for (std::size_t k = 0; k < d.elems.size() && k < 4; ++k)
        s += " " + env_.wr(d.elems[k], Type::u32, src + "[" + std::to_string(k) + "]");
    } else {
      s += " " + env_.wr(d, Type::u32, src + "[0]");
    }
    return s;
  }

  std::string tex() {
    const Geometry* g = geometry_of(ins_);
    if (g == nullptr || g->dims == 0) {
      env_.fail(g ? "multisample textures are not supported" : "unknown texture geometry");
      return ";";
    }
    // `d|p, [a, c], ...`: p (texel resident) is always true here.
    std::size_t k = 0;
    const Operand& d = op(k++);
    std::string pred;
    if (ins_.dest_pair) pred = " " + env_.wr(op(k++), Type::pred, "true");
    const Operand& a = op(k++);
    const Type dt = type(0), ct = type(1);
    if (ct != Type::f32 && ct != Type::s32) {
      env_.fail("coordinate type must be .f32 or .s32");
      return ";";
    }
    const bool level = has(ins_, "level"), grad = has(ins_, "grad");
    std::string lod_mode = "CUDAMUX_LOD_BASE", lod = "0.0f", grad_decl, grad_ptr = "nullptr";
    if (level) {
      lod_mode = "CUDAMUX_LOD_LEVEL";
      lod = env_.rd(op(k++), Type::f32);
    } else if (grad) {
      const Operand& dx = op(k++);
      const Operand& dy = op(k++);
      std::string v[6];
      for (unsigned c = 0; c < 3; ++c) {
        const bool in = c < std::min(g->coords, 3u);
        v[c] = in ? elem(&dx, c, Type::f32) : "0.0f";
        v[3 + c] = in ? elem(&dy, c, Type::f32) : "0.0f";
      }
      lod_mode = "CUDAMUX_LOD_GRAD";
      grad_decl = " const float g_[6] = {" + v[0] + ", " + v[1] + ", " + v[2] + ", " + v[3] + ", " +
                  v[4] + ", " + v[5] + "};";
      grad_ptr = "g_";
    }
    if (k < ins_.operands.size()) {
      env_.fail("texel offsets and depth compare are not supported");
      return ";";
    }
    const Operand* c = coords(a);
    const std::string h = handle(a);
    const unsigned base = g->layered ? 1 : 0;
    const std::string layer = g->layered ? elem(c, 0, Type::s32) : "-1";
    std::string x[3];
    for (unsigned i = 0; i < 3; ++i)
      x[i] = i < g->coords ? elem(c, base + i, ct) : (ct == Type::f32 ? "0.0f" : "0");
    std::string call;
    if (ct == Type::f32) {
      call = "::cudamux_tex_sample(" + h + ", " + std::to_string(g->dims) + "u, " + x[0] + ", " +
             x[1] + ", " + x[2] + ", " + layer + ", " + lod_mode + ", " + lod + ", " + grad_ptr +
             ", o_);";
    } else {
      if (grad) {
        env_.fail("gradients with integer coordinates");
        return ";";
      }
      call = "::cudamux::ptx::texops::sample_int(" + h + ", " + std::to_string(g->dims) + "u, " +
             x[0] + ", " + x[1] + ", " + x[2] + ", " + layer + ", " + lod_mode + ", " + lod +
             ", o_);";
    }
    return "{ unsigned o_[4];" + grad_decl + " " + call + write_vector(d, dt, "o_") + pred + " }";
  }

  std::string tld4() {
    const Geometry* g = geometry_of(ins_);
    if (g == nullptr || (g->name != "2d" && g->name != "a2d")) {
      env_.fail("tld4 of this geometry is not supported (2d and a2d are)");
      return ";";
    }
    int comp = -1;
    const char* names[4] = {"r", "g", "b", "a"};
    for (int i = 0; i < 4; ++i)
      if (has(ins_, names[i])) comp = i;
    std::size_t k = 0;
    const Operand& d = op(k++);
    std::string pred;
    if (ins_.dest_pair) pred = " " + env_.wr(op(k++), Type::pred, "true");
    const Operand& a = op(k++);
    if (comp < 0 || type(1) != Type::f32) {
      env_.fail("tld4 needs a component (.r/.g/.b/.a) and .f32 coordinates");
      return ";";
    }
    if (k < ins_.operands.size()) {
      env_.fail("tld4 offsets and depth compare are not supported");
      return ";";
    }
    const Operand* c = coords(a);
    const std::string h = handle(a);
    const unsigned base = g->layered ? 1 : 0;
    const std::string layer = g->layered ? elem(c, 0, Type::s32) : "-1";
    const std::string call = "::cudamux_tex_gather(" + h + ", " + elem(c, base, Type::f32) + ", " +
                             elem(c, base + 1, Type::f32) + ", " + layer + ", " +
                             std::to_string(comp) + ", o_);";
    return "{ unsigned o_[4]; " + call + write_vector(d, type(0), "o_") + pred + " }";
  }

  std::string query() {
    static constexpr std::pair<std::string_view, const char*> kQueries[] = {
        {"width", "TXQ_WIDTH"},
        {"height", "TXQ_HEIGHT"},
        {"depth", "TXQ_DEPTH"},
        {"channel_data_type", "TXQ_CHANNEL_DATA_TYPE"},
        {"channel_order", "TXQ_CHANNEL_ORDER"},
        {"normalized_coords", "TXQ_NORMALIZED_COORDS"},
        {"array_size", "TXQ_ARRAY_SIZE"},
        {"num_mipmap_levels", "TXQ_NUM_MIPMAP_LEVELS"},
        {"num_samples", "TXQ_NUM_SAMPLES"},
        {"force_unnormalized_coords", "TXQ_FORCE_UNNORMALIZED_COORDS"},
        {"filter_mode", "TXQ_FILTER_MODE"},
        {"addr_mode_0", "TXQ_ADDR_MODE_0"},
        {"addr_mode_1", "TXQ_ADDR_MODE_1"},
        {"addr_mode_2", "TXQ_ADDR_MODE_2"},
    };
    const char* what = nullptr;
    for (const auto& [n, e] : kQueries)
      if (has(ins_, n)) what = e;
    const bool level = ins_.op == Opcode::txq && has(ins_, "level");
    if (what == nullptr) {
      env_.fail("unknown query");
      return ";";
    }
    const std::string h = handle(op(1));
    const std::string q = "::cudamux::ptx::texops::" + std::string(what);
    std::string v;
    if (ins_.op == Opcode::suq)
      v = "::cudamux::ptx::texops::suq(" + h + ", " + q + ")";
    else
      v = "::cudamux::ptx::texops::txq(" + h + ", " + q + ", " +
          (level ? "static_cast<int>(" + env_.rd(op(2), Type::s32) + ")" : std::string("0")) + ")";
    const Type t = type(0) == Type::none ? Type::b32 : type(0);
    return env_.wr(op(0), t == Type::b64 ? Type::u64 : Type::u32, v);
  }

  // The boundary mode: .trap (the default), .clamp or .zero.
  std::string boundary() const {
    if (ins_.clamp) return "CUDAMUX_BOUNDARY_CLAMP";
    if (has(ins_, "zero")) return "CUDAMUX_BOUNDARY_ZERO";
    return "CUDAMUX_BOUNDARY_TRAP";
  }
  // x (bytes for .b, elements for .p), y, z of a surface instruction. Layered geometries put
  // the layer first in PTX; the runtime takes it as z (a1d: y = 0).
  bool surface_coords(const Operand& a, std::string& x, std::string& y, std::string& z) {
    const Geometry* g = geometry_of(ins_);
    if (g == nullptr || g->dims == 0 || g->dims == 4) {
      env_.fail("surface geometry not supported (1d, 2d, 3d, a1d, a2d are)");
      return false;
    }
    const Operand* c = coords(a);
    const unsigned base = g->layered ? 1 : 0;
    x = elem(c, base, Type::s32);
    y = g->coords >= 2 ? elem(c, base + 1, Type::s32) : "0";
    z = g->layered ? elem(c, 0, Type::s32) : g->coords >= 3 ? elem(c, base + 2, Type::s32) : "0";
    return true;
  }

  std::string surface_access() {
    const bool load = ins_.op == Opcode::suld;
    const bool formatted = has(ins_, "p");
    const Operand& a = load ? op(1) : op(0);
    const Operand& v = load ? op(0) : op(1);
    std::string x, y, z;
    if (!surface_coords(a, x, y, z)) return ";";
    const std::string h = handle(a);
    const unsigned n = ins_.vec ? ins_.vec : 1;
    const Type t = type(0);
    auto value = [&](unsigned k) -> const Operand& {
      if (v.kind == Operand::Kind::vector) {
        static const Operand none{};
        return k < v.elems.size() ? v.elems[k] : none;
      }
      return v;
    };
    if (formatted) {
      // sust.p: four 32-bit components, converted to the surface's format; x in elements.
      if (load || ins_.types.empty() || size_of(t) != 4) {
        env_.fail("formatted surface loads (suld.p) are not supported");
        return ";";
      }
      std::string s = "{ unsigned c_[4] = {0u, 0u, 0u, 0u};";
      for (unsigned k = 0; k < n && k < 4; ++k)
        s += " c_[" + std::to_string(k) + "] = " + env_.rd(value(k), Type::u32) + ";";
      return s + " ::cudamux::ptx::texops::surf_store_p(" + h + ", c_, " + x + ", " + y + ", " + z +
             ", " + boundary() + "); }";
    }
    static constexpr Type kUnsigned[] = {Type::none, Type::u8,   Type::u16,  Type::none, Type::u32,
                                         Type::none, Type::none, Type::none, Type::u64};
    const unsigned es = size_of(t);
    if (es == 0 || es > 8 || kUnsigned[es] == Type::none || n * es > 32) {
      env_.fail("surface element type must be .b8, .b16, .b32 or .b64");
      return ";";
    }
    const Type ut = kUnsigned[es];
    const std::string ct = es == 1 ? "u8" : es == 2 ? "u16" : es == 4 ? "u32" : "u64";
    const std::string bytes = std::to_string(n * es) + "u";
    if (load) {
      std::string s = "{ unsigned char b_[32]; ::cudamux::ptx::texops::surf_load(" + h + ", b_, " +
                      bytes + ", " + x + ", " + y + ", " + z + ", " + boundary() + ");";
      for (unsigned k = 0; k < n; ++k) {
        const std::string tmp = "v" + std::to_string(k) + "_";
        s += " " + ct + " " + tmp + "; __builtin_memcpy(&" + tmp + ", b_ + " +
             std::to_string(k * es) + ", " + std::to_string(es) + ");";
        s += " " + env_.wr(value(k), ut, tmp);
      }
      return s + " }";
    }
    std::string s = "{ unsigned char b_[32];";
    for (unsigned k = 0; k < n; ++k) {
      const std::string tmp = "v" + std::to_string(k) + "_";
      s += " const " + ct + " " + tmp + " = " + env_.rd(value(k), ut) + "; __builtin_memcpy(b_ + " +
           std::to_string(k * es) + ", &" + tmp + ", " + std::to_string(es) + ");";
    }
    return s + " ::cudamux::ptx::texops::surf_store(" + h + ", b_, " + bytes + ", " + x + ", " + y +
           ", " + z + ", " + boundary() + "); }";
  }

  std::string sured() {
    if (has(ins_, "p")) {
      env_.fail("sured.p is not supported");
      return ";";
    }
    int opn = 0;
    switch (ins_.mode) {
      case Mode::add:
        opn = 1;
        break;
      case Mode::min:
        opn = 2;
        break;
      case Mode::max:
        opn = 3;
        break;
      case Mode::and_:
        opn = 6;
        break;
      case Mode::or_:
        opn = 7;
        break;
      case Mode::xor_:
        opn = 8;
        break;
      default:
        env_.fail("sured operation not supported");
        return ";";
    }
    const Type t = type(0);
    const char* ct = nullptr;
    switch (t) {
      case Type::u32:
      case Type::b32:
        ct = "u32";
        break;
      case Type::s32:
        ct = "s32";
        break;
      case Type::u64:
      case Type::b64:
        ct = "u64";
        break;
      case Type::s64:
        ct = "s64";
        break;
      default:
        env_.fail("sured type must be .u32, .s32, .b32, .u64, .s64 or .b64");
        return ";";
    }
    std::string x, y, z;
    if (!surface_coords(op(0), x, y, z)) return ";";
    const std::string h = handle(op(0));
    return "::cudamux::ptx::texops::surf_reduce<" + std::string(ct) + ">(" + h + ", " +
           env_.rd(op(1), t) + ", " + std::to_string(opn) + ", " + x + ", " + y + ", " + z + ", " +
           boundary() + ");";
  }

  const Instruction& ins_;
  const TextureEmitEnv& env_;
};

}  // namespace

bool is_texture_op(Opcode op) noexcept {
  switch (op) {
    case Opcode::tex:
    case Opcode::tld4:
    case Opcode::txq:
    case Opcode::suld:
    case Opcode::sust:
    case Opcode::sured:
    case Opcode::suq:
      return true;
    default:
      return false;
  }
}

std::string emit_texture(const Instruction& ins, const TextureEmitEnv& env) {
  return TexEmitter(ins, env).run();
}

}  // namespace cudamux::ptx::detail
