// The PTX parser (issue 15) on nvcc output (fixtures), NVIDIA's cuda-samples corpus when
// present, hand-written PTX and broken input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "cudamux/ptx/ir.hpp"

namespace fs = std::filesystem;
using namespace cudamux::ptx;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string first_diag(const std::vector<Diagnostic>& d) {
  if (d.empty()) return "";
  return std::to_string(d[0].loc.line) + ":" + std::to_string(d[0].loc.column) + ": " +
         d[0].message;
}

}  // namespace

// NVIDIA's cuda-samples compiled to PTX (not committed): every file parses cleanly.
TEST(Corpus, CudaSamplesParse) {
  const char* env = std::getenv("CUDAMUX_PTX_CORPUS");
  fs::path dir = env ? env : "/tmp/ptxcorpus";
  if (!fs::is_directory(dir)) GTEST_SKIP() << "no corpus at " << dir;
  int n = 0;
  for (auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".ptx") continue;
    std::vector<Diagnostic> d;
    auto m = parse(read_file(e.path()), d);
    EXPECT_TRUE(m.has_value()) << e.path().filename() << ": " << first_diag(d);
    EXPECT_TRUE(d.empty()) << e.path().filename() << ": " << first_diag(d);
    ++n;
  }
  EXPECT_GT(n, 0);
}

namespace {

Module parse_ok(std::string_view text) {
  std::vector<Diagnostic> d;
  auto m = parse(text, d);
  EXPECT_TRUE(m.has_value()) << first_diag(d);
  EXPECT_TRUE(d.empty()) << first_diag(d);
  return m ? std::move(*m) : Module{};
}

Module fixture(const char* name) { return parse_ok(read_file(fs::path(CUDAMUX_PTX_DATA) / name)); }

// The diagnostic parse() gives for broken input ("" when it parsed).
std::string parse_error(std::string_view text) {
  std::vector<Diagnostic> d;
  auto m = parse(text, d);
  if (m) return "";
  EXPECT_FALSE(d.empty());
  return first_diag(d);
}

const Function& func(const Module& m, std::string_view name) {
  for (auto& f : m.functions)
    if (f.name == name) return f;
  ADD_FAILURE() << "no function " << name;
  static Function none;
  return none;
}

const Variable& global(const Module& m, std::string_view name) {
  for (auto& v : m.globals)
    if (v.name == name) return v;
  ADD_FAILURE() << "no global " << name;
  static Variable none;
  return none;
}

// The n-th instruction (0-based) whose raw opcode is `raw`.
const Instruction& insn(const Function& f, std::string_view raw, int n = 0) {
  for (auto& in : f.body)
    if (in.raw_opcode == raw && n-- == 0) return in;
  ADD_FAILURE() << "no instruction " << raw << " in " << f.name;
  static Instruction none;
  return none;
}

std::string reg_name(const Function& f, const Operand& o) {
  EXPECT_EQ(o.kind, Operand::Kind::reg);
  return o.kind == Operand::Kind::reg && o.reg < f.registers.size() ? f.registers[o.reg].name : "?";
}

std::vector<std::uint8_t> init_bytes(const Variable& v) {
  std::vector<std::uint8_t> out;
  for (auto& i : v.init) {
    EXPECT_FALSE(i.is_symbol);
    for (unsigned k = 0; k < size_of(v.type); ++k)
      out.push_back(static_cast<std::uint8_t>(i.bits >> (8 * k)));
  }
  return out;
}

constexpr const char* kHeader = ".version 8.5\n.target sm_75\n.address_size 64\n";

}  // namespace

TEST(Fixtures, AllParse) {
  int n = 0;
  for (auto& e : fs::directory_iterator(CUDAMUX_PTX_DATA)) {
    if (e.path().extension() != ".ptx") continue;
    std::vector<Diagnostic> d;
    auto m = parse(read_file(e.path()), d);
    EXPECT_TRUE(m && d.empty()) << e.path().filename() << ": " << first_diag(d);
    ++n;
  }
  EXPECT_GE(n, 15);
}

TEST(Fixtures, Saxpy) {
  Module m = fixture("saxpy.compute_75.ptx");
  EXPECT_EQ(m.version_major, 9u);
  EXPECT_EQ(m.version_minor, 0u);
  EXPECT_EQ(m.target, "sm_75");
  EXPECT_EQ(m.arch, 75u);
  EXPECT_EQ(m.address_size, 64u);
  const Function& f = func(m, "saxpy");
  EXPECT_TRUE(f.is_entry);
  EXPECT_TRUE(f.is_visible);
  ASSERT_EQ(f.params.size(), 4u);
  EXPECT_EQ(f.params[0].type, Type::u32);
  EXPECT_EQ(f.params[1].type, Type::f32);
  EXPECT_EQ(f.params[2].size_bytes(), 8u);
  // %p<2> %f<5> %r<6> %rd<8>
  EXPECT_EQ(f.registers.size(), 2u + 5 + 6 + 8);
  EXPECT_EQ(f.registers[0].name, "%p0");
  EXPECT_EQ(f.registers[0].type, Type::pred);

  const Instruction& ld = insn(f, "ld.param.f32");
  EXPECT_EQ(ld.op, Opcode::ld);
  EXPECT_EQ(ld.space, Space::param);
  ASSERT_EQ(ld.operands.size(), 2u);
  EXPECT_EQ(reg_name(f, ld.operands[0]), "%f1");
  EXPECT_EQ(ld.operands[1].kind, Operand::Kind::address);
  EXPECT_EQ(ld.operands[1].sym.kind, SymbolRef::Kind::param);
  EXPECT_EQ(ld.operands[1].sym.index, 1u);

  const Instruction& tid = insn(f, "mov.u32", 2);
  EXPECT_EQ(tid.operands[1].kind, Operand::Kind::special);
  EXPECT_EQ(tid.operands[1].special, SpecialReg::tid);
  EXPECT_EQ(tid.operands[1].component, 0);

  const Instruction& setp = insn(f, "setp.ge.s32");
  EXPECT_EQ(setp.op, Opcode::setp);
  EXPECT_EQ(setp.cmp, Cmp::ge);
  EXPECT_EQ(setp.types, std::vector<Type>{Type::s32});

  const Instruction& bra = insn(f, "bra");
  EXPECT_TRUE(bra.guarded);
  EXPECT_FALSE(bra.guard_negated);
  EXPECT_EQ(f.registers[bra.guard_reg].name, "%p1");
  ASSERT_EQ(bra.operands.size(), 1u);
  ASSERT_EQ(bra.operands[0].sym.kind, SymbolRef::Kind::label);
  const Label& l = f.labels[bra.operands[0].sym.index];
  EXPECT_EQ(l.name, "$L__BB0_2");
  EXPECT_EQ(f.body[l.instruction].op, Opcode::ret);

  const Instruction& nc = insn(f, "ld.global.nc.f32");
  EXPECT_TRUE(nc.non_coherent);
  EXPECT_EQ(nc.space, Space::global);
  const Instruction& cvta = insn(f, "cvta.to.global.u64");
  EXPECT_TRUE(cvta.to);
  EXPECT_EQ(cvta.space, Space::global);
  const Instruction& wide = insn(f, "mul.wide.s32");
  EXPECT_TRUE(wide.wide);
  EXPECT_EQ(wide.operands[2].kind, Operand::Kind::imm_int);
  EXPECT_EQ(wide.operands[2].bits, 4u);
  const Instruction& fma = insn(f, "fma.rn.f32");
  EXPECT_EQ(fma.op, Opcode::fma);
  EXPECT_EQ(fma.rounding, Rounding::rn);
  const Instruction& mad = insn(f, "mad.lo.s32");
  EXPECT_TRUE(mad.lo);
}

TEST(Fixtures, DebugInfoSkipped) {
  // -G output: .file, .loc and DWARF .section bodies.
  Module m = fixture("saxpy.compute_90.ptx");
  EXPECT_EQ(m.arch, 90u);
  ASSERT_GE(m.files.size(), 2u);
  EXPECT_NE(m.files[1].find("saxpy.cu"), std::string::npos);
  const Function& f = func(m, "saxpy");
  EXPECT_FALSE(f.body.empty());
  EXPECT_EQ(f.params.size(), 4u);
}

