// cuGetExportTable (issue 14): the private tables NVIDIA's static runtime asks the driver for,
// checked through the driver API as that runtime uses them (docs/export-tables.md).
#include <cstring>

#include "conformance.hpp"

namespace conformance {
namespace {

using ExportTable = Driver;

CUuuid id_of(const unsigned char (&bytes)[16]) {
  CUuuid id;
  std::memcpy(id.bytes, bytes, 16);
  return id;
}
constexpr unsigned char kCudartInterface[16] = {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
                                                0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9};
constexpr unsigned char kHooks[16] = {0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74,
                                      0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66};
constexpr unsigned char kLocalStorage[16] = {0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11,
                                             0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93};
constexpr unsigned char kContextChecks[16] = {0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43,
                                              0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e};
constexpr unsigned char kToolsTls[16] = {0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47,
                                         0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc};
constexpr unsigned char kToolsContext[16] = {0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48,
                                             0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2};
constexpr unsigned char kIntegrity[16] = {0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b,
                                          0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2};

void* const* table(const unsigned char (&bytes)[16]) {
  const void* t = nullptr;
  const CUuuid id = id_of(bytes);
  EXPECT_OK(cuGetExportTable(&t, &id));
  return static_cast<void* const*>(t);
}
std::size_t size_word(void* const* t) { return reinterpret_cast<std::size_t>(t[0]); }

TEST_F(ExportTable, ArgumentsAndUnknownTables) {
  const void* t = reinterpret_cast<const void*>(0x1);
  const CUuuid cudart = id_of(kCudartInterface);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGetExportTable(nullptr, &cudart));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGetExportTable(&t, nullptr));
  const CUuuid made_up = id_of({0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa,
                                0xbb, 0xcc, 0xdd, 0xee, 0xff});
  // oracle: NVIDIA's answer for an unknown table is checked by tests/nvcc/export_table_probe.c.
  EXPECT_NE(cuGetExportTable(&t, &made_up), CUDA_SUCCESS);
}

TEST_F(ExportTable, SizesTheRuntimeChecks) {
  void* const* hooks = table(kHooks);
  ASSERT_NE(hooks, nullptr);
  EXPECT_GT(size_word(hooks), 48u) << "NVIDIA's runtime refuses a smaller hooks table";
  // The callback flag arrays: more than 522 and 13 elements, all clear (no tool attached).
  std::uint32_t* flags = nullptr;
  std::size_t count = 0;
  reinterpret_cast<void (*)(std::uint32_t**, std::size_t*)>(hooks[2])(&flags, &count);
  ASSERT_NE(flags, nullptr);
  EXPECT_GT(count, 522u);
  for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(flags[i], 0u) << i;
  reinterpret_cast<void (*)(std::uint32_t**, std::size_t*)>(hooks[6])(&flags, &count);
  EXPECT_GT(count, 13u);
  EXPECT_EQ(size_word(table(kCudartInterface)), 13 * sizeof(void*));
}

TEST_F(ExportTable, PrimaryContextHandleIsStableAndNotRetained) {
  void* const* cudart = table(kCudartInterface);
  ASSERT_NE(cudart, nullptr);
  using PrimaryFn = CUresult (*)(CUcontext*, CUdevice);
  CUcontext peeked = nullptr;
  ASSERT_OK(reinterpret_cast<PrimaryFn>(cudart[2])(&peeked, dev));
  ASSERT_NE(peeked, nullptr);
  CUcontext retained = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&retained, dev));
  EXPECT_EQ(peeked, retained) << "the handle the runtime stores is the primary context's";
  // NVIDIA's runtime keeps that handle across cudaDeviceReset: it must name the new context.
  ASSERT_OK(cuDevicePrimaryCtxReset(dev));
  unsigned version = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetApiVersion(retained, &version))
      << "a reset primary context is gone until retained again";
  CUcontext again = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&again, dev));
  EXPECT_EQ(again, retained);
  EXPECT_OK(cuCtxGetApiVersion(again, &version));
  EXPECT_OK(cuDevicePrimaryCtxRelease(dev));
  EXPECT_OK(cuDevicePrimaryCtxRelease(dev));
}

