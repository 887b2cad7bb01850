// CUDA's environment variables (issue 8): see cudamux/cuda_env.hpp.
#include "cudamux/cuda_env.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <numeric>
#include <tuple>

namespace cudamux::cuda_env {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool iequals_prefix(std::string_view text, std::string_view prefix) {
  if (prefix.size() > text.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  }
  return true;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string uuid_string(const std::array<unsigned char, 16>& uuid) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "GPU-";
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[uuid[i] >> 4];
    out += kHex[uuid[i] & 0xf];
  }
  return out;
}

Selection select_devices(const std::vector<DeviceFacts>& devices, const char* visible,
                         const char* order) {
  Selection sel;
  std::vector<int> enumerated(devices.size());
  std::iota(enumerated.begin(), enumerated.end(), 0);

  const std::string order_text = order ? upper(trim(order)) : std::string();
  if (order_text == "PCI_BUS_ID") {
    sel.order = "PCI_BUS_ID";
    std::stable_sort(enumerated.begin(), enumerated.end(), [&](int a, int b) {
      const DeviceFacts& x = devices[static_cast<std::size_t>(a)];
      const DeviceFacts& y = devices[static_cast<std::size_t>(b)];
      return std::tie(x.pci_domain, x.pci_bus, x.pci_device) <
             std::tie(y.pci_domain, y.pci_bus, y.pci_device);
    });
  } else {
    if (!order_text.empty() && order_text != "FASTEST_FIRST") {
      sel.notes.push_back("CUDA_DEVICE_ORDER='" + std::string(order) +
                          "' is neither FASTEST_FIRST nor PCI_BUS_ID; using FASTEST_FIRST");
    }
    // Fastest first; equal devices keep the backend's order, as NVIDIA's do.
    std::stable_sort(enumerated.begin(), enumerated.end(), [&](int a, int b) {
      const DeviceFacts& x = devices[static_cast<std::size_t>(a)];
      const DeviceFacts& y = devices[static_cast<std::size_t>(b)];
      return std::tie(y.speed, y.cc_major, y.cc_minor) < std::tie(x.speed, x.cc_major, x.cc_minor);
    });
  }

  if (!visible) {
    sel.backend_ordinals = std::move(enumerated);
    return sel;
  }

  std::string_view rest = visible;
  std::vector<std::string> uuids;
  for (const DeviceFacts& d : devices) uuids.push_back(uuid_string(d.uuid));
  while (!trim(rest).empty()) {
    const auto comma = rest.find(',');
    const std::string_view entry = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);

    int chosen = -1;
    std::string why;
    if (iequals_prefix(entry, "GPU-")) {
      int matches = 0;
      for (std::size_t i = 0; i < enumerated.size(); ++i) {
        const std::string& u = uuids[static_cast<std::size_t>(enumerated[i])];
        if (iequals_prefix(u, entry)) {
          ++matches;
          chosen = enumerated[i];
        }
      }
      if (matches != 1) {
        why = matches == 0 ? "matches no device's UUID" : "matches more than one device's UUID";
        chosen = -1;
      }
    } else {
      int index = -1;
      const auto [end, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), index);
      if (ec != std::errc() || end != entry.data() + entry.size() || entry.empty()) {
        why = "is neither a device index nor a GPU-<uuid>";
      } else if (index < 0 || static_cast<std::size_t>(index) >= enumerated.size()) {
        why = "is out of range (" + std::to_string(enumerated.size()) + " device(s))";
      } else {
        chosen = enumerated[static_cast<std::size_t>(index)];
      }
    }
    if (chosen >= 0 && std::find(sel.backend_ordinals.begin(), sel.backend_ordinals.end(),
                                 chosen) != sel.backend_ordinals.end()) {
      why = "names a device already listed";
      chosen = -1;
    }
    if (chosen < 0) {
      sel.notes.push_back("CUDA_VISIBLE_DEVICES: entry '" + std::string(entry) + "' " + why +
                          "; it and the entries after it are ignored");
      break;
    }
    sel.backend_ordinals.push_back(chosen);
  }
  return sel;
}

bool launch_blocking(const char* value) { return value != nullptr && trim(value) == "1"; }

std::optional<ModuleLoading> module_loading(const char* value) {
  if (value == nullptr || trim(value).empty()) return ModuleLoading::lazy;
  const std::string v = upper(trim(value));
  if (v == "LAZY") return ModuleLoading::lazy;
  if (v == "EAGER") return ModuleLoading::eager;
  return std::nullopt;
}

}  // namespace cudamux::cuda_env