TEST(Fixtures, StructParamsAndLocalDepot) {
  Module m = fixture("locals.compute_75.ptx");
  const Function& f = func(m, "locals");
  ASSERT_EQ(f.params.size(), 4u);
  EXPECT_EQ(f.params[0].type, Type::b8);
  EXPECT_EQ(f.params[0].align, 8u);
  EXPECT_EQ(f.params[0].size_bytes(), 32u);  // struct Big
  EXPECT_EQ(f.params[1].align, 2u);
  EXPECT_EQ(f.params[1].size_bytes(), 4u);  // struct Small
  ASSERT_FALSE(f.locals.empty());
  EXPECT_EQ(f.locals[0].name, "__local_depot0");
  EXPECT_EQ(f.locals[0].space, Space::local);
  EXPECT_EQ(f.locals[0].align, 16u);
  EXPECT_EQ(f.locals[0].size_bytes(), 96u);
  const Instruction& v2 = insn(f, "ld.param.v2.u8");
  EXPECT_EQ(v2.vec, 2);
  ASSERT_EQ(v2.operands[0].kind, Operand::Kind::vector);
  EXPECT_EQ(v2.operands[0].elems.size(), 2u);
  EXPECT_EQ(v2.operands[1].sym.kind, SymbolRef::Kind::param);
  EXPECT_EQ(v2.operands[1].sym.index, 1u);
  EXPECT_EQ(v2.operands[1].offset, 2);
}

TEST(Fixtures, GlobalsInitialBytes) {
  Module m = fixture("globals.compute_75.ptx");
  const Variable& table = global(m, "table");
  EXPECT_EQ(table.space, Space::global);
  EXPECT_EQ(table.size_bytes(), 16u);
  EXPECT_EQ(table.align, 4u);
  EXPECT_EQ(init_bytes(table), (std::vector<std::uint8_t>{1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 3, 0,
                                                          0, 0, 0xff, 0xff, 0xff, 0x7f}));
  const Variable& ptr = global(m, "ptr");
  ASSERT_EQ(ptr.init.size(), 1u);
  EXPECT_TRUE(ptr.init[0].is_symbol);
  EXPECT_TRUE(ptr.init[0].generic);
  EXPECT_EQ(ptr.init[0].offset, 8);
  ASSERT_EQ(ptr.init[0].sym.kind, SymbolRef::Kind::global);
  EXPECT_EQ(m.globals[ptr.init[0].sym.index].name, "table");
  const Variable& coeffs = global(m, "coeffs");
  EXPECT_EQ(coeffs.space, Space::const_);
  EXPECT_EQ(init_bytes(coeffs),
            (std::vector<std::uint8_t>{0, 0, 0xc0, 0x3f, 0, 0, 0x80, 0xbe, 0, 0, 0x40, 0x40}));
  const Variable& dbl = global(m, "dbl");
  EXPECT_EQ(dbl.type, Type::f64);
  ASSERT_EQ(dbl.init.size(), 1u);
  EXPECT_EQ(dbl.init[0].bits, 0xC004000000000000ull);  // -2.5
  const Variable& big = global(m, "big");
  ASSERT_EQ(big.init.size(), 1u);
  EXPECT_EQ(big.init[0].bits, 0xfedcba9876543210ull);  // written as a negative decimal
  const Variable& msg = global(m, "msg_ptr");
  ASSERT_EQ(msg.init.size(), 1u);
  EXPECT_EQ(m.globals[msg.init[0].sym.index].name, "$str");
  const Variable& shorts = global(m, "shorts");
  EXPECT_EQ(shorts.size_bytes(), 6u);
  EXPECT_EQ(shorts.init.size(), 5u);  // the tail is zero-filled
  const Variable& zeroed = global(m, "zeroed");
  EXPECT_TRUE(zeroed.init.empty());
  EXPECT_EQ(zeroed.size_bytes(), 32u);
}

TEST(Fixtures, FunctionsCallsAndPointers) {
  Module m = fixture("funcs.compute_75.ptx");
  const Function& vp = func(m, "vprintf");
  EXPECT_FALSE(vp.has_body);
  EXPECT_TRUE(vp.is_extern);
  ASSERT_EQ(vp.returns.size(), 1u);
  EXPECT_EQ(vp.params.size(), 2u);
  const Function& af = func(m, "__assertfail");
  EXPECT_EQ(af.params.size(), 5u);
  EXPECT_TRUE(af.returns.empty());
  const Variable& ops = global(m, "ops");
  ASSERT_EQ(ops.init.size(), 2u);
  EXPECT_EQ(ops.init[0].sym.kind, SymbolRef::Kind::function);
  EXPECT_EQ(m.functions[ops.init[0].sym.index].name, "_Z6add_opii");
  EXPECT_EQ(m.functions[ops.init[1].sym.index].name, "_Z6mul_opii");

  // Recursion: fib calls itself.
  const Function& fact = func(m, "_Z3fibi");
  bool self_call = false;
  for (auto& in : fact.body)
    if (in.op == Opcode::call && in.operands.size() >= 2 &&
        in.operands[1].sym.kind == SymbolRef::Kind::function &&
        m.functions[in.operands[1].sym.index].name == "_Z3fibi")
      self_call = true;
  EXPECT_TRUE(self_call);

  const Function& k = func(m, "funcs");
  // Indirect call: (retval0), %rd, (param0, param1), prototype_2 (numbered per module).
  const Instruction& ind = insn(k, "call");
  ASSERT_EQ(ind.operands.size(), 4u);
  EXPECT_EQ(ind.operands[0].kind, Operand::Kind::vector);
  ASSERT_EQ(ind.operands[0].elems.size(), 1u);
  EXPECT_EQ(ind.operands[0].elems[0].sym.kind, SymbolRef::Kind::local);
  EXPECT_EQ(k.locals[ind.operands[0].elems[0].sym.index].name, "retval0");
  EXPECT_EQ(ind.operands[1].kind, Operand::Kind::reg);
  EXPECT_EQ(ind.operands[2].elems.size(), 2u);
  ASSERT_EQ(ind.operands[3].sym.kind, SymbolRef::Kind::label);
  EXPECT_EQ(k.labels[ind.operands[3].sym.index].name, "prototype_2");
  ASSERT_EQ(k.prototypes.size(), 1u);
  EXPECT_EQ(k.prototypes[0].label, ind.operands[3].sym.index);
  EXPECT_EQ(k.prototypes[0].params.size(), 2u);
  ASSERT_EQ(k.prototypes[0].returns.size(), 1u);
  EXPECT_EQ(k.prototypes[0].returns[0].type, Type::b32);
  // Direct call with no return value: () , __assertfail, (5 args).
  bool saw_assert = false, saw_printf = false;
  for (auto& in : k.body) {
    if (in.op != Opcode::call) continue;
    ASSERT_GE(in.operands.size(), 3u);
    if (in.operands[1].sym.kind != SymbolRef::Kind::function) continue;
    const std::string& callee = m.functions[in.operands[1].sym.index].name;
    if (callee == "__assertfail") {
      saw_assert = true;
      EXPECT_TRUE(in.operands[0].elems.empty());
      EXPECT_EQ(in.operands[2].elems.size(), 5u);
    }
    if (callee == "vprintf") {
      saw_printf = true;
      EXPECT_TRUE(in.uni);
      EXPECT_EQ(in.operands[0].elems.size(), 1u);
      EXPECT_EQ(in.operands[2].elems.size(), 2u);
      // The call block's .param variables are locals of their own.
      for (auto& a : in.operands[2].elems) {
        ASSERT_EQ(a.sym.kind, SymbolRef::Kind::local);
        EXPECT_EQ(k.locals[a.sym.index].space, Space::param);
      }
    }
  }
  EXPECT_TRUE(saw_assert);
  EXPECT_TRUE(saw_printf);
  // Each callseq block declares its own param0: distinct locals.
  int param0 = 0;
  for (auto& v : k.locals) param0 += v.name == "param0";
  EXPECT_GE(param0, 3);
}

