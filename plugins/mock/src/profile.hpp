// Built-in device profiles of the mock: what cuDeviceGetAttribute & co. answer.
#pragma once

#include <cuda.h>

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace cudamux::mock {

// Attributes are dense from 1 to CU_DEVICE_ATTRIBUTE_MAX - 1; index 0 is unused.
inline constexpr int kAttributeLimit = CU_DEVICE_ATTRIBUTE_MAX;

struct AttributeRow {
  CUdevice_attribute attr;
  std::string_view name;
  int value;
};

struct AttributeOverride {
  CUdevice_attribute attr;
  int value;
};

struct ProfileSpec {
  std::string_view key;                          // what `profile = "..."` names
  std::string_view device_name;                  // what cuDeviceGetName answers
  std::span<const AttributeOverride> overrides;  // differences to the base (H100-like) table
};

// The resolved attribute values of one profile, before per-ordinal adjustments.
struct DeviceProfile {
  std::string key;
  std::string device_name;
  std::array<std::optional<int>, kAttributeLimit> attributes{};
};

// The base table: one row per attribute, in enumerator order.
std::span<const AttributeRow> base_attribute_table() noexcept;
std::span<const ProfileSpec> profile_specs() noexcept;
std::string_view default_profile_key() noexcept;
DeviceProfile resolve_profile(const ProfileSpec& spec);
const ProfileSpec* find_profile(std::string_view key) noexcept;

// CUDA spelling (deprecated aliases included) to attribute.
std::optional<CUdevice_attribute> attribute_by_name(std::string_view name) noexcept;

}  // namespace cudamux::mock
