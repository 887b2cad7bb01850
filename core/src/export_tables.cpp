// cuGetExportTable: the driver's private function tables (issue 14). NVIDIA's static runtime
// (libcudart_static.a, linked by default by nvcc and by PyTorch, CuPy, JAX) asks for them
// before anything else works. Layouts and entry behaviour are documented, with their sources,
// in docs/export-tables.md; this file implements them on the core's own functions, so every
// backend gets them.
#include "export_tables.hpp"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core.hpp"
#include "cudamux/driver_impl.hpp"
#include "cudamux/log.hpp"
#include "md2.hpp"

namespace cudamux::core {
namespace {

std::string uuid_text(const CUuuid& id) {
  std::string text;
  char byte[8];
  for (int i = 0; i < 16; ++i) {
    std::snprintf(byte, sizeof byte, "%s0x%02x", i ? ", " : "",
                  static_cast<unsigned char>(id.bytes[i]));
    text += byte;
  }
  return "{" + text + "}";
}

// --- entries ---

// CUDART_INTERFACE 1 / 6: load a registered fat binary (nvcc's wrapper) into the current
// context. The extended form's extra arguments have only been seen null / 0.
void get_module_from_cubin(CUmodule* module, const void* wrapper) {
  (void)impl::cuModuleLoadFatBinary(module, wrapper);
}
CUresult get_module_from_cubin_ext1(CUmodule* module, const void* wrapper, void* arg3, void* arg4,
                                    unsigned arg5) {
  if (arg3 || arg4 || arg5)
    return reject(CUDA_ERROR_NOT_SUPPORTED, "cuGetExportTable CUDART_INTERFACE[6]",
                  "unexpected extra arguments");
  return impl::cuModuleLoadFatBinary(module, wrapper);
}
// CUDART_INTERFACE 8: the same with the container itself, the module pointer second.
CUresult get_module_from_cubin_ext2(const void* container, CUmodule* module, void* arg3, void* arg4,
                                    unsigned arg5) {
  if (arg3 || arg4 || arg5)
    return reject(CUDA_ERROR_NOT_SUPPORTED, "cuGetExportTable CUDART_INTERFACE[8]",
                  "unexpected extra arguments");
  return impl::cuModuleLoadData(module, container);
}
// CUDART_INTERFACE 2: the device's primary context handle, without retaining it (the runtime
// retains it itself, later, and uses this handle).
CUresult primary_context_handle(CUcontext* ctx, CUdevice device) {
  return core::primary_context_peek(ctx, device);
}
// CUDART_INTERFACE 7: called with one word at start-up; nothing observable to do.
CUresult cudart_notify(std::uintptr_t) { return CUDA_SUCCESS; }

// TOOLS_RUNTIME_CALLBACK_HOOKS 2 / 6: the flag arrays a tool sets to get a callback for a
// runtime API call (2: one per CUPTI runtime callback id, more than 522 in 13.0) or internal
// event (6: more than 13). No tool attaches to cudamux: all zero, so no hook is ever called.
template <std::size_t Elements>
void callback_flags(std::uint32_t** flags, std::size_t* count) {
  static std::uint32_t zeros[Elements] = {};
  if (flags) *flags = zeros;
  if (count) *count = Elements;
}

// Publishes ctx.local_storage for lock-free readers (Context::local_storage_view). state_mutex
// held.
void publish_local_storage_locked(Context& ctx) noexcept {
  ctx.local_storage_view.store(nullptr, std::memory_order_release);  // until a copy is made
  if (ctx.local_storage_views.size() >= Context::kMaxLocalStorageViews) return;
  try {
    auto view = std::make_unique<Context::LocalStorageView>();
    view->entries.reserve(ctx.local_storage.size());
    for (const auto& e : ctx.local_storage) view->entries.emplace_back(e.key, e.value);
    const Context::LocalStorageView* published = view.get();
    ctx.local_storage_views.push_back(std::move(view));
    ctx.local_storage_view.store(published, std::memory_order_release);
  } catch (...) {
    // No copy: readers take the lock.
  }
}

// CONTEXT_LOCAL_STORAGE_INTERFACE_V0301: a value per (context, key), with a destructor run
// when the context goes (release_local_storage).
CUresult local_storage_put(CUcontext handle, void* key, void* value,
                           void (*destructor)(CUcontext, void*, void*)) {
  Context* ctx = nullptr;
  if (const CUresult r = handle ? (context_of(handle) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT)
                                : current_context(ctx))
    return r;
  if (!ctx) ctx = context_of(handle);
  std::lock_guard lock(ctx->state_mutex);
  for (const auto& e : ctx->local_storage) {
    // NVIDIA's driver 580 (H200) refuses a key already stored and keeps its value.
    if (e.key == key) return CUDA_ERROR_INVALID_HANDLE;
  }
  try {
    ctx->local_storage.push_back({key, value, destructor});
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  publish_local_storage_locked(*ctx);
  return CUDA_SUCCESS;
}
CUresult local_storage_delete(CUcontext handle, void* key) {
  Context* ctx = handle ? context_of(handle) : nullptr;
  if (!handle && current_context(ctx) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_CONTEXT;
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(ctx->state_mutex);
  const auto n = std::erase_if(ctx->local_storage, [&](const auto& e) { return e.key == key; });
  if (n) publish_local_storage_locked(*ctx);
  return n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUresult local_storage_get(void** value, CUcontext handle, void* key) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = handle ? context_of(handle) : nullptr;
  if (!handle && current_context(ctx) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_CONTEXT;
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if (const auto* view = ctx->local_storage_view.load(std::memory_order_acquire)) {
    for (const auto& [k, v] : view->entries) {
      if (k == key) {
        *value = v;
        return CUDA_SUCCESS;
      }
    }
    return CUDA_ERROR_INVALID_HANDLE;
  }
  std::lock_guard lock(ctx->state_mutex);
  for (const auto& e : ctx->local_storage) {
    if (e.key == key) {
      *value = e.value;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_HANDLE;  // not stored: the runtime then creates its state
}

// TOOLS_TLS 1 / 2: set and get the calling thread's current context (the top of its context
// stack), as cuCtxSetCurrent / cuCtxGetCurrent do; cuBLAS reads it on every GEMM and gives up
// (CUBLAS_STATUS_NOT_SUPPORTED) when it fails. Learnt from NVIDIA's driver 580 on an H100
// (docs/export-tables.md 2.3): not-initialised and deinitialised answers as the API's.
CUresult tools_set_current_context(CUcontext ctx) { return impl::cuCtxSetCurrent(ctx); }
CUresult tools_get_current_context(CUcontext* out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  return impl::cuCtxGetCurrent(out);
}

// TOOLS_CONTEXT 4: a context's unique id, as cuCtxGetId gives it (NVIDIA's driver 580: 1 for
// the first primary context, then 2, 3, ... for created ones); 0 for no context; a null
// out-pointer is CUDA_ERROR_UNKNOWN there. cuBLAS asks on every GEMM.
CUresult tools_context_id(CUcontext ctx, unsigned long long* out) {
  if (!out) return CUDA_ERROR_UNKNOWN;
  *out = 0;
  if (!ctx) return CUDA_SUCCESS;
  return impl::cuCtxGetId(ctx, out);
}

// TOOLS_CONTEXT 51: the driver's object behind a stream argument, cuBLAS's key for per-stream
// state. Learnt from NVIDIA's driver 580 (tests/nvcc probes): the null stream means the
// legacy stream of `ctx`, or its per-thread stream when `per_thread` is set; the special
// handles need `ctx` (without it: CUDA_ERROR_INVALID_HANDLE, even with a current context);
// other handles ignore it; the out-pointer is written only on success. The object handed out
// is a handle of ours (see below): opaque to callers, distinct per stream, and checked when it
// comes back (slots 5, 12, 39).
CUresult tools_stream_object(CUcontext ctx, CUstream stream, void** out, bool per_thread) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  if (stream == reinterpret_cast<CUstream>(~std::uintptr_t{0})) return CUDA_ERROR_INVALID_HANDLE;
  const bool special =
      stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
  Stream* resolved = nullptr;
  if (!special) {
    if (const CUresult r = resolve_stream(stream, false, resolved)) return r;
  } else {
    if (!ctx) return CUDA_ERROR_INVALID_HANDLE;
    if (const CUresult r = impl::cuCtxPushCurrent_v2(ctx)) return r;
    const CUresult r = resolve_stream(stream, per_thread, resolved);
    CUcontext popped = nullptr;
    (void)impl::cuCtxPopCurrent_v2(&popped);
    if (r) return r;
  }
  // A legacy stream has no handle of its own (CU_STREAM_LEGACY names each context's): its
  // context's handle stands for it, which no stream handle equals.
  *out = resolved->kind == StreamKind::legacy ? static_cast<void*>(resolved->ctx->handle)
                                              : static_cast<void*>(resolved->handle);
  return CUDA_SUCCESS;
}

// A stream object of slot 51 coming back; null when it names no live stream.
Stream* tools_stream(void* object) noexcept {
  if (!object) return nullptr;
  if (Stream* s = stream_of(static_cast<CUstream>(object))) return s;
  Context* ctx = context_of(static_cast<CUcontext>(object));
  return ctx ? ctx->legacy.get() : nullptr;
}
// TOOLS_CONTEXT 39: the stream's id (cuStreamGetId's value). 5: the same, except 1 for a legacy
// stream. 12: whether it is a legacy stream. cuBLAS keys its per-stream state by them.
// Unknown objects: CUDA_ERROR_INVALID_VALUE, as NVIDIA's for null ones.
CUresult tools_stream_id(CUcontext, void* object, unsigned long long* out) {
  const Stream* s = tools_stream(object);
  if (!s || !out) return CUDA_ERROR_INVALID_VALUE;
  *out = s->id;
  return CUDA_SUCCESS;
}
CUresult tools_stream_id_or_legacy(CUcontext, void* object, unsigned long long* out) {
  const Stream* s = tools_stream(object);
  if (!s || !out) return CUDA_ERROR_INVALID_VALUE;
  *out = s->kind == StreamKind::legacy ? 1 : s->id;
  return CUDA_SUCCESS;
}
CUresult tools_stream_is_legacy(CUcontext, void* object, unsigned char* out) {
  const Stream* s = tools_stream(object);
  if (!s || !out) return CUDA_ERROR_INVALID_VALUE;
  *out = s->kind == StreamKind::legacy ? 1 : 0;
  return CUDA_SUCCESS;
}

// CONTEXT_CHECKS 2: whether a context wraps another (no API of cudamux makes such contexts).
CUresult context_check(CUcontext, std::uint32_t* is_wrapped, CUcontext* inner) {
  if (is_wrapped) *is_wrapped = 0;
  if (inner) *inner = nullptr;
  return CUDA_SUCCESS;
}
// CONTEXT_CHECKS 3: 1 would switch the runtime into its wrapped-context mode.
std::uint32_t wrapped_context_mode() { return 0; }

// INTEGRITY_CHECK 1: the runtime's check that it talks to NVIDIA's driver: an HMAC-MD2, under
// a fixed key, of the driver version, the runtime's version, the process and thread, where the
// tables and this function are, the time the runtime gives, and every device's UUID and PCI
// location. Versions ending in 0 or 1 get fixed answers.
const void* served_table(std::string_view name) noexcept;
CUresult integrity_check(std::uint32_t version, std::uint64_t unix_seconds, std::uint64_t* result);

CUresult integrity_check(std::uint32_t version, std::uint64_t unix_seconds, std::uint64_t* result) {
  if (!result) return CUDA_ERROR_INVALID_VALUE;
  if (version % 10 == 0 || version % 10 == 1) {
    result[0] = version % 10 == 0 ? 0x3341181C03CB675Cull : 0x1841181C03CB675Cull;
    result[1] = 0x8ED383AA1F4CD1E8ull;
    return CUDA_SUCCESS;
  }
  struct Facts {  // hashed as laid out in memory
    std::uint32_t driver_version, runtime_version, process, thread;
    const void* cudart_table;
    const void* integrity_table;
    const void* check_function;
    std::uint64_t unix_seconds;
  };
  struct DeviceFacts {
    CUuuid uuid;
    std::int32_t pci_domain, pci_bus, pci_device;
  };
  static_assert(sizeof(Facts) == 48 && sizeof(DeviceFacts) == 28);
  int driver_version = 0;
  if (const CUresult r = impl::cuDriverGetVersion(&driver_version)) return r;
  const Facts facts{static_cast<std::uint32_t>(driver_version),
                    version,
                    static_cast<std::uint32_t>(::getpid()),
                    static_cast<std::uint32_t>(::pthread_self()),
                    served_table("CUDART_INTERFACE"),
                    served_table("INTEGRITY_CHECK"),
                    reinterpret_cast<const void*>(&integrity_check),
                    unix_seconds};
  std::vector<std::uint8_t> message(sizeof facts);
  std::memcpy(message.data(), &facts, sizeof facts);
  int devices = 0;
  if (const CUresult r = impl::cuDeviceGetCount(&devices)) return r;
  for (int d = 0; d < devices; ++d) {
    DeviceFacts f{};
    if (const CUresult r = impl::cuDeviceGetUuid_v2(&f.uuid, d)) return r;
    (void)impl::cuDeviceGetAttribute(&f.pci_domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d);
    (void)impl::cuDeviceGetAttribute(&f.pci_bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d);
    (void)impl::cuDeviceGetAttribute(&f.pci_device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d);
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(&f);
    message.insert(message.end(), bytes, bytes + sizeof f);
  }
  constexpr std::array<std::uint8_t, 16> kKey = {0x14, 0x6A, 0xDD, 0xAE, 0x53, 0xA9, 0xA7, 0x52,
                                                 0xAA, 0x08, 0x41, 0x36, 0x0B, 0xF5, 0x5A, 0x9F};
  const Md2::Digest digest = hmac_md2(kKey, message);
  std::memcpy(result, digest.data(), digest.size());
  return CUDA_SUCCESS;
}

// RUNTIME_LOG_SINK 1: the runtime's own diagnostics ("Insufficient driver: ...") into our log.
void runtime_log(const char* component, int level, const char* format, va_list args) {
  char text[1024];
  va_list copy;
  va_copy(copy, args);
  std::vsnprintf(text, sizeof text, format ? format : "", copy);
  va_end(copy);
  try {
    log::get()->debug("NVIDIA runtime [{} {}]: {}", component ? component : "?", level, text);
  } catch (...) {
  }
}

// --- the tables ---

// A CUuuid from its 16 bytes as NVIDIA's tools print them.
constexpr CUuuid uuid(const unsigned char (&bytes)[16]) {
  CUuuid id{};
  for (int i = 0; i < 16; ++i) id.bytes[i] = static_cast<char>(bytes[i]);
  return id;
}

struct Entry {
  std::size_t slot;
  const void* fn;
};

struct TableDef {
  const char* name;
  CUuuid id;
  std::size_t words;  // the table's length in pointer-sized words
  bool size_first;    // word 0 is the table's size in bytes
  std::vector<Entry> entries;
};

template <class F>
const void* fn(F* f) noexcept {
  return reinterpret_cast<const void*>(f);
}

// The served tables. Entries not listed answer CUDA_ERROR_NOT_SUPPORTED and log once.
// Never destroyed, like everything handed out below: runtimes call the tables from their own
// exit handlers, which may run after this library's static destructors.
const std::vector<TableDef>& table_defs() {
  static const auto& defs = *new std::vector<TableDef>{
      {"CUDART_INTERFACE",
       uuid({0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd,
             0x9d, 0xf9}),
       13,
       true,
       {{1, fn(&get_module_from_cubin)},
        {2, fn(&primary_context_handle)},
        {6, fn(&get_module_from_cubin_ext1)},
        {7, fn(&cudart_notify)},
        {8, fn(&get_module_from_cubin_ext2)}}},
      {"TOOLS_RUNTIME_CALLBACK_HOOKS",
       uuid({0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c,
             0x0a, 0x66}),
       7,
       true,
       {{2, fn(&callback_flags<1024>)}, {6, fn(&callback_flags<64>)}}},
      {"CONTEXT_LOCAL_STORAGE_INTERFACE_V0301",
       uuid({0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8,
             0x95, 0x93}),
       4,
       false,
       {{0, fn(&local_storage_put)}, {1, fn(&local_storage_delete)}, {2, fn(&local_storage_get)}}},
      {"INTEGRITY_CHECK",
       uuid({0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66,
             0xe1, 0xf2}),
       3,
       true,
       {{1, fn(&integrity_check)}}},
      {"RUNTIME_LOG_SINK",
       uuid({0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c,
             0x0d, 0xd9}),
       3,
       true,
       {{1, fn(&runtime_log)}}},
      // Sizes as NVIDIA's driver 580 answers (tests/nvcc/export_table_probe.c on an H100).
      {"TOOLS_TLS",
       uuid({0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a,
             0xec, 0xdc}),
       3,
       true,
       {{1, fn(&tools_set_current_context)}, {2, fn(&tools_get_current_context)}}},
      // cuBLAS (13.0) fetches it on every GEMM and refuses the call without it. 93 words in
      // NVIDIA's driver 580; the entries it calls are implemented as they are learnt.
      {"TOOLS_CONTEXT",
       uuid({0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24,
             0xc8, 0xf2}),
       93,
       true,
       {{4, fn(&tools_context_id)},
        {5, fn(&tools_stream_id_or_legacy)},
        {12, fn(&tools_stream_is_legacy)},
        {39, fn(&tools_stream_id)},
        {51, fn(&tools_stream_object)}}},
      {"CONTEXT_CHECKS",
       uuid({0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d,
             0xfa, 0x7e}),
       15,
       true,
       {{2, fn(&context_check)}, {3, fn(&wrapped_context_mode)}}},
  };
  return defs;
}

// An entry cudamux does not implement: logs once which one was called, with the first four
// argument registers (what a caller passes is the first thing to learn about an entry), and
// answers CUDA_ERROR_NOT_SUPPORTED. The x86-64 calling convention lets this read registers a
// caller did not set (their values are then meaningless) and lets callers pass more.
const char* table_name(std::size_t table) noexcept;

template <std::size_t Table, std::size_t Slot>
CUresult unimplemented_entry(std::uintptr_t a0, std::uintptr_t a1, std::uintptr_t a2,
                             std::uintptr_t a3) {
  static std::atomic<bool> logged{false};
  if (!logged.exchange(true)) {
    try {
      log::get()->warn(
          "cuGetExportTable: entry {} of private table {} is not implemented in cudamux (see "
          "docs/export-tables.md); returning CUDA_ERROR_NOT_SUPPORTED (argument registers "
          "{:#x} {:#x} {:#x} {:#x})",
          Slot, table_name(Table), a0, a1, a2, a3);
    } catch (...) {
    }
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}
template <std::size_t Table, std::size_t... Slot>
std::array<const void*, sizeof...(Slot)> unimplemented_entries(std::index_sequence<Slot...>) {
  return {fn(&unimplemented_entry<Table, Slot>)...};
}
constexpr std::size_t kMaxWords = 96;  // TOOLS_CONTEXT has 93

struct Served {
  const TableDef* def;
  std::vector<const void*> words;
};

// One set of unimplemented entries per table, so each names its own table.
constexpr std::size_t kMaxTables = 10;
template <std::size_t... Table>
std::array<std::array<const void*, kMaxWords>, sizeof...(Table)> all_unimplemented(
    std::index_sequence<Table...>) {
  return {unimplemented_entries<Table>(std::make_index_sequence<kMaxWords>{})...};
}

const char* table_name(std::size_t table) noexcept {
  try {
    const auto& defs = table_defs();
    return table < defs.size() ? defs[table].name : "?";
  } catch (...) {
    return "?";
  }
}

const std::vector<Served>& served() {
  static const auto& tables = *new std::vector<Served>([] {
    const auto unimplemented = all_unimplemented(std::make_index_sequence<kMaxTables>{});
    std::vector<Served> out;
    for (std::size_t index = 0; index < table_defs().size() && index < kMaxTables; ++index) {
      const TableDef& def = table_defs()[index];
      Served t{&def, std::vector<const void*>(def.words)};
      for (std::size_t i = 0; i < def.words; ++i) t.words[i] = unimplemented[index][i];
      if (def.size_first) t.words[0] = reinterpret_cast<const void*>(def.words * sizeof(void*));
      for (const Entry& e : def.entries) t.words[e.slot] = e.fn;
      out.push_back(std::move(t));
    }
    return out;
  }());
  return tables;
}

const void* served_table(std::string_view name) noexcept {
  try {
    for (const Served& t : served()) {
      if (name == t.def->name) return t.words.data();
    }
  } catch (...) {
  }
  return nullptr;
}

}  // namespace

const void* export_table(const CUuuid& id) noexcept {
  try {
    for (const Served& t : served()) {
      if (std::memcmp(t.def->id.bytes, id.bytes, sizeof id.bytes) == 0) return t.words.data();
    }
  } catch (...) {
  }
  return nullptr;
}

void release_local_storage(CUcontext handle) noexcept {
  Context* ctx = context_of(handle);
  if (!ctx) return;
  std::vector<Context::LocalStorage> entries;
  {
    std::lock_guard lock(ctx->state_mutex);
    entries.swap(ctx->local_storage);
    publish_local_storage_locked(*ctx);
  }
  for (const auto& e : entries) {
    if (e.destructor) e.destructor(handle, e.key, e.value);
  }
}

}  // namespace cudamux::core

namespace cudamux::impl {

CUresult cuGetExportTable(const void** ppExportTable, const CUuuid* pExportTableId) {
  if (!ppExportTable || !pExportTableId)
    return core::reject(CUDA_ERROR_INVALID_VALUE, "cuGetExportTable", "null argument");
  if (const void* table = core::export_table(*pExportTableId)) {
    *ppExportTable = table;
    return CUDA_SUCCESS;
  }
  // Unknown tables: logged once per UUID, so the next one a client needs is easy to find.
  static std::mutex mutex;
  static std::set<std::string> logged;
  const std::string id = core::uuid_text(*pExportTableId);
  {
    std::lock_guard lock(mutex);
    if (logged.insert(id).second) {
      try {
        log::get()->warn(
            "cuGetExportTable: no private table {} in cudamux (see docs/export-tables.md); "
            "returning CUDA_ERROR_NOT_SUPPORTED",
            id);
      } catch (...) {
      }
    }
  }
  *ppExportTable = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace cudamux::impl