TEST(Fixtures, Atomics) {
  Module m = fixture("atomics.compute_75.ptx");
  const Function& f = func(m, "atomics");
  const Instruction& add = insn(f, "atom.global.add.u32");
  EXPECT_EQ(add.op, Opcode::atom);
  EXPECT_EQ(add.space, Space::global);
  EXPECT_EQ(add.mode, Mode::add);
  EXPECT_EQ(add.types, std::vector<Type>{Type::u32});
  EXPECT_EQ(insn(f, "atom.global.add.u32", 1).operands[2].bits, static_cast<std::uint64_t>(-2));
  EXPECT_EQ(insn(f, "atom.global.exch.b32").mode, Mode::exch);
  EXPECT_EQ(insn(f, "atom.global.min.s32").mode, Mode::min);
  EXPECT_EQ(insn(f, "atom.global.max.s32").mode, Mode::max);
  EXPECT_EQ(insn(f, "atom.global.inc.u32").mode, Mode::inc);
  EXPECT_EQ(insn(f, "atom.global.dec.u32").mode, Mode::dec);
  EXPECT_EQ(insn(f, "atom.global.and.b32").mode, Mode::and_);
  EXPECT_EQ(insn(f, "atom.global.or.b32").mode, Mode::or_);
  EXPECT_EQ(insn(f, "atom.global.xor.b32").mode, Mode::xor_);
  const Instruction& cas = insn(f, "atom.global.cas.b32");
  EXPECT_EQ(cas.mode, Mode::cas);
  EXPECT_EQ(cas.operands.size(), 4u);
  const Instruction& fadd = insn(f, "atom.global.add.f32");
  EXPECT_EQ(fadd.operands[2].kind, Operand::Kind::imm_float);
  EXPECT_TRUE(fadd.operands[2].is_f32);
  EXPECT_EQ(fadd.operands[2].bits, 0x3FC00000u);
  const Instruction& dadd = insn(f, "atom.global.add.f64");
  EXPECT_FALSE(dadd.operands[2].is_f32);
  EXPECT_EQ(dadd.operands[2].bits, 0x3FD0000000000000ull);
  EXPECT_EQ(insn(f, "atom.shared.add.u32").space, Space::shared);
  EXPECT_EQ(insn(f, "atom.global.cta.add.u32").scope, Scope::cta);
  EXPECT_EQ(insn(f, "atom.global.sys.add.u32").scope, Scope::sys);
  // A module-scope .shared demoted into the kernel body is a local of the function.
  bool shared_local = false;
  for (auto& v : f.locals) shared_local |= v.space == Space::shared;
  EXPECT_TRUE(shared_local);
}

TEST(Fixtures, WarpCollectives) {
  Module m = fixture("warp.compute_80.ptx");
  EXPECT_EQ(m.arch, 80u);
  const Function& f = func(m, "warp_ops");
  const Instruction& down = insn(f, "shfl.sync.down.b32");
  EXPECT_EQ(down.op, Opcode::shfl);
  EXPECT_TRUE(down.sync);
  EXPECT_EQ(down.mode, Mode::down);
  EXPECT_TRUE(down.dest_pair);
  EXPECT_EQ(down.operands.size(), 6u);
  EXPECT_EQ(insn(f, "shfl.sync.up.b32").mode, Mode::up);
  EXPECT_EQ(insn(f, "shfl.sync.bfly.b32").mode, Mode::bfly);
  EXPECT_EQ(insn(f, "shfl.sync.idx.b32").mode, Mode::idx);
  EXPECT_EQ(insn(f, "vote.sync.ballot.b32").mode, Mode::ballot);
  EXPECT_EQ(insn(f, "vote.sync.all.pred").mode, Mode::all);
  EXPECT_EQ(insn(f, "vote.sync.any.pred").types, std::vector<Type>{Type::pred});
  EXPECT_EQ(insn(f, "match.any.sync.b32").mode, Mode::any);
  EXPECT_EQ(insn(f, "activemask.b32").op, Opcode::activemask);
  const Instruction& ws = insn(f, "bar.warp.sync");
  EXPECT_EQ(ws.op, Opcode::bar_warp_sync);
  EXPECT_EQ(ws.operands[0].bits, ~std::uint64_t{0});
  EXPECT_EQ(insn(f, "redux.sync.add.s32").mode, Mode::add);
  EXPECT_EQ(insn(f, "redux.sync.max.s32").op, Opcode::redux);
}

TEST(Fixtures, TexturesAndSurfaces) {
  Module m = fixture("tex.compute_75.ptx");
  const Function& f = func(m, "texfetch");
  const Instruction& tex = insn(f, "tex.2d.v4.f32.f32");
  EXPECT_EQ(tex.op, Opcode::tex);
  EXPECT_EQ(tex.vec, 4);
  EXPECT_EQ(tex.types, (std::vector<Type>{Type::f32, Type::f32}));
  EXPECT_EQ(tex.extra, std::vector<std::string>{"2d"});
  ASSERT_EQ(tex.operands.size(), 2u);
  EXPECT_EQ(tex.operands[0].elems.size(), 4u);
  const Operand& a = tex.operands[1];
  EXPECT_EQ(a.kind, Operand::Kind::address);
  ASSERT_EQ(a.elems.size(), 2u);
  EXPECT_EQ(a.elems[0].kind, Operand::Kind::reg);  // the texture object
  EXPECT_EQ(a.elems[1].kind, Operand::Kind::vector);
  EXPECT_EQ(a.elems[1].elems.size(), 2u);
  const Instruction& sust = insn(f, "sust.b.2d.b32.trap");
  EXPECT_EQ(sust.op, Opcode::sust);
  EXPECT_EQ(sust.extra, (std::vector<std::string>{"b", "2d", "trap"}));
}

TEST(Fixtures, SharedMemoryAndBarriers) {
  Module m = fixture("reduce.compute_75.ptx");
  const Function& rs = func(m, "reduce_static");
  EXPECT_EQ(rs.maxntid[0], 256u);
  EXPECT_EQ(rs.minnctapersm, 2u);
  const Instruction& bar = insn(rs, "bar.sync");
  EXPECT_EQ(bar.op, Opcode::bar);
  EXPECT_TRUE(bar.sync);
  const Variable& dyn = global(m, "dyn");
  EXPECT_TRUE(dyn.is_extern);
  EXPECT_EQ(dyn.space, Space::shared);
  ASSERT_EQ(dyn.dims.size(), 1u);
  EXPECT_EQ(dyn.dims[0], 0u);
}

TEST(Fixtures, Sm80AndSm90Features) {
  Module a = fixture("async.compute_80.ptx");
  const Function& ac = func(a, "async_copy");
  const Instruction& cp = insn(ac, "cp.async.cg.shared.global");
  EXPECT_EQ(cp.op, Opcode::cp_async);
  EXPECT_EQ(cp.space, Space::shared);
  EXPECT_EQ(cp.extra, (std::vector<std::string>{"cg", "global"}));
  EXPECT_EQ(insn(ac, "cp.async.commit_group").op, Opcode::cp_async_commit_group);
  EXPECT_EQ(insn(ac, "cp.async.wait_group").op, Opcode::cp_async_wait_group);

  Module c = fixture("cluster.compute_90.ptx");
  const Function& ck = func(c, "cluster_kernel");
  EXPECT_EQ(ck.reqnctapercluster[0], 2u);
  EXPECT_EQ(ck.reqnctapercluster[1], 1u);
  const Instruction& arrive = insn(ck, "barrier.cluster.arrive");
  EXPECT_EQ(arrive.op, Opcode::barrier);
  EXPECT_EQ(arrive.mode, Mode::arrive);
  EXPECT_EQ(arrive.scope, Scope::cluster);
  EXPECT_EQ(insn(ck, "mapa.u64").op, Opcode::mapa);
  EXPECT_EQ(insn(ck, "mov.b32").operands[1].special, SpecialReg::cluster_ctarank);

  Module h = fixture("half.compute_80.ptx");
  bool f16 = false, bf16 = false;
  for (auto& in : func(h, "halfmath").body)
    for (auto t : in.types) {
      f16 |= t == Type::f16 || t == Type::f16x2;
      bf16 |= t == Type::bf16 || t == Type::bf16x2;
    }
  EXPECT_TRUE(f16);
  EXPECT_TRUE(bf16);
}

// ---- hand-written PTX -----------------------------------------------------------------------

