// The PTX front end's typed IR (issue 15): what the parser produces from PTX text (nvcc 12.x /
// 13.0, NVRTC; ISA 7.x-9.0) and what the passes (cfg.hpp) and back ends (the mock's C++
// emitter, later the hip backend) consume. Names are resolved: an operand names a register,
// variable, parameter, function or label by index, never by text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cudamux::ptx {

struct SourceLoc {
  std::uint32_t line = 0;    // 1-based; 0: unknown
  std::uint32_t column = 0;  // 1-based
};

struct Diagnostic {
  SourceLoc loc;
  std::string message;
};

// ---- types ------------------------------------------------------------------------------
enum class Type : std::uint8_t {
  none,
  pred,
  b8, b16, b32, b64, b128,
  u8, u16, u32, u64,
  s8, s16, s32, s64,
  f16, f16x2, bf16, bf16x2, tf32, f32, f64,
  e4m3, e5m2, e4m3x2, e5m2x2,  // fp8 (cvt, mma)
  e2m1x2, e2m3x2, e3m2x2, ue8m0x2,  // sm_100 narrow formats (cvt only)
  s4, u4, b1,                      // mma operand types
};
// Size in bytes (pred: 1, sub-byte types: 1, none: 0).
unsigned size_of(Type t) noexcept;
bool is_float(Type t) noexcept;   // f16 .. f64 and the fp8 types
bool is_signed(Type t) noexcept;  // s8 .. s64
const char* name_of(Type t) noexcept;  // "u32" (no dot)

enum class Space : std::uint8_t {
  generic,  // no state space given (ld/st/atom through generic addresses)
  reg,
  sreg,
  const_,
  global,
  local,
  param,  // kernel or function parameters, and call-sequence .param variables
  shared,  // .shared and .shared::cta
  shared_cluster,
  tex,
};
const char* name_of(Space s) noexcept;

// ---- instructions ------------------------------------------------------------------------
// Every opcode of the PTX ISA up to 9.0 that the parser recognises. The parser accepts all of
// them; which ones a back end executes is the back end's business (it reports the others).
enum class Opcode : std::uint16_t {
  // integer and float arithmetic
  add, sub, mul, mad, mul24, mad24, sad, div, rem, abs, neg, min, max, popc, clz, bfind, fns,
  brev, bmsk, bfe, bfi, dp4a, dp2a, addc, subc, madc, fma, rcp, sqrt, rsqrt, sin, cos, lg2, ex2, tanh,
  copysign, testp,
  // comparison and selection
  set, setp, selp, slct,
  // logic and shift
  and_, or_, xor_, not_, cnot, lop3, shf, shl, shr, prmt,
  // data movement and conversion
  mov, shfl, ld, ldu, st, prefetch, prefetchu, isspacep, cvta, cvt, cvt_pack, mapa, getctarank,
  cp_async, cp_async_commit_group, cp_async_wait_group, cp_async_wait_all, cp_async_bulk,
  cp_reduce_async_bulk, stmatrix, ldmatrix, movmatrix, multimem,
  // textures and surfaces
  tex, tld4, txq, suld, sust, sured, suq, istypep,
  // control flow
  bra, brx_idx, call, ret, exit,
  // synchronisation and communication
  bar, barrier, bar_warp_sync, bar_red, membar, fence, atom, red, vote, match, activemask, redux,
  mbarrier, griddepcontrol, elect, nanosleep, setmaxnreg,
  // warp matrix (tensor cores)
  wmma_load, wmma_store, wmma_mma, mma, mma_sp, wgmma,
  // miscellaneous
  trap, brkpt, pmevent, alloca, stacksave, stackrestore,
  // video instructions (vadd ...) are parsed as this, with the name in Instruction::raw_opcode
  video,
};
const char* name_of(Opcode op) noexcept;

enum class Rounding : std::uint8_t { none, rn, rz, rm, rp, rna, rs, rni, rzi, rmi, rpi };

enum class Cmp : std::uint8_t {
  none, eq, ne, lt, le, gt, ge, lo, ls, hi, hs,  // hi/lo/ls/hs: unsigned integer comparisons
  equ, neu, ltu, leu, gtu, geu, num, nan,        // float, unordered variants
};

// The boolean combination of setp/set (.and/.or/.xor), and bar.red / vote's reduction.
enum class BoolOp : std::uint8_t { none, and_, or_, xor_, popc };

// Sub-operation of atom/red/redux/multimem/cp.reduce, and the mode of shfl/vote/match/prmt/
// bfind/testp/mbarrier and friends: one field because an instruction has at most one.
enum class Mode : std::uint8_t {
  none,
  // atom / red / redux
  add, min, max, inc, dec, and_, or_, xor_, exch, cas,
  // shfl
  up, down, bfly, idx,
  // vote / match
  all, any, uni, ballot,
  // prmt
  f4e, b4e, rc8, ecl, ecr, rc16,
  // bfind
  shiftamt,
  // testp
  finite, infinite, number, notanumber, normal, subnormal,
  // mov / shf
  l, r,
  // shf.wrap / shf.clamp are Instruction::wrap/clamp; bar: arrive/sync/red are opcodes
  arrive,  // bar.arrive / barrier.arrive, mbarrier.arrive
  wait,    // mbarrier.test_wait / try_wait
};

