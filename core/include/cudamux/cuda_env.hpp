// CUDA's own environment variables (issue 8), honoured on every backend:
//   CUDA_VISIBLE_DEVICES  which devices the program sees, and in which order;
//   CUDA_DEVICE_ORDER     FASTEST_FIRST (default) or PCI_BUS_ID enumeration;
//   CUDA_LAUNCH_BLOCKING  1: every launch waits for its kernel (errors at the launch);
//   CUDA_MODULE_LOADING   LAZY (default) or EAGER, as cuModuleGetLoadingMode reports.
// CUDA_CACHE_DISABLE / CUDA_CACHE_PATH belong to the backends' compile caches.
// Pure functions over plain data, so tools (cudamux-info) and tests share them with the core.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#pragma GCC visibility push(default)

namespace cudamux::cuda_env {

// What device selection needs to know of one backend device.
struct DeviceFacts {
  std::array<unsigned char, 16> uuid{};
  int pci_domain = 0;
  int pci_bus = 0;
  int pci_device = 0;
  int cc_major = 0;
  int cc_minor = 0;
  long long speed = 0;  // multiprocessors x clock (kHz); 0 when unknown
};

struct Selection {
  // CUDA ordinal i is backend ordinal `backend_ordinals[i]`.
  std::vector<int> backend_ordinals;
  // Why entries were dropped or settings ignored (each a full sentence for the log).
  std::vector<std::string> notes;
  std::string order = "FASTEST_FIRST";  // the order applied
};

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it.
std::string uuid_string(const std::array<unsigned char, 16>& uuid);

// Enumeration order first (CUDA_DEVICE_ORDER: FASTEST_FIRST sorts by speed, then compute
// capability, ties keep the backend's order; PCI_BUS_ID by domain, bus, device), then
// CUDA_VISIBLE_DEVICES over that order: comma-separated indices or UUIDs ("GPU-" plus a
// prefix that matches exactly one device). As NVIDIA does, the first invalid entry (not a
// number or UUID, out of range, ambiguous, repeated) ends the list; the entries before it
// stay. Null `visible`: every device; an empty string: none. Null `order`: FASTEST_FIRST.
Selection select_devices(const std::vector<DeviceFacts>& devices, const char* visible,
                         const char* order);

// CUDA_LAUNCH_BLOCKING: "1" switches it on (anything else is off, as with NVIDIA's driver).
bool launch_blocking(const char* value);

// CUDA_MODULE_LOADING: "EAGER" or "LAZY" (case-insensitive); null or empty: LAZY (CUDA's
// default since 12.2). Any other value: nullopt (the caller warns and uses the default).
enum class ModuleLoading { lazy, eager };
std::optional<ModuleLoading> module_loading(const char* value);

// The backend cuInit loaded (after cuInit or an NVRTC call succeeded), for diagnostics.
struct BackendChoice {
  std::string name;    // resolved ("auto" resolved)
  std::string file;    // plugin path
  std::string reason;  // why it was chosen
};
std::optional<BackendChoice> loaded_backend();
// CUDA ordinal -> backend ordinal after cuInit (empty before).
std::vector<int> visible_backend_ordinals();
// Notes of the device selection at cuInit (dropped entries, ignored values).
std::vector<std::string> selection_notes();

}  // namespace cudamux::cuda_env

#pragma GCC visibility pop