TEST(Literals, EveryForm) {
  std::string text = std::string(kHeader) + R"(
.global .u32 dec = 42;
.global .u32 hex = 0x1F;
.global .u32 oct = 017;
.global .u32 bin = 0b101;
.global .s32 neg = -5;
.global .u64 uns = 18446744073709551615U;
.global .f32 f_hex = 0f3F800000;
.global .f32 f_dec = 1.5;
.global .f32 f_from_d = 0d4000000000000000;
.global .f64 d_hex = 0dBFF0000000000000;
.global .f64 d_exp = 2.5e2;
.global .f32 f_neg = -0f40000000;
.global .s16 nested[2][2] = {{1, -1}, {2, 3}};
.global .u8 unsized[] = {1, 2, 3};
.global .v2 .u32 vecs[2] = {{1, 2}, {3, 4}};
)";
  Module m = parse_ok(text);
  EXPECT_EQ(global(m, "dec").init[0].bits, 42u);
  EXPECT_EQ(global(m, "hex").init[0].bits, 31u);
  EXPECT_EQ(global(m, "oct").init[0].bits, 15u);
  EXPECT_EQ(global(m, "bin").init[0].bits, 5u);
  EXPECT_EQ(global(m, "neg").init[0].bits, 0xfffffffbu);  // masked to the element size
  EXPECT_EQ(global(m, "uns").init[0].bits, ~std::uint64_t{0});
  EXPECT_EQ(global(m, "f_hex").init[0].bits, 0x3F800000u);
  EXPECT_EQ(global(m, "f_dec").init[0].bits, 0x3FC00000u);
  EXPECT_EQ(global(m, "f_from_d").init[0].bits, 0x40000000u);  // 2.0 narrowed to f32
  EXPECT_EQ(global(m, "d_hex").init[0].bits, 0xBFF0000000000000ull);
  EXPECT_EQ(global(m, "d_exp").init[0].bits, 0x406F400000000000ull);  // 250.0
  EXPECT_EQ(global(m, "f_neg").init[0].bits, 0xC0000000u);
  const Variable& nested = global(m, "nested");
  EXPECT_EQ(nested.size_bytes(), 8u);
  EXPECT_EQ(init_bytes(nested), (std::vector<std::uint8_t>{1, 0, 0xff, 0xff, 2, 0, 3, 0}));
  const Variable& unsized = global(m, "unsized");
  ASSERT_EQ(unsized.dims.size(), 1u);
  EXPECT_EQ(unsized.dims[0], 3u);  // sized by its initializer
  const Variable& vecs = global(m, "vecs");
  EXPECT_EQ(vecs.vec, 2);
  EXPECT_EQ(vecs.size_bytes(), 16u);
  EXPECT_EQ(vecs.init.size(), 4u);
}

TEST(Literals, InstructionImmediates) {
  std::string text = std::string(kHeader) + R"(
.visible .entry k()
{
  .reg .f32 %f<3>;
  .reg .f64 %fd<2>;
  .reg .b32 %r<3>;
  mov.f32 %f1, 0f3F800000;
  mov.f32 %f2, 0.5;
  mov.f64 %fd1, 0.5;
  mov.b32 %r1, -1;
  mov.b32 %r2, WARP_SZ;
  ret;
}
)";
  Module m = parse_ok(text);
  const Function& f = func(m, "k");
  EXPECT_TRUE(f.body[0].operands[1].is_f32);
  EXPECT_EQ(f.body[0].operands[1].bits, 0x3F800000u);
  EXPECT_TRUE(f.body[1].operands[1].is_f32);  // decimal in an f32 context
  EXPECT_EQ(f.body[1].operands[1].bits, 0x3F000000u);
  EXPECT_FALSE(f.body[2].operands[1].is_f32);
  EXPECT_EQ(f.body[2].operands[1].bits, 0x3FE0000000000000ull);
  EXPECT_EQ(f.body[3].operands[1].bits, ~std::uint64_t{0});
  EXPECT_EQ(f.body[4].operands[1].bits, 32u);
}

TEST(Syntax, ScopesLabelsAndForwardReferences) {
  std::string text = std::string(kHeader) + R"(
.func (.param .b32 ret) later_decl_user(.param .b32 a)
{
  .reg .b32 %r<2>;
  ld.param.b32 %r0, [a];
  { // callseq
  .reg .b32 tmp;
  .param .b32 param0;
  st.param.b32 [param0], %r0;
  .param .b32 retval0;
  call.uni (retval0), defined_later, (param0);
  ld.param.b32 tmp, [retval0];
  mov.b32 %r1, tmp;
  }
  {
  .reg .b32 tmp;
  .param .b32 param0;
  mov.b32 tmp, %r1;
  st.param.b32 [param0], tmp;
  }
  bra.uni DONE;
DONE:
  st.param.b32 [ret], %r1;
  ret;
}
.func (.param .b32 r) defined_later(.param .b32 x)
{
  ret;
}
)";
  Module m = parse_ok(text);
  const Function& f = func(m, "later_decl_user");
  ASSERT_EQ(f.registers.size(), 4u);
  // The two `tmp` declarations are different registers with unique names.
  EXPECT_EQ(f.registers[2].name, "tmp");
  EXPECT_NE(f.registers[3].name, "tmp");
  EXPECT_EQ(f.registers[3].name.rfind("tmp", 0), 0u);
  const Instruction& call = insn(f, "call.uni");
  ASSERT_EQ(call.operands[1].sym.kind, SymbolRef::Kind::function);
  EXPECT_EQ(m.functions[call.operands[1].sym.index].name, "defined_later");
  EXPECT_EQ(call.operands.size(), 3u);  // no prototype
  // Each block's param0 is its own local; the second st.param writes the second one.
  ASSERT_EQ(f.locals.size(), 3u);
  EXPECT_EQ(insn(f, "st.param.b32", 0).operands[0].sym.index, 0u);
  EXPECT_EQ(insn(f, "st.param.b32", 1).operands[0].sym.index, 2u);
  EXPECT_EQ(reg_name(f, insn(f, "st.param.b32", 1).operands[1]), f.registers[3].name);
  // Forward branch to a label; `ret` param resolves past the inputs.
  const Instruction& bra = insn(f, "bra.uni");
  EXPECT_TRUE(bra.uni);
  EXPECT_EQ(f.labels[bra.operands[0].sym.index].instruction, f.body.size() - 2);
  const Instruction& st_ret = insn(f, "st.param.b32", 2);
  EXPECT_EQ(st_ret.operands[0].sym.kind, SymbolRef::Kind::param);
  EXPECT_EQ(st_ret.operands[0].sym.index, 1u);  // params.size() + 0
}

TEST(Syntax, OperandForms) {
  std::string text = std::string(kHeader) + R"(
.global .align 4 .b8 buf[64];
.visible .entry k(.param .u64 .ptr .global .align 16 p, .param .align 8 .b8 s[24])
.maxntid 128, 2, 1
.maxnreg 64
{
  .reg .pred %p<3>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  .reg .v4 .f32 %v;
  .reg .f32 %f<4>;
  .pragma "nounroll";
  mov.u64 %rd1, buf+8;
  ld.global.u32 %r1, [buf+4];
  ld.global.u32 %r2, [%rd1+-4];
  ld.global.u32 %r3, [1024];
  setp.lt.and.s32 %p1|%p2, %r1, %r2, !%p0;
  @!%p1 mov.b32 %r4, %envreg3;
  mov.u32 %r5, %dynamic_smem_size;
  mov.u64 %rd2, %clock64;
  mov.u32 %r6, %laneid;
  mov.b64 {%r1, _}, %rd2;
  selp.b32 %r7, 1, 0, %p2;
  ld.global.v4.f32 {%f0, %f1, %f2, %f3}, [%rd1];
  ret;
}
)";
  Module m = parse_ok(text);
  const Function& f = func(m, "k");
  ASSERT_EQ(f.params.size(), 2u);
  EXPECT_EQ(f.params[0].ptr_space, Space::global);
  EXPECT_EQ(f.params[0].ptr_align, 16u);
  EXPECT_EQ(f.params[1].align, 8u);
  EXPECT_EQ(f.params[1].size_bytes(), 24u);
  EXPECT_EQ(f.maxntid[0], 128u);
  EXPECT_EQ(f.maxntid[1], 2u);
  EXPECT_EQ(f.maxnreg, 64u);
  EXPECT_EQ(f.pragmas, std::vector<std::string>{"nounroll"});
  EXPECT_EQ(f.registers[3 + 8 + 4].vec, 4);  // %v

  const auto& b = f.body;
  EXPECT_EQ(b[0].operands[1].kind, Operand::Kind::symbol);
  EXPECT_EQ(b[0].operands[1].sym.kind, SymbolRef::Kind::global);
  EXPECT_EQ(b[0].operands[1].offset, 8);
  EXPECT_EQ(b[1].operands[1].sym.kind, SymbolRef::Kind::global);
  EXPECT_EQ(b[1].operands[1].offset, 4);
  EXPECT_TRUE(b[2].operands[1].base_is_reg);
  EXPECT_EQ(b[2].operands[1].offset, -4);
  EXPECT_FALSE(b[3].operands[1].base_is_reg);
  EXPECT_EQ(b[3].operands[1].sym.kind, SymbolRef::Kind::none);
  EXPECT_EQ(b[3].operands[1].offset, 1024);
  const Instruction& setp = b[4];
  EXPECT_EQ(setp.cmp, Cmp::lt);
  EXPECT_EQ(setp.boolop, BoolOp::and_);
  EXPECT_TRUE(setp.dest_pair);
  ASSERT_EQ(setp.operands.size(), 5u);
  EXPECT_TRUE(setp.operands[4].negated);
  EXPECT_TRUE(b[5].guarded);
  EXPECT_TRUE(b[5].guard_negated);
  EXPECT_EQ(b[5].operands[1].special, SpecialReg::envreg);
  EXPECT_EQ(b[5].operands[1].component, 3);
  EXPECT_EQ(b[6].operands[1].special, SpecialReg::dynamic_smem_size);
  EXPECT_EQ(b[7].operands[1].special, SpecialReg::clock64);
  EXPECT_EQ(b[8].operands[1].special, SpecialReg::laneid);
  ASSERT_EQ(b[9].operands[0].elems.size(), 2u);
  EXPECT_EQ(b[9].operands[0].elems[1].kind, Operand::Kind::sink);
  EXPECT_EQ(b[11].vec, 4);
}

