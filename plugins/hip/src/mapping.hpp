// Lookups over the mapping tables (tables.inc). Values are carried as 64-bit integers;
// callers cast to the enum type of the side they need.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace cudamux::hip::mapping {

enum class Table : std::uint8_t {
  error,
  device_attribute,
  function_attribute,
  jit_option,
  pointer_attribute,
  limit,
  func_cache,
  memory_type,
  memcpy_kind,
  stream_flag,
  event_flag,
  host_alloc_flag,
  host_register_flag,
  mem_attach_flag,
  array_format,
  array3d_flag,
  address_mode,
  filter_mode,
  resource_type,
  resource_view_format,
  texture_flag,
  stream_wait_condition,
  ipc_mem_flag,
  mem_advise,
  mem_location_type,
};

struct Row {
  Table table;
  bool has_hip;
  bool has_cuda;
  std::int64_t hip;
  std::int64_t cuda;
  std::string_view hip_name;
  std::string_view cuda_name;
  std::string_view meaning;
};

std::span<const Row> rows() noexcept;
std::string_view table_name(Table t) noexcept;

// First row of `t` whose HIP (CUDA) side is `value`; nullptr when the table has none.
const Row* by_hip(Table t, std::int64_t value) noexcept;
const Row* by_cuda(Table t, std::int64_t value) noexcept;

// The counterpart, or nullopt when the row says "none" or there is no row.
std::optional<std::int64_t> to_hip(Table t, std::int64_t cuda) noexcept;
std::optional<std::int64_t> to_cuda(Table t, std::int64_t hip) noexcept;

// A CUDA flag word translated bit by bit. On a bit with no HIP counterpart returns false
// and sets `unmapped` to that bit (the caller reports it: arguments are never guessed).
bool flags_to_hip(Table t, unsigned cuda, unsigned& hip, unsigned& unmapped) noexcept;

// Encoding of (source, destination) CUmemorytype pairs in the memcpy_kind table.
constexpr std::int64_t pair(std::int64_t src, std::int64_t dst) noexcept { return src * 16 + dst; }

}  // namespace cudamux::hip::mapping
