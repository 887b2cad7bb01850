// Warp-level matrix instructions of PTX on the mock (issue 15 item 2). Fragments are gathered
// into a local array of 32-bit words in register order (64-bit registers as two words, low
// first), handed to ptx_ops.h's mma_ops helpers, and the result words written back.
#include "emit_mma.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

namespace cudamux::ptx::detail {
namespace {

bool has(const Instruction& i, std::string_view m) {
  return std::find(i.extra.begin(), i.extra.end(), m) != i.extra.end();
}

const char* ty(Type t) {
  switch (t) {
    case Type::f16:
      return "F16";
    case Type::bf16:
      return "BF16";
    case Type::tf32:
      return "TF32";
    case Type::f32:
      return "F32";
    case Type::f64:
      return "F64";
    case Type::s8:
      return "S8";
    case Type::u8:
      return "U8";
    case Type::s32:
      return "S32";
    default:
      return nullptr;
  }
}

// mma's layouts: A .row then B .col (the only pair sm_80's shapes other than m8n8k4.f16 take).
bool row_col(const Instruction& i) {
  std::vector<std::string_view> l;
  for (const auto& e : i.extra)
    if (e == "row" || e == "col") l.push_back(e);
  return l.size() == 2 && l[0] == "row" && l[1] == "col";
}

class MmaEmitter {
 public:
  MmaEmitter(const Instruction& i, const MmaEmitEnv& e) : ins_(i), env_(e) {}

  std::string run() {
    switch (ins_.op) {
      case Opcode::mma:
        return mma();
      case Opcode::ldmatrix:
        return ldmatrix();
      case Opcode::stmatrix:
        return stmatrix();
      case Opcode::movmatrix:
        return movmatrix();
      case Opcode::wmma_load:
        return wmma_load();
      case Opcode::wmma_store:
        return wmma_store();
      case Opcode::wmma_mma:
        return wmma_mma();
      default:
        return fail("not a matrix instruction");
    }
  }

 private:
  static constexpr const char* ops = "::cudamux::ptx::mma_ops::";

  std::string fail(const std::string& why) {
    env_.fail(why);
    return ";";
  }
  const Operand* opnd(std::size_t k) const {
    return k < ins_.operands.size() ? &ins_.operands[k] : nullptr;
  }
  // The registers of a fragment operand: a vector's elements, or one register.
  static std::vector<const Operand*> regs(const Operand& o) {
    std::vector<const Operand*> r;
    if (o.kind == Operand::Kind::vector)
      for (const auto& e : o.elems) r.push_back(&e);
    else
      r.push_back(&o);
    return r;
  }
  // Appends the fragment's words to `s` (`in_[w++] = ...`); 64-bit elements give two words.
  bool gather(const Operand& o, std::size_t expect, bool wide, std::string& s, unsigned& w) {
    const auto r = regs(o);
    if (r.size() != expect) return false;
    for (const Operand* e : r) {
      if (wide) {
        const std::string v = env_.rd(*e, Type::b64);
        s += "in_[" + std::to_string(w++) + "] = static_cast<u32>(" + v + "); ";
        s += "in_[" + std::to_string(w++) + "] = static_cast<u32>((" + v + ") >> 32); ";
      } else {
        s += "in_[" + std::to_string(w++) + "] = " + env_.rd(*e, Type::b32) + "; ";
      }
    }
    return true;
  }
  bool scatter(const Operand& o, std::size_t expect, bool wide, std::string& s) {
    const auto r = regs(o);
    if (r.size() != expect) return false;
    unsigned w = 0;
    for (const Operand* e : r) {
      if (wide) {
        s += env_.wr(*e, Type::b64,
                     "(static_cast<u64>(out_[" + std::to_string(w) + "]) | static_cast<u64>(out_[" +
                         std::to_string(w + 1) + "]) << 32)") +
             " ";
        w += 2;
      } else {
        s += env_.wr(*e, Type::b32, "out_[" + std::to_string(w++) + "]") + " ";
      }
    }
    return true;
  }