TEST(Syntax, TargetsDirectivesAndLinkage) {
  std::string text = R"(
// comment
/* block
   comment */
.version 9.0
.target sm_90a, debug
.address_size 64
.extern .global .align 4 .b32 ext_var;
.weak .global .u32 weak_var = 1;
.common .global .u32 common_var;
.global .texref my_tex;
.extern .func (.param .b32 r) proto_only(.param .b32 a);
.visible .func noret() .noreturn
{
  trap;
}
.entry clustered() .reqnctapercluster 2, 2, 1 .maxclusterrank 8 .explicitcluster
{
  ret;
}
.visible .entry reqd() .reqntid 64, 1, 1 .minnctapersm 4
{
  exit;
}
.global .align 4 .b32 ext_var = 7;
)";
  Module m = parse_ok(text);
  EXPECT_EQ(m.target, "sm_90a");
  EXPECT_EQ(m.arch, 90u);
  EXPECT_EQ(m.arch_suffix, 'a');
  EXPECT_EQ(m.target_options, std::vector<std::string>{"debug"});
  const Variable& ext = global(m, "ext_var");  // the definition replaces the declaration
  EXPECT_FALSE(ext.is_extern);
  ASSERT_EQ(ext.init.size(), 1u);
  EXPECT_EQ(ext.init[0].bits, 7u);
  EXPECT_TRUE(global(m, "weak_var").is_weak);
  EXPECT_TRUE(global(m, "common_var").is_common);
  EXPECT_EQ(global(m, "my_tex").space, Space::tex);
  EXPECT_FALSE(func(m, "proto_only").has_body);
  EXPECT_TRUE(func(m, "noret").noreturn);
  const Function& c = func(m, "clustered");
  EXPECT_EQ(c.reqnctapercluster[1], 2u);
  EXPECT_EQ(c.maxclusterrank, 8u);
  EXPECT_EQ(func(m, "reqd").reqntid[0], 64u);
  EXPECT_EQ(func(m, "reqd").minnctapersm, 4u);

  Module f = parse_ok(".version 8.8\n.target sm_120f\n.address_size 64\n");
  EXPECT_EQ(f.arch, 120u);
  EXPECT_EQ(f.arch_suffix, 'f');
}

TEST(Syntax, SectionsAndLocSkipped) {
  std::string text = std::string(kHeader) + R"(
.file 1 "/tmp/a.cu", 1700000000, 1234
.file 2 "b.h"
.visible .entry k()
{
  .loc 1 5 3, function_name $L__info_string0, inlined_at 1 4 2
  ret;
}
.section .debug_info
{
.b32 123
.b8 1, 2
$L__x:
.b64 $L__func_begin0
}
.section .debug_str
{
$L__info_string0:
.b8 95,0
}
)";
  Module m = parse_ok(text);
  ASSERT_EQ(m.files.size(), 3u);
  EXPECT_EQ(m.files[1], "/tmp/a.cu");
  EXPECT_EQ(m.files[2], "b.h");
  EXPECT_EQ(func(m, "k").body.size(), 1u);
}

TEST(Syntax, ModifiersDecoded) {
  std::string text = std::string(kHeader) + R"(
.visible .entry k(.param .u64 p)
{
  .reg .pred %p<4>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<4>;
  .reg .f32 %f<4>;
  .reg .b16 %h<4>;
  cvt.rn.f32.s32 %f1, %r1;
  cvt.rzi.ftz.sat.s32.f32 %r2, %f1;
  set.lt.u32.f32 %r3, %f1, %f2;
  setp.gtu.f32 %p1, %f1, %f2;
  min.NaN.f32 %f3, %f1, %f2;
  div.approx.ftz.f32 %f3, %f1, %f2;
  ld.acquire.gpu.global.v2.u32 {%r1, %r2}, [%rd1];
  st.release.sys.global.L2::cache_hint.u32 [%rd1], %r1, %rd2;
  red.relaxed.cta.shared::cta.add.u32 [%r1], 1;
  atom.acq_rel.cluster.global.cas.b64 %rd1, [%rd2], %rd1, %rd3;
  bar.red.popc.u32 %r4, 0, %p1;
  bar.arrive 1, 64;
  barrier.sync.aligned 0;
  membar.gl;
  fence.sc.cta;
  prmt.b32.f4e %r5, %r1, %r2, %r3;
  shf.l.wrap.b32 %r6, %r1, %r2, %r3;
  bfind.shiftamt.u32 %r7, %r1;
  testp.finite.f32 %p2, %f1;
  add.cc.u32 %r8, %r1, %r2;
  addc.u32 %r9, %r1, %r2;
  mul.hi.u32 %r8, %r1, %r2;
  mov.b32 %r1, {%h0, %h1};
  mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f0, %f1, %f2, %f3}, {%r1, %r2}, {%r3}, {%f0, %f1, %f2, %f3};
  vadd.s32.s32.s32.sat %r1, %r2, %r3, %r4;
  ret;
}
)";
  Module m = parse_ok(text);
  const auto& b = func(m, "k").body;
  EXPECT_EQ(b[0].types, (std::vector<Type>{Type::f32, Type::s32}));
  EXPECT_EQ(b[0].rounding, Rounding::rn);
  EXPECT_EQ(b[1].rounding, Rounding::rzi);
  EXPECT_TRUE(b[1].ftz);
  EXPECT_TRUE(b[1].sat);
  EXPECT_EQ(b[2].op, Opcode::set);
  EXPECT_EQ(b[2].types, (std::vector<Type>{Type::u32, Type::f32}));
  EXPECT_EQ(b[3].cmp, Cmp::gtu);
  EXPECT_TRUE(b[4].nan);
  EXPECT_TRUE(b[5].approx);
  EXPECT_EQ(b[6].sem, Semantics::acquire);
  EXPECT_EQ(b[6].scope, Scope::gpu);
  EXPECT_EQ(b[6].space, Space::global);
  EXPECT_EQ(b[6].vec, 2);
  EXPECT_EQ(b[7].sem, Semantics::release);
  EXPECT_EQ(b[7].scope, Scope::sys);
  EXPECT_EQ(b[7].extra, std::vector<std::string>{"L2::cache_hint"});
  EXPECT_EQ(b[8].op, Opcode::red);
  EXPECT_EQ(b[8].space, Space::shared);
  EXPECT_EQ(b[8].mode, Mode::add);
  EXPECT_EQ(b[9].mode, Mode::cas);
  EXPECT_EQ(b[9].scope, Scope::cluster);
  EXPECT_EQ(b[9].sem, Semantics::acq_rel);
  EXPECT_EQ(b[10].op, Opcode::bar_red);
  EXPECT_EQ(b[10].boolop, BoolOp::popc);
  EXPECT_EQ(b[11].op, Opcode::bar);
  EXPECT_EQ(b[11].mode, Mode::arrive);
  EXPECT_EQ(b[12].op, Opcode::barrier);
  EXPECT_TRUE(b[12].sync);
  EXPECT_TRUE(b[12].aligned);
  EXPECT_EQ(b[13].op, Opcode::membar);
  EXPECT_EQ(b[13].extra, std::vector<std::string>{"gl"});
  EXPECT_EQ(b[14].op, Opcode::fence);
  EXPECT_EQ(b[14].sem, Semantics::sc);
  EXPECT_EQ(b[14].scope, Scope::cta);
  EXPECT_EQ(b[15].mode, Mode::f4e);
  EXPECT_EQ(b[16].mode, Mode::l);
  EXPECT_TRUE(b[16].wrap);
  EXPECT_EQ(b[17].mode, Mode::shiftamt);
  EXPECT_EQ(b[18].mode, Mode::finite);
  EXPECT_TRUE(b[19].cc);
  EXPECT_EQ(b[20].op, Opcode::addc);
  EXPECT_TRUE(b[21].hi);
  EXPECT_EQ(b[22].operands[1].elems.size(), 2u);
  EXPECT_EQ(b[23].op, Opcode::mma);
  EXPECT_EQ(b[23].types, (std::vector<Type>{Type::f32, Type::f16, Type::f16, Type::f32}));
  EXPECT_EQ(b[23].extra, (std::vector<std::string>{"m16n8k8", "row", "col"}));
  EXPECT_EQ(b[24].op, Opcode::video);
  EXPECT_EQ(b[24].raw_opcode, "vadd.s32.s32.s32.sat");
}

