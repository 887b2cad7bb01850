// PTX front end fuzzer (issue 15). The input is PTX text, as a program hands it to
// cuModuleLoadData or NVRTC: parse() must accept it or give a diagnostic with a position,
// never crash, hang, leak or throw; every index in an accepted module must name something
// that exists, and the passes (CFG, liveness, reach) must cope with whatever parse()
// accepted. Seeds: tests/fuzz/corpus-ptx (nvcc 13.0 output from tests/ptx/data).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "cudamux/ptx/cfg.hpp"
#include "cudamux/ptx/ir.hpp"
#include "cudamux/ptx/link.hpp"

namespace px = cudamux::ptx;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void check_sym(const px::Module& m, const px::Function& f, const px::SymbolRef& s) {
  using K = px::SymbolRef::Kind;
  switch (s.kind) {
    case K::none:
      break;
    case K::global:
      check(s.index < m.globals.size());
      break;
    case K::local:
      check(s.index < f.locals.size());
      break;
    case K::param:
      check(s.index < f.params.size() + f.returns.size());
      break;
    case K::function:
      check(s.index < m.functions.size());
      break;
    case K::label:
      check(s.index < f.labels.size());
      break;
  }
}

void check_operand(const px::Module& m, const px::Function& f, const px::Operand& o) {
  using K = px::Operand::Kind;
  if (o.kind == K::reg || (o.kind == K::address && o.base_is_reg))
    check(o.reg < f.registers.size());
  if (o.kind == K::symbol || o.kind == K::address) check_sym(m, f, o.sym);
  if (o.kind == K::symbol) check(o.sym.kind != px::SymbolRef::Kind::none);
  for (const auto& e : o.elems) check_operand(m, f, e);
}

void check_module(const px::Module& m) {
  for (const auto& v : m.globals)
    for (const auto& in : v.init)
      if (in.is_symbol) {
        check(in.sym.kind == px::SymbolRef::Kind::global ||
              in.sym.kind == px::SymbolRef::Kind::function);
        check_sym(m, px::Function{}, in.sym);
      }
  for (const auto& f : m.functions) {
    for (const auto& l : f.labels) check(l.instruction <= f.body.size());
    for (const auto& p : f.prototypes) check(p.label < f.labels.size());
    for (const auto& t : f.target_lists) {
      check(t.label < f.labels.size());
      for (auto x : t.targets) check(x < (t.calls ? m.functions.size() : f.labels.size()));
    }
    for (const auto& in : f.body) {
      if (in.guarded) check(in.guard_reg < f.registers.size());
      for (const auto& o : in.operands) check_operand(m, f, o);
      std::vector<std::uint32_t> uses, defs;
      px::uses_and_defs(in, uses, defs);
      for (auto r : uses) check(r < f.registers.size());
      for (auto r : defs) check(r < f.registers.size());
    }
    if (!f.has_body) continue;
    const px::Cfg cfg = px::build_cfg(f);
    check(!cfg.blocks.empty() && cfg.block_of.size() == f.body.size());
    for (const auto& b : cfg.blocks) {
      check(b.first <= b.end && b.end <= f.body.size());
      for (auto s : b.succs) check(s < cfg.blocks.size());
      for (auto p : b.preds) check(p < cfg.blocks.size());
    }
    // Liveness is quadratic in registers x blocks: bound the work on huge generated inputs.
    if (f.registers.size() * cfg.blocks.size() <= (1u << 20)) {
      const px::Liveness lv = px::compute_liveness(f, cfg);
      check(lv.live_in.size() == cfg.blocks.size() && lv.live_out.size() == cfg.blocks.size());
    }
  }
  check(px::analyse_reach(m).size() == m.functions.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<px::Diagnostic> diags;
  const auto m = px::parse(text, diags);
  if (!m) {
    check(!diags.empty() && !diags[0].message.empty());
    return 0;
  }
  check(diags.empty());
  check_module(*m);
  // The linker (relocatable device code) over what parse() accepted: alone, and with itself
  // (every strong symbol defined twice). It fails with a diagnostic or gives a module whose
  // indices all name something.
  for (int copies = 1; copies <= 2; ++copies) {
    std::vector<px::Module> inputs(static_cast<std::size_t>(copies), *m);
    const px::LinkOutcome linked = px::link(std::move(inputs));
    if (!linked.module) {
      check(!linked.diagnostics.empty());
      continue;
    }
    check_module(*linked.module);
  }
  return 0;
}