enum class Semantics : std::uint8_t { none, relaxed, acquire, release, acq_rel, sc, weak, volatile_, mmio };
enum class Scope : std::uint8_t { none, cta, cluster, gpu, sys };

// Special registers (%tid.x is {tid, 0}; .y 1, .z 2).
enum class SpecialReg : std::uint8_t {
  tid, ntid, laneid, warpid, nwarpid, ctaid, nctaid, smid, nsmid, gridid,
  lanemask_eq, lanemask_le, lanemask_lt, lanemask_ge, lanemask_gt,
  clock, clock_hi, clock64, globaltimer, globaltimer_lo, globaltimer_hi,
  pm, pm64,  // %pm0..7 (index in component)
  envreg,    // %envreg0..31 (index in component)
  dynamic_smem_size, total_smem_size, aggr_smem_size,
  clusterid, nclusterid, cluster_ctaid, cluster_nctaid, cluster_ctarank, cluster_nctarank,
  is_explicit_cluster, reserved_smem_offset_begin, reserved_smem_offset_end,
  reserved_smem_offset_cap, reserved_smem_offset_2, current_graph_exec,
};

// What a symbol operand names (resolved by the parser; index into the named table).
struct SymbolRef {
  enum class Kind : std::uint8_t { none, global, local, param, function, label } kind = Kind::none;
  // global: Module::globals; local: Function::locals; param: Function::params (inputs, then
  // returns: index >= params.size() names returns[index - params.size()]); function:
  // Module::functions; label: Function::labels.
  std::uint32_t index = 0;
};

struct Operand {
  enum class Kind : std::uint8_t {
    none,
    reg,        // reg (negated: `!%p` as a predicate source)
    special,    // special + component
    imm_int,    // bits (sign-extended to 64 bits for negative literals)
    imm_float,  // bits: f32 bits when is_f32 (0f... or a decimal in an f32 context), else f64 bits
    symbol,     // sym: a variable's address, a function, a label; plus offset (`sym+4`)
    address,    // [base + offset]: base is a reg, a symbol or nothing (absolute [1024])
    vector,     // {a, b, c, d}: elems (registers, immediates or sinks)
    sink,       // `_`
  } kind = Kind::none;
  std::uint32_t reg = 0;  // register index into Function::registers (reg, address base)
  bool negated = false;   // `!%p`
  bool base_is_reg = false;  // address: base is `reg` (else `sym`, or absolute when sym.kind none)
  SpecialReg special = SpecialReg::tid;
  std::uint8_t component = 0;
  bool is_f32 = false;
  std::uint64_t bits = 0;
  SymbolRef sym;
  std::int64_t offset = 0;  // address and symbol+offset
  std::vector<Operand> elems;
  SourceLoc loc;
};

struct Instruction {
  Opcode op = Opcode::mov;
  std::string raw_opcode;  // the text as written, e.g. "ld.global.nc.v4.f32" (diagnostics)
  // Guard predicate: `@%p` / `@!%p` (guard_reg indexes Function::registers).
  bool guarded = false;
  bool guard_negated = false;
  std::uint32_t guard_reg = 0;
  // Type suffixes in the order written: cvt.rn.f32.s32 -> {f32, s32}; setp.lt.s32 -> {s32};
  // set.lt.u32.f32 -> {u32, f32}; mul.wide.s32 -> {s32}; mma: the operand types in order.
  std::vector<Type> types;
  Space space = Space::generic;  // ld/st/atom/red/cvta/isspacep/prefetch/cp.async ...
  bool to = false;               // cvta.to.global
  Rounding rounding = Rounding::none;
  Cmp cmp = Cmp::none;
  BoolOp boolop = BoolOp::none;
  Mode mode = Mode::none;
  Semantics sem = Semantics::none;
  Scope scope = Scope::none;
  std::uint8_t vec = 1;  // .v2 / .v4 / .v8
  bool ftz = false, sat = false, approx = false, full = false, relu = false, nan = false,
       xorsign = false, abs = false, uni = false, wide = false, hi = false, lo = false,
       cc = false,         // .cc (carry out) on add/sub/mad
       sync = false,       // shfl.sync, vote.sync, bar.sync / barrier.sync ...
       aligned = false,    // barrier.sync.aligned
       wrap = false, clamp = false,  // shf
       noftz = false, oob = false, non_coherent = false;  // .noftz, .oob, ld.global.nc
  // Remaining modifiers as written, without the dot, in order: cache operators (ca, cg,
  // L2::128B ...), geometry of tex/suld (1d, 2d, a2d, cube ...), mma shapes and layouts
  // (m16n8k16, row, col), barrier kinds, etc. Back ends interpret what they need.
  std::vector<std::string> extra;
  // Operands in the order written. call: [returns (vector, maybe empty), target (symbol or
  // reg), arguments (vector), prototype (symbol, optional)]. tex: [dst, [tex, coords]] where
  // the address operand's elems hold the texture and the coordinate vector.
  std::vector<Operand> operands;
  SourceLoc loc;
  // The first operand was written `a|b` (setp, shfl, match, elect ...): operands 0 and 1 are
  // both destinations.
  bool dest_pair = false;
};