  // mma.sync.aligned.shape.alayout.blayout{.satfinite}.dtype.atype.btype.ctype d, a, b, c
  std::string mma() {
    if (ins_.operands.size() != 4 || ins_.types.size() != 4)
      return fail("mma: expected d, a, b, c and four types");
    const Type dt = ins_.types[0], at = ins_.types[1], bt = ins_.types[2], ct = ins_.types[3];
    if (!ty(dt) || !ty(at) || !ty(bt) || !ty(ct)) return fail("mma: operand types not supported");
    const bool satf = has(ins_, "satfinite");
    std::string s, sc;
    unsigned w = 0;
    if (has(ins_, "m8n8k4")) {
      if (at != Type::f64 || bt != Type::f64 || ct != Type::f64 || dt != Type::f64)
        return fail("mma.m8n8k4: only .f64 is supported (the sm_70 .f16 form is not)");
      if (!row_col(ins_)) return fail("mma.m8n8k4.f64: the layouts must be .row.col");
      if (!gather(ins_.operands[1], 1, true, s, w) || !gather(ins_.operands[2], 1, true, s, w) ||
          !gather(ins_.operands[3], 2, true, s, w))
        return fail("mma.m8n8k4.f64: fragment sizes");
      if (!scatter(ins_.operands[0], 2, true, sc)) return fail("mma.m8n8k4.f64: fragment sizes");
      return collective(s, "mma_f64", "", sc);
    }
    int k = 0;
    for (const auto& [name, kk] :
         {std::pair{"m16n8k4", 4}, {"m16n8k8", 8}, {"m16n8k16", 16}, {"m16n8k32", 32}})
      if (has(ins_, name)) k = kk;
    if (k == 0) return fail("mma: shape not supported (sm_80 m16n8k4/8/16/32 and m8n8k4.f64 are)");
    if (!row_col(ins_)) return fail("mma: the layouts must be .row.col");
    const bool f16ab =
        (at == Type::f16 && bt == Type::f16) || (at == Type::bf16 && bt == Type::bf16);
    const bool tf = at == Type::tf32 && bt == Type::tf32;
    const bool i8 = (at == Type::s8 || at == Type::u8) && (bt == Type::s8 || bt == Type::u8);
    bool ok = false;
    if (f16ab) {
      ok = (k == 8 || k == 16) && (at == Type::f16 ? ((dt == Type::f16 || dt == Type::f32) &&
                                                      (ct == Type::f16 || ct == Type::f32))
                                                   : (dt == Type::f32 && ct == Type::f32));
    } else if (tf) {
      ok = (k == 4 || k == 8) && dt == Type::f32 && ct == Type::f32;
    } else if (i8) {
      ok = (k == 16 || k == 32) && dt == Type::s32 && ct == Type::s32;
    }
    if (!ok) return fail("mma: this shape and type combination is not supported");
    const unsigned ebits = f16ab ? 16 : tf ? 32 : 8;
    const std::size_t aw = 16u * k * ebits / 1024, bw = 8u * k * ebits / 1024;
    const std::size_t cw = ct == Type::f16 ? 2 : 4, dw = dt == Type::f16 ? 2 : 4;
    if (!gather(ins_.operands[1], aw, false, s, w) || !gather(ins_.operands[2], bw, false, s, w) ||
        !gather(ins_.operands[3], cw, false, s, w))
      return fail("mma: fragment sizes do not match the shape");
    if (!scatter(ins_.operands[0], dw, false, sc))
      return fail("mma: fragment sizes do not match the shape");
    return collective(s, "mma",
                      std::string("<") + ty(at) + ", " + ty(bt) + ", " + ty(ct) + ", " + ty(dt) +
                          ", " + std::to_string(k) + ", " + (satf ? "true" : "false") + ">",
                      sc);
  }

  std::string targs(int n) const {
    return "<" + std::to_string(n) + ", " + (has(ins_, "trans") ? "true" : "false") + ">";
  }
  // A warp collective: gather into in_[], the helper (mma_ops::<base><targs>(in_, out_) on
  // fibers; <base>_lane<targs> for the split back end's warp resolution), scatter from out_[].
  std::string collective(const std::string& g, const std::string& base, const std::string& ta,
                         const std::string& sc) {
    parts_.ok = true;
    parts_.gather = g;
    parts_.lane_fn = "&" + std::string(ops) + base + "_lane" + ta;
    parts_.scatter = sc;
    return "{ u32 in_[24] = {}; u32 out_[8] = {}; " + g + ops + base + ta + "(in_, out_); " + sc +
           "}";
  }

 public:
  MmaParts parts_;