// cuBLAS reads the current context through TOOLS_TLS slot 2 on every GEMM and refuses the call
// when that fails; slot 1 sets it (behaviour read from NVIDIA's driver 580).
TEST_F(ExportTable, ToolsTlsGetsAndSetsTheCurrentContext) {
  void* const* tls = table(kToolsTls);
  ASSERT_NE(tls, nullptr);
  EXPECT_EQ(size_word(tls), 3 * sizeof(void*));
  using Set = CUresult (*)(CUcontext);
  using Get = CUresult (*)(CUcontext*);
  CUcontext current = nullptr;
  ASSERT_OK(cuCtxGetCurrent(&current));
  ASSERT_NE(current, nullptr);
  CUcontext seen = nullptr;
  ASSERT_OK(reinterpret_cast<Get>(tls[2])(&seen));
  EXPECT_EQ(seen, current);
  CUcontext other = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&other, 0, dev));  // now current
  ASSERT_OK(reinterpret_cast<Get>(tls[2])(&seen));
  EXPECT_EQ(seen, other);
  ASSERT_OK(reinterpret_cast<Set>(tls[1])(current));
  ASSERT_OK(cuCtxGetCurrent(&seen));
  EXPECT_EQ(seen, current) << "slot 1 replaces the top of the context stack";
  CUcontext popped = nullptr;
  ASSERT_OK(cuCtxPopCurrent_v2(&popped));  // the pushed entry, now `current`
  EXPECT_EQ(popped, current);
  ASSERT_OK(cuCtxDestroy_v2(other));
}

// cuBLAS asks TOOLS_CONTEXT slot 4 for the context's id on every GEMM (NVIDIA's driver 580:
// the cuCtxGetId value; 0 and success for no context; CUDA_ERROR_UNKNOWN for no out-pointer).
TEST_F(ExportTable, ToolsContextGivesTheContextId) {
  void* const* tools = table(kToolsContext);
  ASSERT_NE(tools, nullptr);
  EXPECT_EQ(size_word(tools), 93 * sizeof(void*));
  using IdFn = CUresult (*)(CUcontext, unsigned long long*);
  const auto context_id = reinterpret_cast<IdFn>(tools[4]);
  unsigned long long id = 0, expected = 0;
  ASSERT_OK(cuCtxGetId(ctx, &expected));
  ASSERT_OK(context_id(ctx, &id));
  EXPECT_EQ(id, expected);
  CUcontext other = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&other, 0, dev));
  ASSERT_OK(context_id(other, &id));
  ASSERT_OK(cuCtxGetId(other, &expected));
  EXPECT_EQ(id, expected);
  unsigned long long first = 0;
  ASSERT_OK(cuCtxGetId(ctx, &first));
  EXPECT_NE(id, first) << "every context has its own id";
  ASSERT_OK(cuCtxDestroy_v2(other));
  ASSERT_OK(cuCtxSetCurrent(ctx));
  id = 99;
  ASSERT_OK(context_id(nullptr, &id));
  EXPECT_EQ(id, 0u);
  EXPECT_CU(CUDA_ERROR_UNKNOWN, context_id(ctx, nullptr));
}

