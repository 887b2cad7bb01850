#include "mapping.hpp"

#include <cuda.h>

#include <unordered_map>
#include <vector>

#include "hip_api.hpp"

namespace cudamux::hip::mapping {
namespace {

#define CM_PAIR(src, dst) pair(static_cast<std::int64_t>(src), static_cast<std::int64_t>(dst))
#define CM_MAP(t, h, c, m) \
  Row{Table::t, true, true, static_cast<std::int64_t>(h), static_cast<std::int64_t>(c), #h, #c, m},
#define CM_HIP_ONLY(t, h, m) Row{Table::t, true, false, static_cast<std::int64_t>(h), 0, #h, "", m},
#define CM_CUDA_ONLY(t, c, m) \
  Row{Table::t, false, true, 0, static_cast<std::int64_t>(c), "", #c, m},
constexpr Row kRows[] = {
#include "tables.inc"
};
#undef CM_MAP
#undef CM_HIP_ONLY
#undef CM_CUDA_ONLY
#undef CM_PAIR

constexpr std::uint64_t key(Table t, std::int64_t v) noexcept {
  return (static_cast<std::uint64_t>(t) << 56) ^ static_cast<std::uint64_t>(v);
}

// First-match indexes, built once: lookups are on hot paths (every error, every copy).
struct Index {
  std::unordered_map<std::uint64_t, const Row*> hip, cuda;
  Index() {
    for (const Row& r : kRows) {
      if (r.has_hip) hip.emplace(key(r.table, r.hip), &r);
      if (r.has_cuda) cuda.emplace(key(r.table, r.cuda), &r);
    }
  }
};
const Index& index() {
  static const Index i;
  return i;
}

}  // namespace

std::span<const Row> rows() noexcept { return kRows; }

std::string_view table_name(Table t) noexcept {
  switch (t) {
    case Table::error:
      return "error";
    case Table::device_attribute:
      return "device_attribute";
    case Table::function_attribute:
      return "function_attribute";
    case Table::jit_option:
      return "jit_option";
    case Table::pointer_attribute:
      return "pointer_attribute";
    case Table::limit:
      return "limit";
    case Table::func_cache:
      return "func_cache";
    case Table::memory_type:
      return "memory_type";
    case Table::memcpy_kind:
      return "memcpy_kind";
    case Table::stream_flag:
      return "stream_flag";
    case Table::event_flag:
      return "event_flag";
    case Table::host_alloc_flag:
      return "host_alloc_flag";
    case Table::host_register_flag:
      return "host_register_flag";
    case Table::mem_attach_flag:
      return "mem_attach_flag";
    case Table::array_format:
      return "array_format";
    case Table::array3d_flag:
      return "array3d_flag";
    case Table::address_mode:
      return "address_mode";
    case Table::filter_mode:
      return "filter_mode";
    case Table::resource_type:
      return "resource_type";
    case Table::resource_view_format:
      return "resource_view_format";
    case Table::texture_flag:
      return "texture_flag";
    case Table::stream_wait_condition:
      return "stream_wait_condition";
    case Table::ipc_mem_flag:
      return "ipc_mem_flag";
    case Table::mem_advise:
      return "mem_advise";
    case Table::mem_location_type:
      return "mem_location_type";
  }
  return "?";
}

const Row* by_hip(Table t, std::int64_t value) noexcept {
  const auto& m = index().hip;
  auto it = m.find(key(t, value));
  return it == m.end() ? nullptr : it->second;
}

const Row* by_cuda(Table t, std::int64_t value) noexcept {
  const auto& m = index().cuda;
  auto it = m.find(key(t, value));
  return it == m.end() ? nullptr : it->second;
}

std::optional<std::int64_t> to_hip(Table t, std::int64_t cuda) noexcept {
  const Row* r = by_cuda(t, cuda);
  if (r == nullptr || !r->has_hip) return std::nullopt;
  return r->hip;
}

std::optional<std::int64_t> to_cuda(Table t, std::int64_t hip) noexcept {
  const Row* r = by_hip(t, hip);
  if (r == nullptr || !r->has_cuda) return std::nullopt;
  return r->cuda;
}

bool flags_to_hip(Table t, unsigned cuda, unsigned& hip, unsigned& unmapped) noexcept {
  hip = 0;
  for (unsigned bit = 1; bit != 0; bit <<= 1) {
    if ((cuda & bit) == 0) continue;
    const auto h = to_hip(t, bit);
    if (!h) {
      unmapped = bit;
      return false;
    }
    hip |= static_cast<unsigned>(*h);
  }
  return true;
}

}  // namespace cudamux::hip::mapping