 private:
  int num() const { return has(ins_, "x4") ? 4 : has(ins_, "x2") ? 2 : has(ins_, "x1") ? 1 : 0; }
  bool b16_m8n8() const {
    return has(ins_, "m8n8") && ins_.types.size() == 1 && ins_.types[0] == Type::b16;
  }

  // ldmatrix.sync.aligned.m8n8.xN{.trans}{.shared}.b16 d, [a]
  std::string ldmatrix() {
    const int n = num();
    if (n == 0 || !b16_m8n8() || ins_.operands.size() != 2)
      return fail("ldmatrix: only .m8n8 .x1/.x2/.x4 .b16 is supported");
    const std::string g =
        std::string(ops) + "put_address(" + env_.addr(ins_.operands[1], ins_.space) + ", in_); ";
    std::string sc;
    if (!scatter(ins_.operands[0], static_cast<std::size_t>(n), false, sc))
      return fail("ldmatrix: destination count does not match .x" + std::to_string(n));
    return collective(g, "ldmatrix", targs(n), sc);
  }
  // stmatrix.sync.aligned.m8n8.xN{.trans}{.shared}.b16 [a], r
  std::string stmatrix() {
    const int n = num();
    if (n == 0 || !b16_m8n8() || ins_.operands.size() != 2)
      return fail("stmatrix: only .m8n8 .x1/.x2/.x4 .b16 is supported");
    std::string g =
        std::string(ops) + "put_address(" + env_.addr(ins_.operands[0], ins_.space) + ", in_); ";
    unsigned w = 2;
    if (!gather(ins_.operands[1], static_cast<std::size_t>(n), false, g, w))
      return fail("stmatrix: source count does not match .x" + std::to_string(n));
    return collective(g, "stmatrix", targs(n), "");
  }
  // movmatrix.sync.aligned.m8n8.trans.b16 d, a
  std::string movmatrix() {
    if (!b16_m8n8() || !has(ins_, "trans") || ins_.operands.size() != 2)
      return fail("movmatrix: only .m8n8.trans.b16 exists");
    std::string g, sc;
    unsigned w = 0;
    if (!gather(ins_.operands[1], 1, false, g, w) || !scatter(ins_.operands[0], 1, false, sc))
      return fail("movmatrix: one source and one destination register");
    return collective(g, "movmatrix", "", sc);
  }