TEST(Syntax, IndirectBranchesAndPrototypes) {
  std::string text = std::string(kHeader) + R"(
.func (.param .b32 r) f1(.param .b32 a) { ret; }
.visible .entry k(.param .u64 fp)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [fp];
  brx.idx %r1, $L_table;
$L_table: .branchtargets $L_a, $L_b;
$L_a:
  mov.b32 %r2, 1;
$L_b:
  {
  .param .b32 param0;
  .param .b32 retval0;
  proto: .callprototype (.param .b32 _) _ (.param .b32 _);
  call (retval0), %rd1, (param0), proto;
  }
  ret;
}
)";
  Module m = parse_ok(text);
  const Function& f = func(m, "k");
  ASSERT_EQ(f.target_lists.size(), 1u);
  const auto& tl = f.target_lists[0];
  EXPECT_EQ(f.labels[tl.label].name, "$L_table");
  ASSERT_EQ(tl.targets.size(), 2u);
  EXPECT_EQ(f.labels[tl.targets[0]].name, "$L_a");
  EXPECT_EQ(f.labels[tl.targets[1]].name, "$L_b");
  const Instruction& brx = insn(f, "brx.idx");
  EXPECT_EQ(brx.operands[1].sym.kind, SymbolRef::Kind::label);
  ASSERT_EQ(f.prototypes.size(), 1u);
  EXPECT_EQ(f.labels[f.prototypes[0].label].name, "proto");
  const Instruction& call = insn(f, "call");
  ASSERT_EQ(call.operands.size(), 4u);
  EXPECT_EQ(call.operands[3].sym.index, f.prototypes[0].label);
}

// ---- diagnostics ----------------------------------------------------------------------------

TEST(Diagnostics, ClearMessagesWithPositions) {
  std::string h = kHeader;  // 3 lines
  EXPECT_EQ(parse_error(h + ".visible .entry k()\n{\n  foo.u32 %r1;\n}\n"),
            "6:3: unknown opcode 'foo'");
  EXPECT_EQ(parse_error(h + ".visible .entry k()\n{\n  .reg .b32 %r<2>;\n  mov.u32 %r9, 1;\n}\n"),
            "7:11: undefined register %r9");
  EXPECT_EQ(parse_error(h + ".visible .entry k()\n{\n  bra.uni nowhere;\n}\n"),
            "6:11: undefined symbol 'nowhere'");
  EXPECT_EQ(parse_error(h + ".visible .entry k()\n{\n  ret\n}\n"), "7:1: expected ';', found '}'");
  EXPECT_EQ(parse_error(h + ".global .u32 x = 0x;\n"), "4:18: invalid number '0x'");
  EXPECT_EQ(parse_error(h + ".global .u32 x = 99999999999999999999;\n"),
            "4:18: invalid number '99999999999999999999'");
  EXPECT_EQ(parse_error(h + ".global .u8 x[2] = {1, 2, 3};\n"),
            "4:20: too many initializers for 'x'");
  EXPECT_EQ(parse_error(h + ".visible .entry k()\n{\n  ret;\n"), "5:1: missing '}'");
  EXPECT_EQ(parse_error(h + ".bogus 1;\n"), "4:1: unknown directive '.bogus'");
  EXPECT_EQ(parse_error(".version 9.0\n.target gfx90a\n"), "2:9: unknown target 'gfx90a'");
  EXPECT_EQ(parse_error(h + ".visible .entry k()\n{\n  .reg .b32 %r;\n  .reg .b32 %r;\n}\n"),
            "7:13: redeclaration of '%r'");
  EXPECT_EQ(parse_error(h + ".visible .entry k()\n{\nL:\nL:\n  ret;\n}\n"),
            "7:1: redefinition of label 'L'");
  EXPECT_EQ(parse_error(h + ".global .u32 x;\n.global .u32 x;\n"), "5:14: redefinition of 'x'");
  EXPECT_EQ(parse_error(h + ".visible .entry k()\n{\n  mov.u32 %r1, \"s\";\n}\n"),
            "6:11: undefined register %r1");
  EXPECT_EQ(parse_error(h + ".visible .entry k()\n{\n  .reg .b32 %r<9999999999>;\n}\n"),
            "6:16: register range too large");
  EXPECT_EQ(parse_error(h + ".global .u32 x = \"abc;\n"), "4:18: unterminated string");
  EXPECT_EQ(parse_error(h + "\x01"), "4:1: invalid character '\\x01'");
}

TEST(Diagnostics, NeverCrashOnTruncationsAndGarbage) {
  // Every prefix of a real module either parses or yields a diagnostic (no crash, no throw).
  std::string text = read_file(fs::path(CUDAMUX_PTX_DATA) / "funcs.compute_75.ptx");
  for (std::size_t n = 0; n < text.size(); n += 97) {
    std::vector<Diagnostic> d;
    auto m = parse(std::string_view(text).substr(0, n), d);
    EXPECT_TRUE(m.has_value() || !d.empty()) << n;
  }
  std::string deep = std::string(kHeader) + ".visible .entry k()\n" + std::string(100000, '{');
  std::vector<Diagnostic> d;
  EXPECT_FALSE(parse(deep, d).has_value());
  ASSERT_FALSE(d.empty());
  EXPECT_NE(d[0].message.find("nested too deeply"), std::string::npos);
}

TEST(Syntax, LabelsAreScopedPerBlock) {
  // CUTLASS-style inline asm inlined twice: the same labels and predicate in sibling blocks.
  std::string text = std::string(kHeader) + R"(
.visible .entry k(.param .u64 bar)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [bar];
  {
  .reg .pred P1;
  LAB_WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 P1, [%rd1], %r1;
  @P1 bra DONE;
  bra LAB_WAIT;
  DONE:
  }
  {
  .reg .pred P1;
  LAB_WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 P1, [%rd1], %r1;
  @P1 bra DONE;
  bra LAB_WAIT;
  DONE:
  }
  bra.uni END;
END:
  ret;
}
)";
  Module m = parse_ok(text);
  const Function& f = func(m, "k");
  ASSERT_EQ(f.labels.size(), 5u);
  // Names stay unique; each block's branches target its own labels.
  EXPECT_EQ(f.labels[0].name, "LAB_WAIT");
  EXPECT_EQ(f.labels[1].name, "DONE");
  EXPECT_NE(f.labels[2].name, "LAB_WAIT");
  EXPECT_NE(f.labels[3].name, "DONE");
  EXPECT_EQ(insn(f, "bra", 0).operands[0].sym.index, 1u);  // DONE
  EXPECT_EQ(insn(f, "bra", 1).operands[0].sym.index, 0u);  // LAB_WAIT
  EXPECT_EQ(insn(f, "bra", 2).operands[0].sym.index, 3u);  // the second DONE
  EXPECT_EQ(insn(f, "bra", 3).operands[0].sym.index, 2u);  // the second LAB_WAIT
  EXPECT_EQ(f.labels[2].instruction, 4u);
  EXPECT_EQ(f.labels[3].instruction, 7u);
  const Instruction& w = insn(f, "mbarrier.try_wait.parity.shared::cta.b64", 1);
  EXPECT_EQ(w.op, Opcode::mbarrier);
  EXPECT_EQ(w.mode, Mode::wait);
  EXPECT_EQ(w.space, Space::shared);
  EXPECT_NE(w.operands[0].reg,
            insn(f, "mbarrier.try_wait.parity.shared::cta.b64", 0).operands[0].reg);
  // Guard of the second block's branch: its own P1.
  const Instruction& g = f.body[5];
  EXPECT_TRUE(g.guarded);
  EXPECT_EQ(g.guard_reg, w.operands[0].reg);
  EXPECT_EQ(f.labels[insn(f, "bra.uni").operands[0].sym.index].name, "END");
  EXPECT_EQ(parse_error(std::string(kHeader) + ".func f(.reg .b32 %a) { ret; }\n"),
            "4:9: .reg parameters are not supported (use .param)");
}