// TOOLS_CONTEXT slot 51: the driver's object behind a stream argument, distinct per stream
// (behaviour of NVIDIA's driver 580; the objects themselves are opaque).
TEST_F(ExportTable, ToolsContextResolvesStreams) {
  void* const* tools = table(kToolsContext);
  ASSERT_NE(tools, nullptr);
  using StreamFn = CUresult (*)(CUcontext, CUstream, void**, bool);
  const auto object_of = reinterpret_cast<StreamFn>(tools[51]);
  void* legacy = nullptr;
  void* per_thread = nullptr;
  void* legacy_again = nullptr;
  ASSERT_OK(object_of(ctx, nullptr, &legacy, false));
  ASSERT_OK(object_of(ctx, nullptr, &per_thread, true));
  ASSERT_OK(object_of(ctx, CU_STREAM_LEGACY, &legacy_again, true));
  EXPECT_NE(legacy, nullptr);
  EXPECT_NE(legacy, per_thread) << "the flag picks the per-thread stream for the null stream";
  EXPECT_EQ(legacy, legacy_again);
  void* per_thread_again = nullptr;
  ASSERT_OK(object_of(ctx, CU_STREAM_PER_THREAD, &per_thread_again, false));
  EXPECT_EQ(per_thread, per_thread_again);
  CUstream s1 = nullptr, s2 = nullptr;
  ASSERT_OK(cuStreamCreate(&s1, 0));
  ASSERT_OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  void* o1 = nullptr;
  void* o2 = nullptr;
  void* o1_without_context = nullptr;
  ASSERT_OK(object_of(ctx, s1, &o1, false));
  ASSERT_OK(object_of(ctx, s2, &o2, false));
  ASSERT_OK(object_of(nullptr, s1, &o1_without_context, false));
  EXPECT_NE(o1, o2);
  EXPECT_NE(o1, legacy);
  EXPECT_EQ(o1, o1_without_context) << "a real handle needs no context";
  void* untouched = &untouched;
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, object_of(nullptr, nullptr, &untouched, false));
  EXPECT_EQ(untouched, &untouched);
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            object_of(ctx, reinterpret_cast<CUstream>(~std::uintptr_t{0}), &untouched, false));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, object_of(ctx, nullptr, nullptr, false));
  CUcontext current = nullptr;
  ASSERT_OK(cuCtxGetCurrent(&current));
  EXPECT_EQ(current, ctx) << "the context stack is left as it was";

  // Slots 39, 5, 12: the stream's id (5: 1 for the legacy stream) and whether it is legacy.
  using IdFn = CUresult (*)(CUcontext, void*, unsigned long long*);
  using FlagFn = CUresult (*)(CUcontext, void*, unsigned char*);
  const auto id_of_object = reinterpret_cast<IdFn>(tools[39]);
  const auto id_or_legacy = reinterpret_cast<IdFn>(tools[5]);
  const auto is_legacy = reinterpret_cast<FlagFn>(tools[12]);
  unsigned long long id = 0, expected = 0, five = 0;
  unsigned char legacy_flag = 9;
  ASSERT_OK(cuStreamGetId(s2, &expected));
  ASSERT_OK(id_of_object(ctx, o2, &id));
  EXPECT_EQ(id, expected);
  ASSERT_OK(id_or_legacy(ctx, o2, &five));
  EXPECT_EQ(five, expected);
  ASSERT_OK(is_legacy(ctx, o2, &legacy_flag));
  EXPECT_EQ(legacy_flag, 0);
  ASSERT_OK(cuStreamGetId(nullptr, &expected));
  ASSERT_OK(id_of_object(ctx, legacy, &id));
  EXPECT_EQ(id, expected);
  ASSERT_OK(id_or_legacy(ctx, legacy, &five));
  EXPECT_EQ(five, 1u);
  ASSERT_OK(is_legacy(ctx, legacy, &legacy_flag));
  EXPECT_EQ(legacy_flag, 1);
  ASSERT_OK(cuStreamGetId(CU_STREAM_PER_THREAD, &expected));
  ASSERT_OK(id_of_object(ctx, per_thread, &id));
  EXPECT_EQ(id, expected);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, id_of_object(ctx, nullptr, &id));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, id_of_object(ctx, o2, nullptr));
  ASSERT_OK(cuStreamDestroy_v2(s1));
  ASSERT_OK(cuStreamDestroy_v2(s2));
}

struct Destroyed {
  CUcontext ctx = nullptr;
  void* key = nullptr;
  void* value = nullptr;
  int calls = 0;
};
Destroyed g_destroyed;