  // wmma shapes: m16n16k16 (f16, bf16) and m16n16k8 (tf32). Returns K, 0 if unsupported.
  int wmma_k() const { return has(ins_, "m16n16k16") ? 16 : has(ins_, "m16n16k8") ? 8 : 0; }
  // wmma.load.{a,b,c}.sync.aligned.{row,col}.shape{.space}.type r, [p]{, stride}
  std::string wmma_load() {
    const int k = wmma_k();
    const int which = has(ins_, "a") ? 0 : has(ins_, "b") ? 1 : has(ins_, "c") ? 2 : -1;
    if (k == 0 || which < 0 || ins_.types.size() != 1 || ins_.operands.size() < 2)
      return fail("wmma.load: only the m16n16k16 (f16, bf16) and m16n16k8 (tf32) shapes");
    Type t = ins_.types[0];
    if (which == 2 && t != Type::f16 && t != Type::f32)
      return fail("wmma.load.c: type not supported");
    if (which != 2 && !(k == 16 ? (t == Type::f16 || t == Type::bf16) : t == Type::tf32))
      return fail("wmma.load: type not supported for this shape");
    const bool col = has(ins_, "col");
    // Default stride: the stored matrix's row (or column) length.
    const int rows = which == 1 ? k : 16, cols = which == 0 ? k : 16;
    const std::string stride = ins_.operands.size() > 2 ? env_.rd(ins_.operands[2], Type::u32)
                                                        : std::to_string(col ? rows : cols) + "u";
    const std::size_t words = which == 2 ? (t == Type::f16 ? 4 : 8) : (t == Type::f16 ? 8 : 4);
    std::string s = "{ u32 out_[8] = {}; " + std::string(ops) + "wmma_load<" +
                    std::to_string(which) + ", " + ty(t) + ", " + std::to_string(k) + ", " +
                    (col ? "true" : "false") + ">(" + env_.addr(ins_.operands[1], ins_.space) +
                    ", " + stride + ", out_); ";
    if (!scatter(ins_.operands[0], words, false, s))
      return fail("wmma.load: fragment size does not match");
    return s + "}";
  }
  // wmma.store.d.sync.aligned.{row,col}.shape{.space}.type [p], r{, stride}
  std::string wmma_store() {
    const int k = wmma_k();
    if (k == 0 || ins_.types.size() != 1 || ins_.operands.size() < 2 ||
        (ins_.types[0] != Type::f16 && ins_.types[0] != Type::f32))
      return fail("wmma.store: only the m16n16k16/m16n16k8 f16/f32 accumulators");
    const Type t = ins_.types[0];
    const bool col = has(ins_, "col");
    const std::string stride =
        ins_.operands.size() > 2 ? env_.rd(ins_.operands[2], Type::u32) : std::string("16u");
    std::string s = "{ u32 in_[8] = {}; ";
    unsigned w = 0;
    if (!gather(ins_.operands[1], t == Type::f16 ? 4 : 8, false, s, w))
      return fail("wmma.store: fragment size does not match");
    return s + ops + "wmma_store<" + ty(t) + ", " + std::to_string(k) + ", " +
           (col ? "true" : "false") + ">(" + env_.addr(ins_.operands[0], ins_.space) + ", in_, " +
           stride + "); }";
  }
  // wmma.mma.sync.aligned.alayout.blayout.shape.dtype.ctype (f16) or
  // .dtype.atype.btype.ctype (bf16, tf32) d, a, b, c
  std::string wmma_mma() {
    const int k = wmma_k();
    if (k == 0 || ins_.operands.size() != 4 || has(ins_, "satfinite"))
      return fail("wmma.mma: only the m16n16k16 (f16, bf16) and m16n16k8 (tf32) shapes");
    Type dt, at, ct;
    if (ins_.types.size() == 2) {
      dt = ins_.types[0];
      ct = ins_.types[1];
      at = Type::f16;
    } else if (ins_.types.size() == 4 && ins_.types[1] == ins_.types[2]) {
      dt = ins_.types[0];
      at = ins_.types[1];
      ct = ins_.types[3];
    } else {
      return fail("wmma.mma: operand types");
    }
    const bool ok = k == 16
                        ? (at == Type::f16 ? ((dt == Type::f16 || dt == Type::f32) &&
                                              (ct == Type::f16 || ct == Type::f32))
                                           : at == Type::bf16 && dt == Type::f32 && ct == Type::f32)
                        : at == Type::tf32 && dt == Type::f32 && ct == Type::f32;
    if (!ok) return fail("wmma.mma: this shape and type combination is not supported");
    const std::size_t ab = at == Type::f16 ? 8 : 4;
    std::string s, sc;
    unsigned w = 0;
    if (!gather(ins_.operands[1], ab, false, s, w) || !gather(ins_.operands[2], ab, false, s, w) ||
        !gather(ins_.operands[3], ct == Type::f16 ? 4 : 8, false, s, w))
      return fail("wmma.mma: fragment sizes do not match");
    if (!scatter(ins_.operands[0], dt == Type::f16 ? 4 : 8, false, sc))
      return fail("wmma.mma: fragment sizes do not match");
    return collective(
        s, "wmma_mma",
        std::string("<") + ty(at) + ", " + ty(ct) + ", " + ty(dt) + ", " + std::to_string(k) + ">",
        sc);
  }

  const Instruction& ins_;
  const MmaEmitEnv& env_;
};

}  // namespace

bool is_mma_op(Opcode op) noexcept {
  switch (op) {
    case Opcode::mma:
    case Opcode::ldmatrix:
    case Opcode::stmatrix:
    case Opcode::movmatrix:
    case Opcode::wmma_load:
    case Opcode::wmma_store:
    case Opcode::wmma_mma:
      return true;
    default:
      return false;
  }
}

std::string emit_mma(const Instruction& ins, const MmaEmitEnv& env) {
  return MmaEmitter(ins, env).run();
}

MmaParts emit_mma_parts(const Instruction& ins, const MmaEmitEnv& env) {
  bool failed = false;
  MmaEmitEnv e = env;
  e.fail = [&](const std::string&) { failed = true; };
  MmaEmitter m(ins, e);
  m.run();
  if (failed) m.parts_.ok = false;
  return m.parts_;
}

}  // namespace cudamux::ptx::detail
