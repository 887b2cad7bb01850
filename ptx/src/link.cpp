// PTX linker (ptx/link.hpp): definitions placed first (so that declarations in any module
// can refer to them), then declarations, then every symbol reference rewritten to the linked
// module's indices.
#include "cudamux/ptx/link.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace cudamux::ptx {
namespace {

constexpr std::uint32_t kUnmapped = ~std::uint32_t{0};

struct IndexMap {
  std::vector<std::uint32_t> globals, functions;
};

bool external(const Variable& v) { return v.is_visible || v.is_weak || v.is_common; }
bool external(const Function& f) { return f.is_visible || f.is_weak || f.is_entry; }
bool replaceable(const Variable& v) { return v.is_weak || v.is_common; }
bool replaceable(const Function& f) { return f.is_weak; }

void remap(SymbolRef& s, const IndexMap& m) {
  if (s.kind == SymbolRef::Kind::global && s.index < m.globals.size())
    s.index = m.globals[s.index];
  else if (s.kind == SymbolRef::Kind::function && s.index < m.functions.size())
    s.index = m.functions[s.index];
}

void remap(Operand& o, const IndexMap& m) {
  remap(o.sym, m);
  for (auto& e : o.elems) remap(e, m);
}

// Places module `i`'s definitions of one table (globals or functions) into `out`.
template <typename T, typename IsDefinition>
void place_definitions(std::vector<T>& items, std::size_t module_index, std::vector<T>& out,
                       std::vector<std::size_t>& origin, std::vector<std::uint32_t>& map,
                       std::map<std::string, std::uint32_t>& by_name, std::set<std::string>& taken,
                       IsDefinition is_definition, LinkOutcome& outcome, const char* what) {
  map.assign(items.size(), kUnmapped);
  for (std::size_t k = 0; k < items.size(); ++k) {
    T& item = items[k];
    if (!is_definition(item)) continue;
    if (external(item)) {
      const auto it = by_name.find(item.name);
      if (it != by_name.end()) {
        if (!replaceable(item) && !replaceable(out[it->second]))
          outcome.diagnostics.push_back(
              {item.loc, std::string("multiple definition of ") + what + " '" + item.name + "'"});
        map[k] = it->second;  // the first definition in link order stays
        continue;
      }
      by_name.emplace(item.name, static_cast<std::uint32_t>(out.size()));
    } else if (taken.count(item.name) != 0) {
      // An internal symbol whose name another module uses: this one gets a fresh name.
      const std::string base = item.name + "_cmx_m" + std::to_string(module_index);
      std::string fresh = base;
      for (int n = 1; taken.count(fresh) != 0; ++n) fresh = base + "_" + std::to_string(n);
      item.name = fresh;
    }
    taken.insert(item.name);
    map[k] = static_cast<std::uint32_t>(out.size());
    out.push_back(std::move(item));
    origin.push_back(module_index);
  }
}

}  // namespace

LinkOutcome link(std::vector<Module> modules) {
  LinkOutcome outcome;
  if (modules.empty()) {
    outcome.diagnostics.push_back({{}, "nothing to link"});
    return outcome;
  }
  Module linked;
  linked.version_major = modules[0].version_major;
  linked.version_minor = modules[0].version_minor;
  linked.target = modules[0].target;
  linked.arch = modules[0].arch;
  linked.arch_suffix = modules[0].arch_suffix;
  linked.address_size = modules[0].address_size;
  linked.files = modules[0].files;
  for (const auto& m : modules) {
    if (std::pair(m.version_major, m.version_minor) >
        std::pair(linked.version_major, linked.version_minor)) {
      linked.version_major = m.version_major;
      linked.version_minor = m.version_minor;
    }
    linked.arch = std::max(linked.arch, m.arch);
    for (const auto& o : m.target_options)
      if (std::find(linked.target_options.begin(), linked.target_options.end(), o) ==
          linked.target_options.end())
        linked.target_options.push_back(o);
    if (m.address_size != linked.address_size)
      outcome.diagnostics.push_back(
          {{},
           "modules of different address sizes (" + std::to_string(linked.address_size) + " and " +
               std::to_string(m.address_size) + " bits) cannot be linked"});
  }
  if (!outcome.diagnostics.empty()) return outcome;

  std::vector<IndexMap> maps(modules.size());
  // The module each linked item came from: its references are rewritten with that map.
  std::vector<std::size_t> global_origin, function_origin;
  std::map<std::string, std::uint32_t> global_defs, function_defs;
  std::set<std::string> global_names, function_names;
  // Definitions first: a declaration in an earlier module refers to a later definition.
  for (std::size_t i = 0; i < modules.size(); ++i) {
    place_definitions(
        modules[i].globals, i, linked.globals, global_origin, maps[i].globals, global_defs,
        global_names, [](const Variable& v) { return !v.is_extern; }, outcome, "variable");
    place_definitions(
        modules[i].functions, i, linked.functions, function_origin, maps[i].functions,
        function_defs, function_names, [](const Function& f) { return f.has_body; }, outcome,
        "function");
  }
  // Declarations: to a definition of the name, else one declaration per name.
  std::map<std::string, std::uint32_t> global_decls, function_decls;
  for (std::size_t i = 0; i < modules.size(); ++i) {
    auto& m = modules[i];
    for (std::size_t k = 0; k < m.globals.size(); ++k) {
      if (maps[i].globals[k] != kUnmapped) continue;
      Variable& v = m.globals[k];
      if (const auto d = global_defs.find(v.name); d != global_defs.end()) {
        maps[i].globals[k] = d->second;
        continue;
      }
      auto [it, added] =
          global_decls.emplace(v.name, static_cast<std::uint32_t>(linked.globals.size()));
      if (added) {
        if (v.space != Space::shared) outcome.unresolved_variables.push_back(v.name);
        linked.globals.push_back(std::move(v));
        global_origin.push_back(i);
      }
      maps[i].globals[k] = it->second;
    }
    for (std::size_t k = 0; k < m.functions.size(); ++k) {
      if (maps[i].functions[k] != kUnmapped) continue;
      Function& f = m.functions[k];
      if (const auto d = function_defs.find(f.name); d != function_defs.end()) {
        maps[i].functions[k] = d->second;
        continue;
      }
      auto [it, added] =
          function_decls.emplace(f.name, static_cast<std::uint32_t>(linked.functions.size()));
      if (added) {
        outcome.unresolved_functions.push_back(f.name);
        linked.functions.push_back(std::move(f));
        function_origin.push_back(i);
      }
      maps[i].functions[k] = it->second;
    }
  }
  if (!outcome.diagnostics.empty()) return outcome;

  // References: rewritten with the map of the module each item came from.
  for (std::size_t g = 0; g < linked.globals.size(); ++g)
    for (auto& init : linked.globals[g].init) remap(init.sym, maps[global_origin[g]]);
  for (std::size_t fi = 0; fi < linked.functions.size(); ++fi) {
    auto& f = linked.functions[fi];
    const IndexMap& m = maps[function_origin[fi]];
    for (auto& ins : f.body)
      for (auto& op : ins.operands) remap(op, m);
    for (auto& t : f.target_lists)
      if (t.calls)
        for (auto& target : t.targets)
          if (target < m.functions.size()) target = m.functions[target];
  }
  outcome.module = std::move(linked);
  return outcome;
}