namespace {

// Every index in a parsed module names something that exists (what back ends rely on).
void check_indices(const Module& m, const std::string& what) {
  auto sym_ok = [&](const Function& f, const SymbolRef& s) {
    switch (s.kind) {
      case SymbolRef::Kind::none:
        return true;
      case SymbolRef::Kind::global:
        return s.index < m.globals.size();
      case SymbolRef::Kind::local:
        return s.index < f.locals.size();
      case SymbolRef::Kind::param:
        return s.index < f.params.size() + f.returns.size();
      case SymbolRef::Kind::function:
        return s.index < m.functions.size();
      case SymbolRef::Kind::label:
        return s.index < f.labels.size();
    }
    return false;
  };
  std::function<void(const Function&, const Operand&)> check_op = [&](const Function& f,
                                                                      const Operand& o) {
    if (o.kind == Operand::Kind::reg || (o.kind == Operand::Kind::address && o.base_is_reg)) {
      EXPECT_LT(o.reg, f.registers.size()) << what << " " << f.name;
    }
    if (o.kind == Operand::Kind::symbol) {
      EXPECT_NE(o.sym.kind, SymbolRef::Kind::none) << what << " " << f.name;
    }
    EXPECT_TRUE(sym_ok(f, o.sym)) << what << " " << f.name;
    for (auto& e : o.elems) check_op(f, e);
  };
  for (auto& f : m.functions) {
    std::set<std::string> regs, labels;
    for (auto& r : f.registers)
      EXPECT_TRUE(regs.insert(r.name).second) << what << ": duplicate register " << r.name;
    for (auto& l : f.labels) {
      EXPECT_TRUE(labels.insert(l.name).second) << what << ": duplicate label " << l.name;
      EXPECT_LE(l.instruction, f.body.size());
    }
    for (auto& in : f.body) {
      if (in.guarded) {
        EXPECT_LT(in.guard_reg, f.registers.size());
      }
      for (auto& o : in.operands) check_op(f, o);
    }
  }
}

}  // namespace

TEST(Fixtures, IndicesValid) {
  for (auto& e : fs::directory_iterator(CUDAMUX_PTX_DATA))
    if (e.path().extension() == ".ptx")
      check_indices(fixture(e.path().filename().c_str()), e.path().filename());
  const char* env = std::getenv("CUDAMUX_PTX_CORPUS");
  fs::path dir = env ? env : "/tmp/ptxcorpus";
  if (!fs::is_directory(dir)) return;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".ptx")
      check_indices(parse_ok(read_file(e.path())), e.path().filename());
}

TEST(Syntax, EveryOpcodeIsRecognised) {
  // Each opcode by its PTX name (the video group by vadd), in a body of its own.
  for (unsigned i = 0; i <= static_cast<unsigned>(Opcode::video); ++i) {
    auto op = static_cast<Opcode>(i);
    std::string name = op == Opcode::video  ? "vadd"
                       : op == Opcode::call ? "call.uni k"
                                            : name_of(op);
    std::string text = std::string(kHeader) + ".visible .entry k()\n{\n  " + name + ";\n}\n";
    std::vector<Diagnostic> d;
    auto m = parse(text, d);
    ASSERT_TRUE(m.has_value()) << name << ": " << first_diag(d);
    ASSERT_EQ(m->functions[0].body.size(), 1u);
    EXPECT_EQ(m->functions[0].body[0].op, op) << name;
  }
}

TEST(Fixtures, RdcManagedWmmaAndMemoryVariants) {
  Module m = fixture("misc.compute_90a.ptx");
  EXPECT_EQ(m.arch, 90u);
  EXPECT_EQ(m.arch_suffix, 'a');
  const Variable& managed = global(m, "managed_x");
  EXPECT_TRUE(managed.is_managed);
  EXPECT_TRUE(managed.is_visible);
  ASSERT_EQ(managed.init.size(), 1u);
  EXPECT_EQ(managed.init[0].bits, 3u);
  EXPECT_TRUE(global(m, "ext_sym").is_extern);
  const Function& rdc = func(m, "_Z10dev_fn_rdci");
  EXPECT_TRUE(rdc.is_extern);
  EXPECT_FALSE(rdc.has_body);

  const Function& at = func(m, "misc_atomics");
  const Instruction& al = insn(at, "alloca.u64");
  EXPECT_EQ(al.op, Opcode::alloca);
  EXPECT_EQ(al.operands.size(), 3u);
  EXPECT_EQ(insn(at, "nanosleep.u32").op, Opcode::nanosleep);
  EXPECT_EQ(insn(at, "trap").op, Opcode::trap);

  const Function& wm = func(m, "misc_wmma");
  const Instruction& la = insn(wm, "wmma.load.a.sync.aligned.row.m16n16k16.global.f16");
  EXPECT_EQ(la.op, Opcode::wmma_load);
  EXPECT_EQ(la.space, Space::global);
  EXPECT_TRUE(la.sync);
  EXPECT_TRUE(la.aligned);
  EXPECT_EQ(la.extra, (std::vector<std::string>{"a", "row", "m16n16k16"}));
  EXPECT_EQ(la.operands[0].elems.size(), 8u);
  const Instruction& mma = insn(wm, "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32");
  EXPECT_EQ(mma.op, Opcode::wmma_mma);
  EXPECT_EQ(mma.types, (std::vector<Type>{Type::f32, Type::f32}));
  EXPECT_EQ(mma.operands.size(), 4u);
  EXPECT_EQ(insn(wm, "wmma.store.d.sync.aligned.row.m16n16k16.global.f32").op, Opcode::wmma_store);

  const Function& mem = func(m, "misc_memory");
  EXPECT_EQ(insn(mem, "ld.global.cs.f32").extra, std::vector<std::string>{"cs"});
  EXPECT_EQ(insn(mem, "st.global.wt.f32").extra, std::vector<std::string>{"wt"});
  const Instruction& v2 = insn(mem, "atom.global.add.v2.f32");
  EXPECT_EQ(v2.vec, 2);
  EXPECT_EQ(v2.mode, Mode::add);
  const Instruction& fp8 = insn(mem, "cvt.rn.satfinite.e4m3x2.f32");
  EXPECT_EQ(fp8.types, (std::vector<Type>{Type::e4m3x2, Type::f32}));
  EXPECT_EQ(fp8.extra, std::vector<std::string>{"satfinite"});
  const Instruction& cube = insn(mem, "tex.cube.v4.f32.f32");
  EXPECT_EQ(cube.operands[1].elems[1].elems.size(), 4u);
  const Instruction& suld = insn(mem, "suld.b.2d.b32.trap");
  EXPECT_EQ(suld.op, Opcode::suld);
  EXPECT_EQ(suld.operands[0].elems.size(), 1u);
  EXPECT_EQ(insn(mem, "mov.u32", 0).operands.size(), 2u);
  bool cluster_id = false;
  for (auto& in : mem.body)
    for (auto& o : in.operands)
      cluster_id |= o.kind == Operand::Kind::special && o.special == SpecialReg::clusterid;
  EXPECT_TRUE(cluster_id);
}

