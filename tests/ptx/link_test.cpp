// The PTX linker (ptx/link.hpp) on hand-written modules: which definition each reference
// reaches, what is renamed, what fails the link.
#include "cudamux/ptx/link.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cudamux/ptx/ir.hpp"

namespace cudamux::ptx {
namespace {

Module parsed(const std::string& body) {
  std::vector<Diagnostic> d;
  auto m = parse(".version 8.5\n.target sm_75\n.address_size 64\n" + body, d);
  EXPECT_TRUE(m.has_value()) << (d.empty() ? "" : d[0].message) << "\n" << body;
  return m ? *m : Module{};
}

constexpr char kScale[] = R"(
.extern .func (.param .b32 func_retval0) offset_of(.param .b32 p0);
.visible .global .align 4 .u32 factor = 3;
.global .align 1 .b8 $str[2] = {65, 0};
.visible .func (.param .b32 func_retval0) scaled(.param .b32 v)
{
  .reg .b32 %r<6>;
  .reg .b64 %rd<2>;
  ld.param.u32 %r1, [v];
  ld.global.u32 %r2, [factor];
  mov.u64 %rd1, $str;
  mul.lo.s32 %r3, %r1, %r2;
  {
  .param .b32 a0;
  st.param.b32 [a0], %r1;
  .param .b32 rv;
  call.uni (rv), offset_of, (a0);
  ld.param.b32 %r4, [rv];
  }
  add.s32 %r5, %r3, %r4;
  st.param.b32 [func_retval0], %r5;
  ret;
}
)";
constexpr char kApply[] = R"(
.extern .func (.param .b32 func_retval0) scaled(.param .b32 v);
.extern .global .align 4 .u32 factor;
.global .align 1 .b8 $str[2] = {66, 0};
.visible .func (.param .b32 func_retval0) offset_of(.param .b32 i)
{
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [i];
  add.s32 %r2, %r1, 1000;
  st.param.b32 [func_retval0], %r2;
  ret;
}
.visible .entry apply(.param .u64 p)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  mov.u64 %rd4, $str;
  {
  .param .b32 a0;
  st.param.b32 [a0], %r1;
  .param .b32 rv;
  call.uni (rv), scaled, (a0);
  ld.param.b32 %r2, [rv];
  }
  ld.global.u32 %r3, [factor];
  add.s32 %r2, %r2, %r3;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd3, %rd2, %rd3;
  st.global.u32 [%rd3], %r2;
  ret;
}
)";

// The symbols an instruction's operands name (recursively), as (kind, index) pairs.
void symbols_of(const Operand& o, std::vector<SymbolRef>& out) {
  if (o.sym.kind != SymbolRef::Kind::none) out.push_back(o.sym);
  for (const auto& e : o.elems) symbols_of(e, out);
}
std::vector<std::string> referenced(const Module& m, const Function& f, SymbolRef::Kind kind) {
  std::vector<SymbolRef> refs;
  for (const auto& ins : f.body)
    for (const auto& op : ins.operands) symbols_of(op, refs);
  std::vector<std::string> names;
  for (const auto& r : refs) {
    if (r.kind != kind) continue;
    names.push_back(kind == SymbolRef::Kind::global ? m.globals.at(r.index).name
                                                    : m.functions.at(r.index).name);
  }
  return names;
}
const Function* function_named(const Module& m, const std::string& name) {
  for (const auto& f : m.functions)
    if (f.name == name) return &f;
  return nullptr;
}
bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(PtxLink, DeclarationsReachTheDefinitionInAnyModule) {
  LinkOutcome out = link({parsed(kScale), parsed(kApply)});
  ASSERT_TRUE(out.module.has_value())
      << (out.diagnostics.empty() ? "" : out.diagnostics[0].message);
  const Module& m = *out.module;
  EXPECT_TRUE(out.unresolved_functions.empty());
  // One function per name, all with bodies: the declarations were resolved away.
  ASSERT_EQ(m.functions.size(), 3u);
  for (const auto& f : m.functions) EXPECT_TRUE(f.has_body) << f.name;
  const Function* apply = function_named(m, "apply");
  const Function* scaled = function_named(m, "scaled");
  ASSERT_NE(apply, nullptr);
  ASSERT_NE(scaled, nullptr);
  EXPECT_TRUE(apply->is_entry);
  EXPECT_TRUE(contains(referenced(m, *apply, SymbolRef::Kind::function), "scaled"));
  EXPECT_TRUE(contains(referenced(m, *scaled, SymbolRef::Kind::function), "offset_of"));
  // `factor`: one variable, A's definition with its initial value, read by both modules.
  std::size_t factors = 0;
  for (const auto& g : m.globals)
    if (g.name == "factor") {
      ++factors;
      EXPECT_FALSE(g.is_extern);
      ASSERT_EQ(g.init.size(), 1u);
      EXPECT_EQ(g.init[0].bits, 3u);
    }
  EXPECT_EQ(factors, 1u);
  EXPECT_TRUE(contains(referenced(m, *apply, SymbolRef::Kind::global), "factor"));
  EXPECT_TRUE(contains(referenced(m, *scaled, SymbolRef::Kind::global), "factor"));
}