// ---- declarations ------------------------------------------------------------------------
struct Initializer {
  // One scalar element of an initializer list, in declaration order (nested braces
  // flattened). A symbol element is an address: `foo`, `generic(foo)`, `foo+8`.
  bool is_symbol = false;
  std::uint64_t bits = 0;  // value in the variable's element type (floats as their bits)
  SymbolRef sym;
  std::int64_t offset = 0;
  bool generic = false;
  // `0xFF00(generic(sym)+4)` (nvcc's form for a pointer at an unaligned offset of a .u8 array):
  // the element is (address & mask) >> (index of the mask's lowest set bit). 0: no mask.
  std::uint64_t mask = 0;
};

struct Variable {
  std::string name;
  Space space = Space::global;
  Type type = Type::b8;
  std::uint8_t vec = 1;  // .v2/.v4 element vectors
  std::uint32_t align = 0;  // 0: natural alignment of the element
  std::vector<std::uint64_t> dims;  // array dimensions; a 0 first dimension is `[]` (extern/init-sized)
  bool is_extern = false, is_visible = false, is_weak = false, is_common = false;
  bool is_managed = false;  // `.attribute(.managed)`: a __managed__ variable
  std::vector<Initializer> init;
  SourceLoc loc;
  std::uint64_t size_bytes() const noexcept;  // element size * vec * product of dims
};

struct Param {
  std::string name;
  Type type = Type::b32;
  std::uint32_t align = 0;
  std::vector<std::uint64_t> dims;  // `.param .align 8 .b8 p[24]` -> {24}
  // `.ptr .global .align 16`: kernel pointer parameter attributes (hints only).
  Space ptr_space = Space::generic;
  std::uint32_t ptr_align = 0;
  SourceLoc loc;
  std::uint64_t size_bytes() const noexcept;
};

struct Register {
  std::string name;  // as written: "%r12", "%p3", "%SP"
  Type type = Type::b32;
  std::uint8_t vec = 1;  // `.reg .v4 .f32 %v;` (rare)
};

struct Label {
  std::string name;
  std::uint32_t instruction = 0;  // index of the instruction the label precedes (== size: end)
};

struct Function {
  std::string name;
  bool is_entry = false;  // .entry (kernel) vs .func
  bool is_extern = false, is_visible = false, is_weak = false;
  bool has_body = false;  // false: a declaration (`.extern .func vprintf ...;`)
  std::vector<Param> params;
  std::vector<Param> returns;  // .func (.param .b32 retval0) f(...)
  // Performance directives (0: absent).
  std::uint32_t maxntid[3] = {0, 0, 0}, reqntid[3] = {0, 0, 0};
  std::uint32_t minnctapersm = 0, maxnreg = 0, maxclusterrank = 0;
  std::uint32_t reqnctapercluster[3] = {0, 0, 0};
  bool noreturn = false;
  std::vector<std::string> pragmas;  // .pragma "nounroll";
  std::vector<Register> registers;   // every register, %r<10> expanded, nested scopes renamed
  std::vector<Variable> locals;      // .local/.shared/.param variables declared in the body
  std::vector<Label> labels;         // also .callprototype labels (prototype field below)
  std::vector<Instruction> body;
  // `prototype_0 : .callprototype (.param .b32 _) _ (.param .b64 _);`: label index -> signature.
  struct Prototype {
    std::uint32_t label = 0;
    std::vector<Param> params, returns;
  };
  std::vector<Prototype> prototypes;
  SourceLoc loc;
  // `ts: .branchtargets L1, L2;` / `.calltargets f, g;` (brx.idx / indirect call target lists):
  // label index of the list -> its targets (label indices for .branchtargets, function
  // indices for .calltargets).
  struct TargetList {
    std::uint32_t label = 0;
    bool calls = false;
    std::vector<std::uint32_t> targets;
  };
  std::vector<TargetList> target_lists;
};

struct Module {
  unsigned version_major = 0, version_minor = 0;  // .version 8.5
  std::string target;      // "sm_75" as written (first target)
  unsigned arch = 0;       // 75; 90 for sm_90a
  char arch_suffix = 0;    // 'a', 'f' or 0
  std::vector<std::string> target_options;  // texmode_independent, debug, map_f64_to_f32
  unsigned address_size = 64;
  std::vector<Variable> globals;  // module scope: .global .const .shared .local .tex ...
  std::vector<Function> functions;
  std::vector<std::string> files;  // .file directives (index = file number)
};

// Parses PTX text. On failure returns nullopt and at least one diagnostic (line and column of
// the first problem); never throws for bad input, never crashes.
std::optional<Module> parse(std::string_view text, std::vector<Diagnostic>& diagnostics);

}  // namespace cudamux::ptx