TEST(Syntax, AttributesAndReservedSharedOffsets) {
  std::string text = std::string(kHeader) + R"(
.global .attribute(.unified(0x1234, 0x5678)) .align 8 .u64 uni;
.visible .entry k()
{
  .reg .b32 %r<3>;
  mov.u32 %r1, %reserved_smem_offset_1;
  mov.u32 %r2, %reserved_smem_offset_begin;
  ret;
}
)";
  Module m = parse_ok(text);
  EXPECT_FALSE(global(m, "uni").is_managed);
  EXPECT_EQ(global(m, "uni").align, 8u);
  const Function& f = func(m, "k");
  EXPECT_EQ(f.body[0].operands[1].special, SpecialReg::reserved_smem_offset_2);
  EXPECT_EQ(f.body[0].operands[1].component, 1);
  EXPECT_EQ(f.body[1].operands[1].special, SpecialReg::reserved_smem_offset_begin);
}

TEST(Diagnostics, MoreRejections) {
  std::string h = kHeader;
  std::string k = ".visible .entry k()\n{\n  .reg .pred %p;\n  .reg .b32 %r;\n";
  EXPECT_EQ(parse_error(h + k + "  @%r bra L;\nL:\n  ret;\n}\n"),
            "8:4: guard %r is not a predicate register");
  EXPECT_EQ(parse_error(h + k + "  setp.eq.and.u32 %p, %r, 1, !%r;\n}\n"),
            "8:31: '!' applies to a predicate register");
  EXPECT_EQ(parse_error(h + k + "  mov.u32 %r, %tid.w;\n}\n"), "8:15: undefined register %tid.w");
  EXPECT_EQ(parse_error(h + k + "T: .branchtargets nowhere;\n  ret;\n}\n"),
            "8:19: undefined label 'nowhere'");
  EXPECT_EQ(parse_error(h + ".global .align 3 .u32 x;\n"),
            "4:16: alignment must be a power of two");
  EXPECT_EQ(parse_error(".version 9\n"), "1:10: invalid .version '9'");
  EXPECT_EQ(parse_error(h + ".func f() { ret; }\n.func f() { ret; }\n"),
            "5:7: redefinition of 'f'");
  EXPECT_EQ(parse_error(h + ".global .u32 f;\n.func f() { ret; }\n"), "5:7: redefinition of 'f'");
  EXPECT_EQ(parse_error(h + ".global .u32 x = y;\n"), "4:18: undefined symbol 'y'");
  EXPECT_EQ(parse_error(h + ".visible .entry k()\n{\n  ld.global.u32\n"),
            "7:1: expected ';', found end of input");
  EXPECT_EQ(parse_error(h + "/* never closed\n"), "4:1: unterminated comment");
  // Trailing NUL padding (fat binary images) is not text; an embedded NUL is.
  EXPECT_EQ(parse_error(h + std::string(3, '\0')), "");
  EXPECT_EQ(parse_error(h + std::string(1, '\0') + ".global .u32 x;\n"),
            "4:1: invalid character '\\x00'");
  // A module without functions or a .target is still a module (nothing to reject).
  EXPECT_EQ(parse_error(""), "");
}

TEST(Types, SizesNamesAndClasses) {
  EXPECT_EQ(size_of(Type::none), 0u);
  EXPECT_EQ(size_of(Type::pred), 1u);
  EXPECT_EQ(size_of(Type::b1), 1u);
  EXPECT_EQ(size_of(Type::u16), 2u);
  EXPECT_EQ(size_of(Type::bf16), 2u);
  EXPECT_EQ(size_of(Type::e4m3x2), 2u);
  EXPECT_EQ(size_of(Type::f16x2), 4u);
  EXPECT_EQ(size_of(Type::tf32), 4u);
  EXPECT_EQ(size_of(Type::s64), 8u);
  EXPECT_EQ(size_of(Type::b128), 16u);
  EXPECT_TRUE(is_float(Type::f16));
  EXPECT_TRUE(is_float(Type::e5m2));
  EXPECT_TRUE(is_float(Type::f64));
  EXPECT_FALSE(is_float(Type::b32));
  EXPECT_FALSE(is_float(Type::u64));
  EXPECT_TRUE(is_signed(Type::s8));
  EXPECT_FALSE(is_signed(Type::u32));
  EXPECT_FALSE(is_signed(Type::f32));
  // Names round-trip through the parser: every type as a .reg type.
  for (unsigned i = 1; i <= static_cast<unsigned>(Type::b1); ++i) {
    auto t = static_cast<Type>(i);
    std::string text =
        std::string(kHeader) + ".visible .entry k()\n{\n  .reg ." + name_of(t) + " %x;\n}\n";
    Module m = parse_ok(text);
    ASSERT_EQ(m.functions.size(), 1u);
    ASSERT_EQ(m.functions[0].registers.size(), 1u);
    EXPECT_EQ(m.functions[0].registers[0].type, t) << name_of(t);
  }
  EXPECT_STREQ(name_of(Space::shared_cluster), "shared::cluster");
  EXPECT_STREQ(name_of(Space::const_), "const");
  EXPECT_STREQ(name_of(Opcode::cp_async_wait_group), "cp.async.wait_group");
  EXPECT_STREQ(name_of(Opcode::and_), "and");
  Variable v;
  v.type = Type::f32;
  v.vec = 4;
  v.dims = {3, 2};
  EXPECT_EQ(v.size_bytes(), 96u);
  v.dims = {~std::uint64_t{0}, 4};  // saturates instead of wrapping
  EXPECT_EQ(v.size_bytes(), ~std::uint64_t{0});
  Param p;
  p.type = Type::b8;
  p.dims = {24};
  EXPECT_EQ(p.size_bytes(), 24u);
}

TEST(Fixtures, PointersInsideInitialisedStructs) {
  Module m = fixture("packed.compute_75.ptx");
  const Variable& s = global(m, "s");
  EXPECT_EQ(s.type, Type::u64);
  ASSERT_EQ(s.init.size(), 3u);
  EXPECT_EQ(s.init[0].bits, 7u);
  EXPECT_TRUE(s.init[1].is_symbol);
  EXPECT_EQ(s.init[1].offset, 4);
  EXPECT_EQ(s.init[1].mask, 0u);
  EXPECT_EQ(s.init[2].bits, 1075838976u);  // 2.5f, then padding
  // A pointer at offset 1 of a packed struct: eight byte-masks of the same address.
  const Variable& q = global(m, "q");
  EXPECT_EQ(q.type, Type::u8);
  EXPECT_EQ(q.size_bytes(), 9u);
  ASSERT_EQ(q.init.size(), 9u);
  EXPECT_FALSE(q.init[0].is_symbol);
  EXPECT_EQ(q.init[0].bits, 120u);
  for (unsigned k = 1; k < 9; ++k) {
    EXPECT_TRUE(q.init[k].is_symbol);
    EXPECT_TRUE(q.init[k].generic);
    EXPECT_EQ(q.init[k].offset, 4);
    EXPECT_EQ(q.init[k].mask, std::uint64_t{0xFF} << (8 * (k - 1)));
    EXPECT_EQ(m.globals[q.init[k].sym.index].name, "tbl");
  }
}

TEST(Fixtures, VirtualFunctionsAndHeap) {
  Module m = fixture("virtual.compute_75.ptx");
  const Variable& vt = global(m, "_ZTV3Der");
  ASSERT_EQ(vt.init.size(), 5u);
  EXPECT_FALSE(vt.init[0].is_symbol);
  ASSERT_EQ(vt.init[2].sym.kind, SymbolRef::Kind::function);
  const Function& f = m.functions[vt.init[2].sym.index];
  EXPECT_EQ(f.name, "_ZN3Der1fEi");
  EXPECT_TRUE(f.has_body);  // the declaration and the later definition are one function
  int named = 0;
  for (auto& fn : m.functions) named += fn.name == "_ZN3Der1fEi";
  EXPECT_EQ(named, 1);
  EXPECT_FALSE(func(m, "malloc").has_body);
  EXPECT_EQ(func(m, "malloc").returns.size(), 1u);
  const Function& k = func(m, "virt");
  EXPECT_EQ(insn(k, "membar.gl").op, Opcode::membar);
  EXPECT_EQ(insn(k, "membar.sys").op, Opcode::membar);
  const Instruction& trap = insn(k, "trap");
  EXPECT_TRUE(trap.guarded);
  EXPECT_EQ(k.registers[trap.guard_reg].type, Type::pred);
  bool indirect = false;
  for (auto& in : k.body)
    indirect |= in.op == Opcode::call && in.operands[1].kind == Operand::Kind::reg;
  EXPECT_TRUE(indirect);  // the virtual call
}