TEST(PtxLink, InternalSymbolsStayEachModulesOwn) {
  LinkOutcome out = link({parsed(kScale), parsed(kApply)});
  ASSERT_TRUE(out.module.has_value());
  const Module& m = *out.module;
  // Each module's $str is its own variable (different contents), under distinct names.
  auto str_of = [&](const char* fn) {
    const auto names = referenced(m, *function_named(m, fn), SymbolRef::Kind::global);
    for (const auto& n : names)
      if (n != "factor") return n;
    return std::string();
  };
  const std::string a = str_of("scaled"), b = str_of("apply");
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  EXPECT_NE(a, b);
  for (const auto& g : m.globals) {
    if (g.name == a) {
      EXPECT_EQ(g.init.at(0).bits, 65u);
    }
    if (g.name == b) {
      EXPECT_EQ(g.init.at(0).bits, 66u);
    }
  }
}

TEST(PtxLink, TwoStrongDefinitionsFailWeakOnesKeepTheFirst) {
  const char* strong = ".visible .func f()\n{\n ret;\n}\n";
  LinkOutcome twice = link({parsed(strong), parsed(strong)});
  EXPECT_FALSE(twice.module.has_value());
  ASSERT_FALSE(twice.diagnostics.empty());
  EXPECT_NE(twice.diagnostics[0].message.find("multiple definition of function 'f'"),
            std::string::npos);
  const char* weak_a = ".weak .global .align 4 .u32 w = 1;\n";
  const char* weak_b = ".weak .global .align 4 .u32 w = 2;\n";
  LinkOutcome weak = link({parsed(weak_a), parsed(weak_b)});
  ASSERT_TRUE(weak.module.has_value());
  ASSERT_EQ(weak.module->globals.size(), 1u);
  EXPECT_EQ(weak.module->globals[0].init.at(0).bits, 1u);
}

TEST(PtxLink, WhatNoModuleDefines) {
  // A function: stays declared (the device runtime's may be among them).
  LinkOutcome fn = link({parsed(kScale)});
  ASSERT_TRUE(fn.module.has_value());
  ASSERT_EQ(fn.unresolved_functions.size(), 1u);
  EXPECT_EQ(fn.unresolved_functions[0], "offset_of");
  // A variable: stays declared too, listed (the caller fails the link if code reaches it).
  LinkOutcome var =
      link({parsed(kApply),
            parsed(".visible .func (.param .b32 r) scaled(.param .b32 v)\n{\n ret;\n}\n")});
  ASSERT_TRUE(var.module.has_value());
  ASSERT_EQ(var.unresolved_variables.size(), 1u);
  EXPECT_EQ(var.unresolved_variables[0], "factor");
  // Dynamic shared memory declared in two modules: one array.
  const char* dyn = ".extern .shared .align 16 .b8 smem[];\n";
  LinkOutcome shared = link({parsed(dyn), parsed(dyn)});
  ASSERT_TRUE(shared.module.has_value());
  EXPECT_EQ(shared.module->globals.size(), 1u);
  EXPECT_FALSE(link({}).module.has_value());
}

TEST(PtxLink, PruningKeepsWhatKernelsReach) {
  // apply -> scaled -> offset_of; `unused` calls a function nobody defines and reads a string.
  const char* extra = R"(
.extern .func helper_nobody_defines();
.global .align 1 .b8 $unused_str[2] = {67, 0};
.func unused()
{
  .reg .b64 %rd<2>;
  mov.u64 %rd1, $unused_str;
  call.uni helper_nobody_defines, ();
  ret;
}
.visible .global .align 4 .u32 exported_but_unused = 9;
)";
  LinkOutcome out = link({parsed(kScale), parsed(kApply), parsed(extra)});
  ASSERT_TRUE(out.module.has_value());
  Module m = std::move(*out.module);
  EXPECT_NE(function_named(m, "unused"), nullptr);
  prune_unreachable(m);
  std::vector<std::string> functions, globals;
  for (const auto& f : m.functions) functions.push_back(f.name);
  for (const auto& g : m.globals) globals.push_back(g.name);
  EXPECT_EQ(functions.size(), 3u);
  EXPECT_TRUE(contains(functions, "apply"));
  EXPECT_TRUE(contains(functions, "scaled"));
  EXPECT_TRUE(contains(functions, "offset_of"));
  EXPECT_FALSE(contains(functions, "unused"));
  EXPECT_FALSE(contains(functions, "helper_nobody_defines"));
  EXPECT_FALSE(contains(globals, "$unused_str"));
  EXPECT_TRUE(contains(globals, "factor"));
  EXPECT_TRUE(contains(globals, "exported_but_unused"));  // cuModuleGetGlobal may ask for it
  // References still name the right symbols after the renumbering.
  EXPECT_TRUE(
      contains(referenced(m, *function_named(m, "apply"), SymbolRef::Kind::function), "scaled"));
  EXPECT_TRUE(
      contains(referenced(m, *function_named(m, "scaled"), SymbolRef::Kind::global), "factor"));
  prune_unreachable(m, false);
  globals.clear();
  for (const auto& g : m.globals) globals.push_back(g.name);
  EXPECT_FALSE(contains(globals, "exported_but_unused"));
}

}  // namespace
}  // namespace cudamux::ptx