void prune_unreachable(Module& m, bool keep_visible_variables) {
  const std::size_t nf = m.functions.size(), ng = m.globals.size();
  std::vector<bool> keep_f(nf, false), keep_g(ng, false);
  std::vector<std::uint32_t> work;  // functions to visit
  std::vector<std::uint32_t> gwork;
  auto mark = [&](const SymbolRef& s) {
    if (s.kind == SymbolRef::Kind::function && s.index < nf && !keep_f[s.index]) {
      keep_f[s.index] = true;
      work.push_back(s.index);
    } else if (s.kind == SymbolRef::Kind::global && s.index < ng && !keep_g[s.index]) {
      keep_g[s.index] = true;
      gwork.push_back(s.index);
    }
  };
  auto mark_operand = [&](auto& self, const Operand& o) -> void {
    mark(o.sym);
    for (const auto& e : o.elems) self(self, e);
  };
  for (std::uint32_t fi = 0; fi < nf; ++fi)
    if (m.functions[fi].is_entry) mark({SymbolRef::Kind::function, fi});
  if (keep_visible_variables)
    for (std::uint32_t g = 0; g < ng; ++g)
      if (m.globals[g].is_visible && !m.globals[g].is_extern) mark({SymbolRef::Kind::global, g});
  while (!work.empty() || !gwork.empty()) {
    if (!work.empty()) {
      const Function& f = m.functions[work.back()];
      work.pop_back();
      for (const auto& ins : f.body)
        for (const auto& op : ins.operands) mark_operand(mark_operand, op);
      for (const auto& t : f.target_lists)
        if (t.calls)
          for (auto target : t.targets) mark({SymbolRef::Kind::function, target});
    } else {
      const Variable& v = m.globals[gwork.back()];
      gwork.pop_back();
      for (const auto& init : v.init)
        if (init.is_symbol) mark(init.sym);
    }
  }
  IndexMap map;
  map.functions.assign(nf, kUnmapped);
  map.globals.assign(ng, kUnmapped);
  std::vector<Function> functions;
  std::vector<Variable> globals;
  for (std::size_t fi = 0; fi < nf; ++fi)
    if (keep_f[fi]) {
      map.functions[fi] = static_cast<std::uint32_t>(functions.size());
      functions.push_back(std::move(m.functions[fi]));
    }
  for (std::size_t g = 0; g < ng; ++g)
    if (keep_g[g]) {
      map.globals[g] = static_cast<std::uint32_t>(globals.size());
      globals.push_back(std::move(m.globals[g]));
    }
  // Every reference of kept code names kept symbols (marked above), so no kUnmapped remains.
  for (auto& v : globals)
    for (auto& init : v.init) remap(init.sym, map);
  for (auto& f : functions) {
    for (auto& ins : f.body)
      for (auto& op : ins.operands) remap(op, map);
    for (auto& t : f.target_lists)
      if (t.calls)
        for (auto& target : t.targets)
          if (target < map.functions.size()) target = map.functions[target];
  }
  m.functions = std::move(functions);
  m.globals = std::move(globals);
}

}  // namespace cudamux::ptx