TEST_F(ExportTable, ContextLocalStorageLivesAndDiesWithTheContext) {
  void* const* storage = table(kLocalStorage);
  ASSERT_NE(storage, nullptr);
  using Dtor = void (*)(CUcontext, void*, void*);
  using Put = CUresult (*)(CUcontext, void*, void*, Dtor);
  using Delete = CUresult (*)(CUcontext, void*);
  using Get = CUresult (*)(void**, CUcontext, void*);
  const auto put = reinterpret_cast<Put>(storage[0]);
  const auto del = reinterpret_cast<Delete>(storage[1]);
  const auto get = reinterpret_cast<Get>(storage[2]);
  int key = 0, value = 0, other = 0;
  CUcontext mine = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&mine, 0, dev));
  void* out = nullptr;
  EXPECT_NE(get(&out, nullptr, &key), CUDA_SUCCESS) << "nothing stored yet";
  const Dtor record = [](CUcontext c, void* k, void* v) {
    g_destroyed = {c, k, v, g_destroyed.calls + 1};
  };
  g_destroyed = {};
  ASSERT_OK(put(nullptr, &key, &value, record));  // null: the current context
  ASSERT_OK(get(&out, nullptr, &key));
  EXPECT_EQ(out, &value);
  ASSERT_OK(get(&out, mine, &key));
  EXPECT_EQ(out, &value);
  // Per context: another context has nothing under the key.
  CUcontext second = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&second, 0, dev));
  EXPECT_NE(get(&out, second, &key), CUDA_SUCCESS);
  ASSERT_OK(cuCtxDestroy_v2(second));
  // A key already stored is refused, its value kept (NVIDIA's driver 580, H200).
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, put(mine, &key, &other, record));
  ASSERT_OK(get(&out, mine, &key));
  EXPECT_EQ(out, &value);
  // Keys added and removed many times over (reads take no lock in cudamux: a copy is published
  // per change, up to a bound, then reads take the lock): every read sees the last change.
  int more_keys[100] = {}, more_values[100] = {};
  for (int i = 0; i < 100; ++i) {
    ASSERT_OK(put(mine, &more_keys[i], &more_values[99 - i], nullptr));
    ASSERT_OK(get(&out, mine, &more_keys[i]));
    ASSERT_EQ(out, &more_values[99 - i]) << i;
    ASSERT_OK(get(&out, mine, &key));
    ASSERT_EQ(out, &value) << i;
  }
  for (int i = 0; i < 100; ++i) {
    ASSERT_OK(del(mine, &more_keys[i]));
    EXPECT_NE(get(&out, mine, &more_keys[i]), CUDA_SUCCESS) << i;
  }
  // delete removes without calling the destructor (the runtime frees the value itself).
  ASSERT_OK(del(mine, &key));
  EXPECT_NE(get(&out, mine, &key), CUDA_SUCCESS);
  EXPECT_EQ(g_destroyed.calls, 0);
  // Destroying the context runs the destructor with what was stored.
  ASSERT_OK(put(mine, &key, &other, record));
  ASSERT_OK(cuCtxDestroy_v2(mine));
  EXPECT_EQ(g_destroyed.calls, 1);
  EXPECT_EQ(g_destroyed.ctx, mine);
  EXPECT_EQ(g_destroyed.key, &key);
  EXPECT_EQ(g_destroyed.value, &other);
  ASSERT_OK(cuCtxSetCurrent(ctx));
}

TEST_F(ExportTable, ContextChecksAndIntegrity) {
  void* const* checks = table(kContextChecks);
  ASSERT_NE(checks, nullptr);
  std::uint32_t wrapped = 7;
  CUcontext inner = reinterpret_cast<CUcontext>(0x1);
  ASSERT_OK(reinterpret_cast<CUresult (*)(CUcontext, std::uint32_t*, CUcontext*)>(checks[2])(
      nullptr, &wrapped, &inner));
  EXPECT_EQ(wrapped, 0u);
  EXPECT_EQ(reinterpret_cast<std::uint32_t (*)()>(checks[3])(), 0u)
      << "1 would switch the runtime into its wrapped-context mode";

  void* const* integrity = table(kIntegrity);
  ASSERT_NE(integrity, nullptr);
  using Check = CUresult (*)(std::uint32_t, std::uint64_t, std::uint64_t*);
  const auto check = reinterpret_cast<Check>(integrity[1]);
  std::uint64_t a[2] = {}, b[2] = {}, c[2] = {};
  ASSERT_OK(check(13000, 1700000000, a));
  EXPECT_EQ(a[0], 0x3341181C03CB675Cull);
  EXPECT_EQ(a[1], 0x8ED383AA1F4CD1E8ull);
  ASSERT_OK(check(13002, 1700000000, a));
  ASSERT_OK(check(13002, 1700000000, b));
  ASSERT_OK(check(13002, 1700000001, c));
  EXPECT_EQ(a[0], b[0]);
  EXPECT_EQ(a[1], b[1]);
  EXPECT_TRUE(a[0] != c[0] || a[1] != c[1]) << "the time is part of the hash";
}

}  // namespace
}  // namespace conformance
