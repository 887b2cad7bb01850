// The cuda backend without a GPU: finding NVIDIA's driver among stand-ins, refusing
// ours and non-drivers, and the passthrough mapping onto a fake NVIDIA driver (call log
// read back from it). The RealDriver tests need NVIDIA's driver and skip without one.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "compiler.hpp"
#include "config.hpp"
#include "cudamux/backend.hpp"
#include "driver_locator.hpp"
#include "nvrtc_locator.hpp"

namespace {

namespace fs = std::filesystem;
namespace be = cudamux::backend;
namespace cu = cudamux::cuda;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

fs::path exe_dir() { return fs::canonical("/proc/self/exe").parent_path(); }
fs::path lib_dir() { return exe_dir().parent_path() / "lib"; }
fs::path plugin_path() { return lib_dir() / "cudamux/plugins/libcudamux-cuda.so"; }
fs::path our_libcuda() { return lib_dir() / "libcuda.so.1"; }
fs::path our_libnvrtc() { return lib_dir() / "libnvrtc.so.13"; }
fs::path standins() {
  const char* env = std::getenv("CUDAMUX_CUDA_BACKEND_STANDINS");
  return env && *env ? fs::path(env) : exe_dir().parent_path() / "tests/cuda_backend/standins";
}
fs::path standin(const char* kind) { return standins() / kind / "libcuda.so.1"; }

int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1))
    ++n;
  return n;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/cudamux-cuda-test-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const fs::path& path() const { return path_; }
  fs::path write(const std::string& name, const std::string& text) const {
    fs::create_directories((path_ / name).parent_path());
    std::ofstream(path_ / name) << text;
    return path_ / name;
  }

 private:
  fs::path path_;
};

// --- finding the driver ---

TEST(Locator, OurLibcudaCarriesTheIdentitySectionNvidiasDoesNot) {
  std::string error;
  EXPECT_EQ(cu::elf_has_section(our_libcuda().string(), cu::kIdentitySection, error), true)
      << error;
  EXPECT_EQ(cu::elf_has_section(standin("fake").string(), cu::kIdentitySection, error), false)
      << error;
  TempDir t;
  const auto junk = t.write("libcuda.so.1", "not an ELF file");
  EXPECT_EQ(cu::elf_has_section(junk.string(), cu::kIdentitySection, error), std::nullopt);
  EXPECT_THAT(error, HasSubstr("not a 64-bit ELF"));
}

TEST(Locator, SearchSkipsOursAndNonDriversThenFindsNvidias) {
  TempDir t;
  fs::create_directories(t.path() / "copy");
  fs::copy_file(our_libcuda(), t.path() / "copy/libcuda.so.1");
  const std::vector<std::string> dirs = {
      (t.path() / "missing").string(), (t.path() / "copy").string(),
      standin("notnvidia").parent_path().string(), standin("fake").parent_path().string()};
  const cu::SearchResult found = cu::search_driver(dirs);
  ASSERT_TRUE(found.driver.has_value());
  EXPECT_EQ(found.driver->path, standin("fake").string());
  ASSERT_EQ(found.tried.size(), 3u);
  EXPECT_THAT(found.tried[0], HasSubstr("missing/libcuda.so.1: does not exist"));
  EXPECT_THAT(found.tried[1], AllOf(HasSubstr("copy/libcuda.so.1"), HasSubstr("cudamux's own")));
  EXPECT_THAT(found.tried[2], AllOf(HasSubstr("notnvidia/libcuda.so.1"),
                                    HasSubstr("is not NVIDIA's driver: it does not export "
                                              "cuDriverGetVersion")));
  EXPECT_NE(found.driver->api.cuMemcpy3DAsync_v2, nullptr);
}

TEST(Locator, DefaultFoldersAreLdLibraryPathThenTheUsualOnes) {
  const char* old = std::getenv("LD_LIBRARY_PATH");
  const std::string saved = old ? old : "";
  ::setenv("LD_LIBRARY_PATH", "/a::/b", 1);
  const auto dirs = cu::default_search_dirs();
  if (old)
    ::setenv("LD_LIBRARY_PATH", saved.c_str(), 1);
  else
    ::unsetenv("LD_LIBRARY_PATH");
  EXPECT_EQ(dirs, (std::vector<std::string>{"/a", "/b", "/usr/lib/x86_64-linux-gnu", "/usr/lib64",
                                            "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib"}));
}

// --- the plugin, loaded as the core loads it ---

class CudaBackend : public ::testing::Test {
 protected:
  using CreateFn = be::Backend*(const be::PluginHost&, std::string&);

  void SetUp() override {
    lib_ = ::dlopen(plugin_path().c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib_, nullptr) << ::dlerror();
    create_ = reinterpret_cast<CreateFn*>(::dlsym(lib_, be::kCreateSymbol));
    ASSERT_NE(create_, nullptr);
    sink_ = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_);
    logger_ = std::make_shared<spdlog::logger>("cudamux", sink_);
    logger_->set_level(spdlog::level::trace);
  }
  void TearDown() override { backend_.reset(); }  // the plugin itself stays loaded

  // Creates the backend from TOML text (the [cuda] table's contents); error on failure.
  be::Backend* create(const std::string& toml_text, std::string* error = nullptr) {
    table_ = toml::parse(toml_text, std::string_view("test.toml"));
    const be::PluginHost host{be::kAbiVersion, logger_, &table_, "test.toml"};
    std::string message;
    backend_.reset(create_(host, message));
    if (error)
      *error = message;
    else
      EXPECT_NE(backend_, nullptr) << message;
    return backend_.get();
  }
  be::Backend* create_fake(const std::string& extra = "") {
    return create("driver = \"" + standin("fake").string() + "\"\n" + extra);
  }

  // The fake driver's call log (and clearing it), through its own handle.
  static std::string fake_log(bool clear = true) {
    void* h = ::dlopen(standin("fake").c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (!h) return "<fake driver not loaded>";
    auto* get = reinterpret_cast<const char* (*)()>(::dlsym(h, "fake_nvidia_log"));
    auto* reset = reinterpret_cast<void (*)()>(::dlsym(h, "fake_nvidia_clear_log"));
    std::string out = get();
    if (clear) reset();
    ::dlclose(h);
    return out;
  }
  // How often the fake driver's `fn` was called in this process ("0" if never).
  static std::string fake_calls(const std::string& fn) {
    void* h = ::dlopen(standin("fake").c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (!h) return "0";
    auto* get = reinterpret_cast<const char* (*)()>(::dlsym(h, "fake_nvidia_call_counts"));
    std::istringstream in(get());
    ::dlclose(h);
    std::string name;
    std::string n;
    while (in >> name >> n)
      if (name == fn) return n;
    return "0";
  }
  static void fake_busy(bool busy) {
    void* h = ::dlopen(standin("fake").c_str(), RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(h, nullptr);
    reinterpret_cast<void (*)(int)>(::dlsym(h, "fake_nvidia_set_busy"))(busy);
    ::dlclose(h);
  }

  void* lib_ = nullptr;
  CreateFn* create_ = nullptr;
  std::ostringstream log_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> logger_;
  toml::table table_;
  std::unique_ptr<be::Backend> backend_;
};

TEST_F(CudaBackend, NoDriverMeansNoDevicesAndSaysWhereItLooked) {
  TempDir t;
  be::Backend* b = create("search_path = [\"" + (t.path() / "nothing").string() + "\"]");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->name(), "cuda");
  EXPECT_EQ(b->devices().count(), 0);
  EXPECT_THAT(log_.str(),
              AllOf(HasSubstr("no NVIDIA driver found"),
                    HasSubstr((t.path() / "nothing/libcuda.so.1").string() + ": does not exist")));
}

TEST_F(CudaBackend, ConfiguredDriverThatIsOursIsAnError) {
  std::string error;
  EXPECT_EQ(create("driver = \"" + our_libcuda().string() + "\"", &error), nullptr);
  EXPECT_THAT(error,
              AllOf(HasSubstr("test.toml:1:10: [cuda] key 'driver': " + our_libcuda().string()),
                    HasSubstr("cudamux's own")));
}

TEST_F(CudaBackend, ConfiguredLibraryThatIsNotNvidiasIsAnError) {
  std::string error;
  EXPECT_EQ(create("\ndriver = \"" + standin("notnvidia").string() + "\"", &error), nullptr);
  EXPECT_THAT(error,
              AllOf(HasSubstr("test.toml:2:10: [cuda] key 'driver'"),
                    HasSubstr("is not NVIDIA's driver: it does not export cuDriverGetVersion")));
}

TEST_F(CudaBackend, DriverWhoseCuInitFailsIsAnErrorNamingFileAndNvidiasError) {
  std::string error;
  EXPECT_EQ(create("driver = \"" + standin("broken").string() + "\"", &error), nullptr);
  EXPECT_THAT(error, AllOf(HasSubstr(standin("broken").string()), HasSubstr("failed to initialise"),
                           HasSubstr("CUDA_ERROR_SYSTEM_DRIVER_MISMATCH")));
}

TEST_F(CudaBackend, ConfigErrorsNameFileLineColumnAndKey) {
  std::string error;
  EXPECT_EQ(create("driver = 5", &error), nullptr);
  EXPECT_EQ(error, "test.toml:1:10: [cuda] key 'driver': expected a string");
  EXPECT_EQ(create("driver = \"libcuda.so.1\"", &error), nullptr);
  EXPECT_THAT(
      error,
      HasSubstr("test.toml:1:10: [cuda] key 'driver': \"libcuda.so.1\" is not an absolute path"));
  EXPECT_EQ(create("contexts = \"shared\"", &error), nullptr);
  EXPECT_EQ(error,
            "test.toml:1:12: [cuda] key 'contexts': unknown mode \"shared\" (known: \"primary\" "
            "\"create\")");
  EXPECT_EQ(create("search_path = \"/x\"", &error), nullptr);
  EXPECT_THAT(error, HasSubstr("[cuda] key 'search_path': expected an array"));
  EXPECT_EQ(
      create("missing = \"/nonexistent/libcuda.so.1\"\ndriver = \"/nonexistent/libcuda.so.1\"",
             &error),
      nullptr);
  EXPECT_THAT(
      error,
      HasSubstr("test.toml:2:10: [cuda] key 'driver': /nonexistent/libcuda.so.1 does not exist"));
  EXPECT_THAT(log_.str(), HasSubstr("test.toml:1:1: [cuda] unknown key 'missing' ignored"));
}

TEST_F(CudaBackend, DevicesAndErrorsComeFromNvidiasDriver) {
  be::Backend* b = create_fake();
  ASSERT_NE(b, nullptr);
  auto& d = b->devices();
  ASSERT_EQ(d.count(), 2);
  be::DeviceProperties p;
  ASSERT_TRUE(d.properties(1, p).ok());
  EXPECT_EQ(p.name, "Fake NVIDIA H100 #101");  // device handle 101 is ordinal 1
  EXPECT_EQ(p.uuid[0], 101);
  EXPECT_EQ(p.uuid[15], 101);
  EXPECT_EQ(p.total_memory, std::size_t{1} << 30);
  EXPECT_EQ(p.cc_major, 9);
  EXPECT_EQ(p.pci_bus, 0x41);
  int v = 0;
  ASSERT_TRUE(d.attribute(0, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, v).ok());
  EXPECT_EQ(v, 132);
  // NVIDIA's own answer for an attribute it does not know passes through unchanged.
  EXPECT_EQ(d.attribute(0, CU_DEVICE_ATTRIBUTE_MAX, v).native, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d.properties(2, p).native, CUDA_ERROR_INVALID_DEVICE);
  EXPECT_TRUE(d.can_access_peer(0, 1));
  EXPECT_FALSE(d.can_access_peer(0, 0));
  const auto& e = b->errors();
  EXPECT_EQ(e.to_cuda(CUDA_ERROR_OUT_OF_MEMORY), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(e.native_name(CUDA_ERROR_NOT_READY), "CUDA_ERROR_NOT_READY");
  EXPECT_EQ(e.to_cuda(4242), std::nullopt);  // NVIDIA's driver has no name for it
  EXPECT_EQ(e.not_ready().native, CUDA_ERROR_NOT_READY);
}

TEST_F(CudaBackend, PrimaryModeSharesOneRetainedPrimaryContextPerDevice) {
  be::Backend* b = create_fake();
  ASSERT_NE(b, nullptr);
  fake_log();
  std::unique_ptr<be::DeviceContext> c1, c2;
  ASSERT_TRUE(b->open_context(1, CU_CTX_SCHED_BLOCKING_SYNC, c1).ok());
  ASSERT_TRUE(b->open_context(1, 0, c2).ok());
  EXPECT_EQ(c2->ordinal(), 1);
  std::string calls = fake_log();
  EXPECT_EQ(count(calls, "cuDevicePrimaryCtxRetain 101"), 1) << calls;
  EXPECT_THAT(calls, HasSubstr("cuDevicePrimaryCtxSetFlags_v2 101 4"));  // flags of the first
  c1.reset();
  EXPECT_EQ(count(fake_log(false), "cuDevicePrimaryCtxRelease_v2"), 0);
  c2.reset();
  EXPECT_EQ(count(fake_log(), "cuDevicePrimaryCtxRelease_v2 101"), 1);
  EXPECT_EQ(b->open_context(2, 0, c1).native, CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(CudaBackend, CreateModeMakesOneRealContextEach) {
  be::Backend* b = create_fake("contexts = \"create\"");
  ASSERT_NE(b, nullptr);
  fake_log();
  std::unique_ptr<be::DeviceContext> c1, c2;
  ASSERT_TRUE(b->open_context(0, CU_CTX_SCHED_YIELD, c1).ok());
  ASSERT_TRUE(b->open_context(0, 0, c2).ok());
  std::string calls = fake_log();
  EXPECT_THAT(calls, HasSubstr("cuCtxCreate_v4 100 2"));
  EXPECT_EQ(count(calls, "cuCtxCreate_v4"), 2);
  EXPECT_EQ(count(calls, "cuCtxPopCurrent_v2"), 2);  // not left pushed on our thread
  // Alternating between them switches NVIDIA's current context each time, not more.
  void* p = nullptr;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c1->allocate(64, &p).ok());
    ASSERT_TRUE(c1->free(p).ok());
    ASSERT_TRUE(c2->allocate(64, &p).ok());
    ASSERT_TRUE(c2->free(p).ok());
  }
  EXPECT_EQ(count(fake_log(), "cuCtxSetCurrent"), 6);
  c1.reset();
  c2.reset();
  EXPECT_EQ(count(fake_log(), "cuCtxDestroy_v2"), 2);
}

TEST_F(CudaBackend, CurrentContextIsSetOncePerThread) {
  be::Backend* b = create_fake();
  ASSERT_NE(b, nullptr);
  std::unique_ptr<be::DeviceContext> c;
  ASSERT_TRUE(b->open_context(0, 0, c).ok());
  fake_log();
  void* p = nullptr;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(c->allocate(256, &p).ok());
    ASSERT_TRUE(c->free(p).ok());
  }
  EXPECT_LE(count(fake_log(), "cuCtxSetCurrent"), 1);
  std::thread([&] {
    void* q = nullptr;
    EXPECT_TRUE(c->allocate(256, &q).ok());  // the fake needs a current context for this
    EXPECT_TRUE(c->free(q).ok());
  }).join();
  EXPECT_EQ(count(fake_log(), "cuCtxSetCurrent"), 1);
}

TEST_F(CudaBackend, MemoryCopiesAndFillsMapOntoNvidiasCalls) {
  be::Backend* b = create_fake();
  ASSERT_NE(b, nullptr);
  std::unique_ptr<be::DeviceContext> c;
  ASSERT_TRUE(b->open_context(0, 0, c).ok());
  void* dev = nullptr;
  ASSERT_TRUE(c->allocate(4096, &dev).ok());
  std::size_t free = 0, total = 0;
  ASSERT_TRUE(b->devices().memory_info(0, free, total).ok());
  EXPECT_EQ(total - free, 4096u);
  EXPECT_EQ(c->allocate(std::size_t{2} << 30, &dev).native, CUDA_ERROR_OUT_OF_MEMORY);
  std::unique_ptr<be::Queue> q;
  fake_log();
  ASSERT_TRUE(c->create_queue(0, -2, q).ok());
  EXPECT_THAT(fake_log(), HasSubstr("cuStreamCreateWithPriority 1 -2"));  // non-blocking

  // 1D: host -> device -> host.
  std::vector<unsigned char> src(256), back(256, 0);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i);
  be::CopyDesc d;
  d.dst = dev;
  d.dst_kind = be::MemKind::device;
  d.src = src.data();
  d.width_bytes = d.dst_pitch = d.src_pitch = d.dst_slice = d.src_slice = 256;
  ASSERT_TRUE(q->copy(d).ok());
  d.dst = back.data();
  d.src = dev;
  d.dst_kind = be::MemKind::host_pageable;
  d.src_kind = be::MemKind::device;
  ASSERT_TRUE(q->copy_sync(d).ok());
  EXPECT_EQ(src, back);
  std::string calls = fake_log();
  EXPECT_EQ(count(calls, "cuMemcpyAsync 256"), 2);
  EXPECT_THAT(calls, HasSubstr("cuStreamSynchronize"));

  // 2D: a 4x3 box from a pageable host buffer of pitch 10 into device memory of pitch 16.
  be::CopyDesc box;
  box.dst = dev;
  box.dst_kind = be::MemKind::device;
  box.src = src.data();
  box.width_bytes = 4;
  box.height = 3;
  box.src_pitch = 10;
  box.dst_pitch = 16;
  box.src_slice = 30;
  box.dst_slice = 48;
  ASSERT_TRUE(q->copy(box).ok());
  const auto* bytes = static_cast<const unsigned char*>(dev);  // the fake's "device" is host memory
  EXPECT_EQ(bytes[16 * 2 + 3], 23);
  EXPECT_THAT(fake_log(), HasSubstr("cuMemcpy2DAsync_v2 host->unified"));
  // 3D: two slices; srcHeight/dstHeight come from slice / pitch.
  box.depth = 2;
  ASSERT_TRUE(q->copy(box).ok());
  EXPECT_EQ(bytes[48 + 16 * 1 + 2], 30 + 10 + 2);
  EXPECT_THAT(fake_log(), HasSubstr("cuMemcpy3DAsync_v2 host->unified heights 3,3"));

  // Fills: 2D of 16-bit elements, 1D of 32-bit ones.
  be::FillDesc f;
  f.dst = dev;
  f.value = 0xabcd;
  f.elem_size = 2;
  f.width_elems = 3;
  f.height = 2;
  f.pitch = 16;
  ASSERT_TRUE(q->fill(f).ok());
  EXPECT_EQ(reinterpret_cast<const std::uint16_t*>(bytes + 16)[2], 0xabcd);
  EXPECT_THAT(fake_log(), HasSubstr("cuMemsetD2D16Async 3x2 pitch 16"));
  f.elem_size = 4;
  f.height = 1;
  f.value = 0x01020304;
  ASSERT_TRUE(q->fill(f).ok());
  EXPECT_EQ(reinterpret_cast<const std::uint32_t*>(bytes)[2], 0x01020304u);
  EXPECT_THAT(fake_log(), HasSubstr("cuMemsetD32Async 3x1"));
  q.reset();
  ASSERT_TRUE(c->free(dev).ok());
}

// issue 7: a synchronous pageable host-to-device copy of 64 KiB or more on an idle queue
// is NVIDIA's cuMemcpyHtoD (on NVIDIA's legacy stream), after which the queue's stream
// waits for the legacy stream (the copy may return before its DMA lands); a queue with
// work of its own keeps the async copy on its stream plus a wait for the stream.
TEST_F(CudaBackend, LargePageableUploadsOnAnIdleQueueTakeNvidiasSynchronousCopy) {
  be::Backend* b = create_fake();
  ASSERT_NE(b, nullptr);
  std::unique_ptr<be::DeviceContext> c;
  ASSERT_TRUE(b->open_context(0, 0, c).ok());
  constexpr std::size_t kBig = 128 << 10;
  void* dev = nullptr;
  ASSERT_TRUE(c->allocate(kBig, &dev).ok());
  std::unique_ptr<be::Queue> q;
  ASSERT_TRUE(c->create_queue(0, 0, q).ok());
  struct Idle {  // the fake's streams are idle again whatever happens below
    ~Idle() { fake_busy(false); }
  } idle;

  using Calls = std::map<std::string, unsigned long long>;
  const auto snapshot = [] {
    Calls m;
    for (const char* fn : {"cuMemcpyHtoD_v2", "cuMemcpy2D_v2", "cuMemcpy3D_v2", "cuMemcpyAsync",
                           "cuMemcpy2DAsync_v2", "cuStreamSynchronize", "cuStreamQuery",
                           "cuEventCreate", "cuEventRecord", "cuStreamWaitEvent"})
      m[fn] = std::stoull(fake_calls(fn));
    return m;
  };
  const auto since = [&](const Calls& before) {
    Calls d;
    for (const auto& [fn, n] : snapshot())
      if (n != before.at(fn)) d[fn] = n - before.at(fn);
    return d;
  };

  std::vector<unsigned char> src(kBig);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7);
  be::CopyDesc up;
  up.dst = dev;
  up.dst_kind = be::MemKind::device;
  up.src = src.data();
  up.width_bytes = up.dst_pitch = up.src_pitch = up.dst_slice = up.src_slice = kBig;
  const auto* bytes = static_cast<const unsigned char*>(dev);  // the fake's "device" is host memory

  // Idle queue: one query, then the synchronous copy and the ordering pair (the event
  // created once per queue, without timing).
  fake_log();
  Calls before = snapshot();
  ASSERT_TRUE(q->copy_sync(up).ok());
  EXPECT_EQ(since(before), (Calls{{"cuStreamQuery", 1},
                                  {"cuEventCreate", 1},
                                  {"cuMemcpyHtoD_v2", 1},
                                  {"cuEventRecord", 1},
                                  {"cuStreamWaitEvent", 1}}));
  EXPECT_EQ(std::memcmp(bytes, src.data(), kBig), 0);
  std::string log = fake_log();
  EXPECT_THAT(log, HasSubstr("cuEventCreate 2\n"));  // CU_EVENT_DISABLE_TIMING
  const auto copied = log.find("cuMemcpyHtoD_v2 131072");
  const auto recorded = log.find("cuEventRecord legacy");
  const auto waited = log.find("cuStreamWaitEvent 0");
  ASSERT_NE(waited, std::string::npos) << log;
  EXPECT_LT(copied, recorded) << log;
  EXPECT_LT(recorded, waited) << log;

  // The stream now waits for the copy's DMA (busy), but only for the legacy stream, which
  // the next synchronous copy runs after anyway: no query, same path. An event record on
  // the queue does not count as work the copy must wait for.
  fake_busy(true);
  std::unique_ptr<be::Event> e;
  ASSERT_TRUE(c->create_event(CU_EVENT_DISABLE_TIMING, e).ok());
  ASSERT_TRUE(q->record(*e).ok());
  before = snapshot();
  ASSERT_TRUE(q->copy_sync(up).ok());
  EXPECT_EQ(since(before),
            (Calls{{"cuMemcpyHtoD_v2", 1}, {"cuEventRecord", 1}, {"cuStreamWaitEvent", 1}}));

  // Work of the queue's own in flight (a fill): the copy must follow it on the stream.
  be::FillDesc f;
  f.dst = dev;
  f.width_elems = 16;
  ASSERT_TRUE(q->fill(f).ok());
  before = snapshot();
  ASSERT_TRUE(q->copy_sync(up).ok());
  EXPECT_EQ(since(before),
            (Calls{{"cuStreamQuery", 1}, {"cuMemcpyAsync", 1}, {"cuStreamSynchronize", 1}}));
  EXPECT_EQ(bytes[5], src[5]);  // copied again over the fill's zeros
  // A wait for another event is such work too.
  fake_busy(false);
  before = snapshot();
  ASSERT_TRUE(q->copy_sync(up).ok());  // drained: the synchronous copy again
  EXPECT_EQ(since(before).count("cuMemcpyHtoD_v2"), 1u);
  fake_busy(true);
  ASSERT_TRUE(q->wait(*e).ok());
  before = snapshot();
  ASSERT_TRUE(q->copy_sync(up).ok());
  EXPECT_EQ(since(before),
            (Calls{{"cuStreamQuery", 1}, {"cuMemcpyAsync", 1}, {"cuStreamSynchronize", 1}}));

  // Once the stream has drained, the synchronous copy again (2D here).
  fake_busy(false);
  be::CopyDesc box = up;
  box.width_bytes = 1024;
  box.height = 64;
  box.src_pitch = box.dst_pitch = 2048;
  box.src_slice = box.dst_slice = 2048 * 64;
  before = snapshot();
  ASSERT_TRUE(q->copy_sync(box).ok());
  EXPECT_EQ(since(before), (Calls{{"cuStreamQuery", 1},
                                  {"cuMemcpy2D_v2", 1},
                                  {"cuEventRecord", 1},
                                  {"cuStreamWaitEvent", 1}}));
  EXPECT_THAT(fake_log(), HasSubstr("cuMemcpy2D_v2 host->unified"));
  box.height = 16;
  box.depth = 4;
  box.src_slice = box.dst_slice = 2048 * 16;
  before = snapshot();
  ASSERT_TRUE(q->copy_sync(box).ok());
  EXPECT_EQ(since(before),
            (Calls{{"cuMemcpy3D_v2", 1}, {"cuEventRecord", 1}, {"cuStreamWaitEvent", 1}}));

  // Below 64 KiB, device-to-host, and pinned host memory: the async copy + stream wait.
  be::CopyDesc small = up;
  small.width_bytes = small.dst_pitch = small.src_pitch = small.dst_slice = small.src_slice =
      (64 << 10) - 1;
  be::CopyDesc down = up;
  std::vector<unsigned char> back(kBig);
  down.dst = back.data();
  down.dst_kind = be::MemKind::host_pageable;
  down.src = dev;
  down.src_kind = be::MemKind::device;
  be::CopyDesc pinned = up;
  pinned.src_kind = be::MemKind::host_pinned;
  for (const be::CopyDesc* d : {&small, &down, &pinned}) {
    before = snapshot();
    ASSERT_TRUE(q->copy_sync(*d).ok());
    EXPECT_EQ(since(before), (Calls{{"cuMemcpyAsync", 1}, {"cuStreamSynchronize", 1}}));
  }
  EXPECT_EQ(back, src);
  e.reset();
  q.reset();
  ASSERT_TRUE(c->free(dev).ok());
}

// NVIDIA's name for an error code is asked once per code: the core maps every failed
// status, CUDA_ERROR_NOT_READY of each query of a busy stream included.
TEST_F(CudaBackend, ErrorCodesAreCheckedWithNvidiaOncePerCode) {
  be::Backend* b = create_fake();
  ASSERT_NE(b, nullptr);
  const std::string before = fake_calls("cuGetErrorName");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(b->errors().to_cuda(CUDA_ERROR_NOT_READY), CUDA_ERROR_NOT_READY);
    EXPECT_EQ(b->errors().to_cuda(123456), std::nullopt);  // no name: no CUDA counterpart
    EXPECT_EQ(b->errors().to_cuda(700), std::nullopt);     // unnamed by the fake, kept so
  }
  // 123456 is beyond the kept range and is asked each time.
  EXPECT_EQ(std::stoull(fake_calls("cuGetErrorName")) - std::stoull(before), 2u + 3u);
}

TEST_F(CudaBackend, EventsHostFunctionsAndNotReadyPassThrough) {
  be::Backend* b = create_fake();
  ASSERT_NE(b, nullptr);
  std::unique_ptr<be::DeviceContext> c;
  ASSERT_TRUE(b->open_context(0, 0, c).ok());
  std::unique_ptr<be::Queue> q;
  ASSERT_TRUE(c->create_queue(CU_STREAM_NON_BLOCKING, 0, q).ok());
  std::unique_ptr<be::Event> timed, untimed;
  ASSERT_TRUE(c->create_event(CU_EVENT_DEFAULT, timed).ok());
  ASSERT_TRUE(c->create_event(CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC, untimed).ok());
  EXPECT_THAT(fake_log(), HasSubstr("cuEventCreate 3"));
  ASSERT_TRUE(q->record(*timed).ok());
  ASSERT_TRUE(q->record(*untimed).ok());
  ASSERT_TRUE(q->wait(*untimed).ok());
  float ms = -1;
  EXPECT_TRUE(timed->elapsed_since(*timed, ms).ok());
  EXPECT_EQ(ms, 0.0f);
  EXPECT_EQ(untimed->elapsed_since(*timed, ms).native,
            CUDA_ERROR_INVALID_HANDLE);  // NVIDIA's answer
  int calls = 0;
  ASSERT_TRUE(q->host_function([](void* p) { ++*static_cast<int*>(p); }, &calls).ok());
  EXPECT_EQ(calls, 1);
  EXPECT_THAT(fake_log(), AllOf(HasSubstr("cuStreamWaitEvent 0"), HasSubstr("cuLaunchHostFunc")));
  fake_busy(true);
  EXPECT_EQ(q->query().native, CUDA_ERROR_NOT_READY);
  EXPECT_EQ(timed->query().native, CUDA_ERROR_NOT_READY);
  fake_busy(false);
  EXPECT_TRUE(q->query().ok());
  EXPECT_TRUE(c->synchronize().ok());
}

TEST_F(CudaBackend, HostMemoryPassesFlagsThrough) {
  be::Backend* b = create_fake();
  ASSERT_NE(b, nullptr);
  std::unique_ptr<be::DeviceContext> c;
  ASSERT_TRUE(b->open_context(0, 0, c).ok());
  fake_log();
  void* h = nullptr;
  ASSERT_TRUE(c->allocate_host(100, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP, &h).ok());
  void* d = nullptr;
  ASSERT_TRUE(c->host_device_pointer(h, &d).ok());
  EXPECT_EQ(static_cast<char*>(d), static_cast<char*>(h) + 0x1000);  // NVIDIA's address, not ours
  ASSERT_TRUE(c->free_host(h).ok());
  std::vector<char> buf(4096);
  ASSERT_TRUE(c->register_host(buf.data(), buf.size(), CU_MEMHOSTREGISTER_PORTABLE).ok());
  ASSERT_TRUE(c->unregister_host(buf.data()).ok());
  ASSERT_TRUE(c->allocate_managed(64, CU_MEM_ATTACH_GLOBAL, &d).ok());
  ASSERT_TRUE(c->free_managed(d).ok());
  EXPECT_THAT(fake_log(),
              AllOf(HasSubstr("cuMemHostAlloc 100 3"), HasSubstr("cuMemHostRegister_v2 4096 1"),
                    HasSubstr("cuMemHostUnregister"), HasSubstr("cuMemAllocManaged 1")));
}

// --- modules and launches (issue 7) ---

// The fake driver's module format (fake_nvidia.cpp): saxpy(int n, float a, float* x, float* y).
constexpr char kFakeImage[] =
    "fake-module\nfunction saxpy 4@0 4@4 8@8 8@16\nfunction empty\nglobal counter 16\n";

TEST_F(CudaBackend, ModulesMapOntoNvidiasCalls) {
  be::Backend* b = create_fake();
  ASSERT_NE(b, nullptr);
  std::unique_ptr<be::DeviceContext> c;
  ASSERT_TRUE(b->open_context(1, 0, c).ok());
  fake_log();
  std::unique_ptr<be::Module> m;
  ASSERT_TRUE(c->load_module(be::native_image(kFakeImage), m).ok());
  EXPECT_THAT(fake_log(),
              HasSubstr("cuModuleLoadData " + std::to_string(sizeof kFakeImage - 1) + " bytes"));
  // NVIDIA's answer to an image it does not recognise passes through.
  std::unique_ptr<be::Module> bad;
  EXPECT_EQ(c->load_module(be::native_image("not a module"), bad).native, CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(bad, nullptr);

  be::Function* f = m->function("saxpy");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->name(), "saxpy");
  EXPECT_EQ(m->function("saxpy"), f);  // one object per name
  EXPECT_EQ(count(fake_log(), "cuModuleGetFunction saxpy"), 1);
  EXPECT_EQ(m->function("missing"), nullptr);
  const auto& params = f->params();
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[1].offset, 4u);
  EXPECT_EQ(params[2].offset, 8u);
  EXPECT_EQ(params[3].size, 8u);
  EXPECT_TRUE(m->function("empty")->params().empty());
  int v = 0;
  ASSERT_TRUE(f->attribute(CU_FUNC_ATTRIBUTE_NUM_REGS, v).ok());
  EXPECT_EQ(v, 42);
  EXPECT_EQ(f->attribute(CU_FUNC_ATTRIBUTE_PTX_VERSION, v).native, CUDA_ERROR_INVALID_VALUE);

  void* address = nullptr;
  std::size_t bytes = 0;
  ASSERT_TRUE(m->global("counter", address, bytes));
  EXPECT_NE(address, nullptr);
  EXPECT_EQ(bytes, 16u);
  EXPECT_FALSE(m->global("nothing", address, bytes));
  EXPECT_THAT(m->function_names(), ::testing::ElementsAre("saxpy", "empty"));
  m.reset();
  EXPECT_THAT(fake_log(), HasSubstr("cuModuleUnload"));
}

TEST_F(CudaBackend, LaunchesPassThePackedArgumentsAsKernelParams) {
  be::Backend* b = create_fake();
  ASSERT_NE(b, nullptr);
  std::unique_ptr<be::DeviceContext> c;
  ASSERT_TRUE(b->open_context(0, 0, c).ok());
  std::unique_ptr<be::Module> m;
  ASSERT_TRUE(c->load_module(be::native_image(kFakeImage), m).ok());
  std::unique_ptr<be::Queue> q;
  ASSERT_TRUE(c->create_queue(0, 0, q).ok());
  be::Function* saxpy = m->function("saxpy");
  ASSERT_NE(saxpy, nullptr);

  std::vector<float> x = {1, 2, 3, 4}, y = {10, 20, 30, 40};
  const int n = 4;
  const float a = 3;
  float* xp = x.data();
  float* yp = y.data();
  // Packed as the core packs them, per params().
  std::array<unsigned char, 24> args{};
  std::memcpy(args.data(), &n, 4);
  std::memcpy(args.data() + 4, &a, 4);
  std::memcpy(args.data() + 8, &xp, 8);
  std::memcpy(args.data() + 16, &yp, 8);
  be::LaunchDesc d;
  d.function = saxpy;
  d.grid[0] = 2;
  d.grid[2] = 3;
  d.block[0] = 128;
  d.block[1] = 2;
  d.args = args.data();
  d.args_size = args.size();
  fake_log();
  ASSERT_TRUE(q->launch(d).ok());
  EXPECT_EQ(y, (std::vector<float>{13, 26, 39, 52}));  // the fake ran it with our pointers
  EXPECT_THAT(fake_log(), HasSubstr("cuLaunchKernel saxpy grid 2,1,3 block 128,2,1 shared 0 "
                                    "extra no params 04000000 00004040"));

  d.cooperative = true;
  ASSERT_TRUE(q->launch(d).ok());
  EXPECT_THAT(fake_log(), HasSubstr("cuLaunchCooperativeKernel saxpy grid 2,1,3"));
  d.cooperative = false;

  // Above 48 KiB of dynamic shared memory NVIDIA refuses until told; set_attribute tells it.
  d.shared_bytes = 64 * 1024;
  EXPECT_EQ(q->launch(d).native, CUDA_ERROR_INVALID_VALUE);
  ASSERT_TRUE(
      saxpy->set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024).ok());
  EXPECT_THAT(fake_log(), HasSubstr("cuFuncSetAttribute 8 65536"));
  EXPECT_TRUE(q->launch(d).ok());
  // Attributes are asked of NVIDIA once, and again after a set_attribute.
  fake_log();
  int v = 0;
  ASSERT_TRUE(saxpy->attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, v).ok());
  ASSERT_TRUE(saxpy->attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, v).ok());
  EXPECT_EQ(v, 64 * 1024);
  EXPECT_EQ(count(fake_log(), "cuFuncGetAttribute 8"), 1);
  EXPECT_EQ(saxpy->set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1 << 20).native,
            CUDA_ERROR_INVALID_VALUE);  // NVIDIA's refusal passes through
  ASSERT_TRUE(saxpy->set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1000).ok());
  ASSERT_TRUE(saxpy->attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, v).ok());
  EXPECT_EQ(v, 1000);

  be::LaunchDesc none;  // no parameters: kernelParams stays null
  none.function = m->function("empty");
  ASSERT_TRUE(q->launch(none).ok());
  EXPECT_THAT(fake_log(), HasSubstr("cuLaunchKernel empty grid 1,1,1 block 1,1,1 shared 0 extra no "
                                    "params\n"));
}

// Occupancy and context limits are NVIDIA's own answers (cuBLAS picks its kernels by the
// cluster occupancy; the device heap and stack are sized by the limits), not the core's model.
TEST_F(CudaBackend, OccupancyAndLimitsAreNvidias) {
  be::Backend* b = create_fake();
  ASSERT_NE(b, nullptr);
  std::unique_ptr<be::DeviceContext> c;
  ASSERT_TRUE(b->open_context(0, 0, c).ok());
  std::unique_ptr<be::Module> m;
  ASSERT_TRUE(c->load_module(be::native_image(kFakeImage), m).ok());
  be::Function* f = m->function("saxpy");
  ASSERT_NE(f, nullptr);
  fake_log();

  be::OccupancyQuery q;
  q.kind = be::OccupancyKind::active_blocks;
  q.block_size = 256;
  q.dyn_shared = 4096;
  q.flags = CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE;
  std::size_t value = 0;
  be::Status st;
  ASSERT_TRUE(f->occupancy(q, value, st));
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(value, 7u);
  EXPECT_THAT(fake_log(),
              HasSubstr("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags saxpy 256 4096 1\n"));
  q.block_size = 2048;  // NVIDIA's refusal passes through
  ASSERT_TRUE(f->occupancy(q, value, st));
  EXPECT_EQ(st.native, CUDA_ERROR_INVALID_VALUE);

  q.kind = be::OccupancyKind::available_dynamic_shared;
  q.block_size = 128;
  q.num_blocks = 3;
  ASSERT_TRUE(f->occupancy(q, value, st));
  EXPECT_EQ(value, 12345u);
  EXPECT_THAT(fake_log(), HasSubstr("cuOccupancyAvailableDynamicSMemPerBlock 3 128\n"));

  CUlaunchAttribute cluster{};
  cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster.value.clusterDim.x = 2;
  cluster.value.clusterDim.y = cluster.value.clusterDim.z = 1;
  CUlaunchConfig config{};
  config.gridDimX = 8;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 384;
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = 200 * 1024;
  config.attrs = &cluster;
  config.numAttrs = 1;
  q = {};
  q.kind = be::OccupancyKind::active_clusters;
  q.config = &config;
  ASSERT_TRUE(f->occupancy(q, value, st));
  EXPECT_EQ(value, 11u);
  q.kind = be::OccupancyKind::potential_cluster_size;
  ASSERT_TRUE(f->occupancy(q, value, st));
  EXPECT_EQ(value, 16u);
  const std::string log = fake_log();
  EXPECT_THAT(log, HasSubstr("cuOccupancyMaxActiveClusters block 384 shared 204800 cluster 2 no "
                             "stream\n"));
  EXPECT_THAT(log, HasSubstr("cuOccupancyMaxPotentialClusterSize block 384 shared 204800 cluster "
                             "2 no stream\n"));

  std::size_t limit = 0;
  ASSERT_TRUE(c->get_limit(CU_LIMIT_MALLOC_HEAP_SIZE, limit, st));
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(limit, 1002u);  // the fake driver's default, so NVIDIA's record is the one read
  ASSERT_TRUE(c->set_limit(CU_LIMIT_MALLOC_HEAP_SIZE, 64u << 20, st));
  EXPECT_TRUE(st.ok());
  ASSERT_TRUE(c->get_limit(CU_LIMIT_MALLOC_HEAP_SIZE, limit, st));
  EXPECT_EQ(limit, 64u << 20);
  ASSERT_TRUE(c->set_limit(CU_LIMIT_STACK_SIZE, 1u << 30, st));
  EXPECT_EQ(st.native, CUDA_ERROR_INVALID_VALUE);
  EXPECT_THAT(fake_log(), HasSubstr("cuCtxSetLimit 2 67108864\n"));
}

// Stream attributes reach NVIDIA's stream (the L2 access policy window acts there).
TEST_F(CudaBackend, StreamAttributesReachNvidiasStream) {
  be::Backend* b = create_fake();
  ASSERT_NE(b, nullptr);
  std::unique_ptr<be::DeviceContext> c;
  ASSERT_TRUE(b->open_context(0, 0, c).ok());
  std::unique_ptr<be::Queue> q;
  ASSERT_TRUE(c->create_queue(0, 0, q).ok());
  fake_log();
  CUlaunchAttributeValue v{};
  v.syncPolicy = CU_SYNC_POLICY_YIELD;
  ASSERT_TRUE(q->set_attribute(CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, v).ok());
  EXPECT_THAT(fake_log(), HasSubstr("cuStreamSetAttribute 3 first word 3\n"));
  v.syncPolicy = static_cast<CUsynchronizationPolicy>(9);  // NVIDIA's refusal passes through
  EXPECT_EQ(q->set_attribute(CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, v).native,
            CUDA_ERROR_INVALID_VALUE);
}

// Thread block clusters go to NVIDIA's cuLaunchKernelEx with the cluster attribute (and the
// cooperative one when asked); launches without a cluster keep cuLaunchKernel.
TEST_F(CudaBackend, ClusterLaunchesUseCuLaunchKernelEx) {
  be::Backend* b = create_fake();
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->launches_clusters());  // the fake driver exports cuLaunchKernelEx
  std::unique_ptr<be::DeviceContext> c;
  ASSERT_TRUE(b->open_context(0, 0, c).ok());
  std::unique_ptr<be::Module> m;
  ASSERT_TRUE(c->load_module(be::native_image(kFakeImage), m).ok());
  std::unique_ptr<be::Queue> q;
  ASSERT_TRUE(c->create_queue(0, 0, q).ok());
  std::vector<float> x = {1, 2}, y = {10, 20};
  const int n = 2;
  const float a = 2;
  float* xp = x.data();
  float* yp = y.data();
  std::array<unsigned char, 24> args{};
  std::memcpy(args.data(), &n, 4);
  std::memcpy(args.data() + 4, &a, 4);
  std::memcpy(args.data() + 8, &xp, 8);
  std::memcpy(args.data() + 16, &yp, 8);
  be::LaunchDesc d;
  d.function = m->function("saxpy");
  ASSERT_NE(d.function, nullptr);
  d.grid[0] = 4;
  d.grid[2] = 6;
  d.block[0] = 64;
  d.shared_bytes = 128;
  d.cluster[0] = 2;
  d.cluster[2] = 3;
  d.args = args.data();
  d.args_size = args.size();
  fake_log();
  ASSERT_TRUE(q->launch(d).ok());
  EXPECT_EQ(y, (std::vector<float>{12, 24}));  // ran once, with our arguments
  std::string log = fake_log();
  EXPECT_THAT(log, HasSubstr("cuLaunchKernelEx attrs cluster 2,1,3 stream\n"));
  EXPECT_THAT(log, HasSubstr("cuLaunchKernelEx saxpy grid 4,1,6 block 64,1,1 shared 128 extra no "
                             "params 02000000 00000040"));
  EXPECT_EQ(count(log, "cuLaunchKernel "), 0);

  d.cooperative = true;
  ASSERT_TRUE(q->launch(d).ok());
  log = fake_log();
  EXPECT_THAT(log, HasSubstr("cuLaunchKernelEx attrs cluster 2,1,3 cooperative 1 stream\n"));
  EXPECT_EQ(count(log, "cuLaunchCooperativeKernel"), 0);

  // 1x1x1 is no cluster: the plain entry points, as before.
  d.cluster[0] = d.cluster[2] = 1;
  ASSERT_TRUE(q->launch(d).ok());
  d.cooperative = false;
  ASSERT_TRUE(q->launch(d).ok());
  log = fake_log();
  EXPECT_EQ(count(log, "cuLaunchKernelEx"), 0);
  EXPECT_THAT(log, HasSubstr("cuLaunchCooperativeKernel saxpy grid 4,1,6"));
  EXPECT_THAT(log, HasSubstr("cuLaunchKernel saxpy grid 4,1,6"));
  EXPECT_EQ(y, (std::vector<float>{18, 36}));  // four launches in all
}

// --- through our libcuda.so.1, in a child process ---

struct ProbeRun {
  std::string output;
};

ProbeRun run_probe(const std::string& config_text, const std::string& log_level = "info",
                   const std::string& args = "", const char* program = "cuda_backend_probe") {
  TempDir t;
  const auto config = t.write("cudamux.toml", "backend = \"cuda\"\n[cuda]\n" + config_text);
  const std::string cmd =
      "CUDAMUX_BACKEND=cuda CUDAMUX_PLUGIN_PATH= CUDAMUX_LOG_LEVEL=" + log_level +
      " CUDAMUX_CONFIG=" + config.string() + " " + (exe_dir() / program).string() + " " + args +
      " 2>&1";
  ProbeRun run;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return run;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) run.output.append(buf.data(), n);
  ::pclose(p);
  return run;
}

TEST(ThroughLibcuda, NoDriverReportsNoDeviceCleanly) {
  const ProbeRun r = run_probe("search_path = [\"/nonexistent-cudamux-dir\"]\n");
  EXPECT_THAT(r.output,
              AllOf(HasSubstr("cuInit CUDA_ERROR_NO_DEVICE"), HasSubstr("no NVIDIA driver found"),
                    HasSubstr("/nonexistent-cudamux-dir/libcuda.so.1: does not exist")));
}

TEST(ThroughLibcuda, FakeDriverFoundInTheSearchPathRunsAProgram) {
  // Our own lib folder first: its libcuda.so.1 is the one this process runs on.
  const ProbeRun r = run_probe("search_path = [\"" + lib_dir().string() + "\", \"" +
                                   standin("notnvidia").parent_path().string() + "\", \"" +
                                   standin("fake").parent_path().string() + "\"]\n",
                               "debug");
  EXPECT_THAT(r.output, AllOf(HasSubstr("cuInit CUDA_SUCCESS"), HasSubstr("devices 2"),
                              HasSubstr("name Fake NVIDIA H100 #100"), HasSubstr("roundtrip ok"),
                              HasSubstr("cuCtxDestroy CUDA_SUCCESS"), HasSubstr("cudamux's own"),
                              HasSubstr("is not NVIDIA's driver")));
}

TEST(ThroughLibcuda, BrokenDriverFailsCuInitNamingFileAndError) {
  const ProbeRun r = run_probe("driver = \"" + standin("broken").string() + "\"\n");
  EXPECT_THAT(r.output, AllOf(HasSubstr("cuInit CUDA_ERROR_SHARED_OBJECT_INIT_FAILED"),
                              HasSubstr(standin("broken").string()),
                              HasSubstr("CUDA_ERROR_SYSTEM_DRIVER_MISMATCH")));
}

TEST(ThroughLibcuda, KernelsLoadAndLaunchThroughTheCore) {
  const ProbeRun r =
      run_probe("driver = \"" + standin("fake").string() + "\"\n", "info", "kernels");
  EXPECT_THAT(r.output,
              AllOf(HasSubstr("cuModuleLoadData CUDA_SUCCESS"),
                    HasSubstr("cuModuleGetFunction CUDA_SUCCESS"),
                    HasSubstr("cuModuleGetFunction missing CUDA_ERROR_NOT_FOUND"),
                    HasSubstr("cuFuncGetParamInfo 3 CUDA_SUCCESS 16 8"),
                    // The core refuses above 48 KiB until the attribute is raised...
                    HasSubstr("cuLaunchKernel 65536 before set CUDA_ERROR_INVALID_VALUE"),
                    // ...and raising it reaches NVIDIA's driver, whose launch then succeeds.
                    HasSubstr("cuFuncSetAttribute CUDA_SUCCESS"),
                    HasSubstr("cuLaunchKernel 65536 CUDA_SUCCESS"),
                    HasSubstr("cuLaunchKernel extra CUDA_SUCCESS"),
                    // Clusters reach NVIDIA's cuLaunchKernelEx (saxpy ok counts its run);
                    // one that does not divide the grid stops in the core.
                    HasSubstr("cuLaunchKernelEx cluster CUDA_SUCCESS"),
                    HasSubstr("cuLaunchKernelEx cluster 3 CUDA_ERROR_INVALID_CLUSTER_SIZE"),
                    HasSubstr("saxpy ok"), HasSubstr("cuModuleUnload CUDA_SUCCESS")))
      << r.output;
}

// issue 7: in steady state a launch (on a non-blocking or the legacy stream) and a stream
// query reach NVIDIA's driver once each: no attribute queries, context switches or
// marker events on the way (bench/bench_passthrough.cpp measures the time).
TEST(ThroughLibcuda, SteadyLaunchesAndQueriesCallTheDriverOnceEach) {
  const ProbeRun r = run_probe("driver = \"" + standin("fake").string() + "\"\n", "info",
                               "steady " + standin("fake").string());
  EXPECT_THAT(r.output, HasSubstr("steady CUDA_SUCCESS")) << r.output;
  std::istringstream in(r.output);
  std::map<std::string, unsigned long long> calls;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string tag, fn;
    unsigned long long n = 0;
    if (words >> tag >> fn >> n && tag == "calls") calls[fn] = n;
  }
  EXPECT_EQ(calls, (std::map<std::string, unsigned long long>{{"cuLaunchKernel", 200},
                                                              {"cuStreamQuery", 100}}))
      << r.output;
}

// issue 16: cuMemAllocAsync and cuMemPool* reach NVIDIA's own pools (its sub-allocation,
// counters and sharing), with the program's device numbers as NVIDIA's and the core's registry
// still knowing the memory (copies, the pointer's pool).
TEST(ThroughLibcuda, StreamOrderedPoolsAreNvidias) {
  const ProbeRun r = run_probe("driver = \"" + standin("fake").string() + "\"\n", "info",
                               "pools " + standin("fake").string());
  EXPECT_THAT(
      r.output,
      AllOf(
          HasSubstr("pools alloc CUDA_SUCCESS"), HasSubstr("pools roundtrip ok"),
          HasSubstr("pools handle matches"),
          // NVIDIA's counter (the core's own pools would say 1024: blocks of 512 bytes).
          HasSubstr("pools used 1000\n"), HasSubstr("pools free CUDA_SUCCESS"),
          HasSubstr("pools used after free 0\n"), HasSubstr("pools threshold 1048576"),
          HasSubstr("fake: cuDeviceGetDefaultMemPool 100"),
          HasSubstr("fake: cuMemAllocFromPoolAsync 1000 location 1:100"),
          HasSubstr("pools create CUDA_SUCCESS"),
          HasSubstr("fake: cuMemPoolCreate location 1:100 type 1 handles 1 maxSize 1048576"),
          HasSubstr("pools set access CUDA_SUCCESS"),
          HasSubstr("fake: cuMemPoolSetAccess location 1:101 flags 3"),
          HasSubstr("pools access of device 1 3"), HasSubstr("pools alloc from pool CUDA_SUCCESS"),
          // NVIDIA's maxSize rule, answered by NVIDIA.
          HasSubstr("pools beyond maxSize CUDA_ERROR_OUT_OF_MEMORY"),
          HasSubstr("pools export CUDA_SUCCESS"), HasSubstr("pools import CUDA_SUCCESS"),
          HasSubstr("fake: cuMemPoolImportFromShareableHandle"),
          HasSubstr("pools export pointer CUDA_SUCCESS"),
          HasSubstr("pools import pointer CUDA_SUCCESS same"),
          HasSubstr("pools free import CUDA_SUCCESS"), HasSubstr("pools cuMemFree CUDA_SUCCESS"),
          HasSubstr("fake: cuMemFree_v2 pool"), HasSubstr("pools destroy CUDA_SUCCESS"),
          HasSubstr("fake: cuMemPoolDestroy"), HasSubstr("pools host default CUDA_SUCCESS"),
          HasSubstr("fake: cuMemGetDefaultMemPool location 2:0 type 1"),
          HasSubstr("pools host alloc CUDA_SUCCESS"), HasSubstr("pools cuCtxDestroy CUDA_SUCCESS")))
      << r.output;
  // The stream-ordered frees were NVIDIA's, and the host pool's block went through
  // NVIDIA's cuMemFree with its context (not cuMemFreeHost, which refuses pool memory).
  EXPECT_EQ(count(r.output, "fake: cuMemFreeAsync"), 2) << r.output;
  EXPECT_EQ(count(r.output, "fake: import released"), 1) << r.output;
  EXPECT_EQ(count(r.output, "fake: cuMemFree_v2 pool"), 2) << r.output;
}

// --- NVIDIA's real driver ---

TEST(RealDriver, ProgramRunsOnNvidiasDriverThroughCudamux) {
  const cu::SearchResult found = cu::search_driver(cu::default_search_dirs());
  if (!found.driver) GTEST_SKIP() << "no NVIDIA driver found";
  const ProbeRun r = run_probe("driver = \"" + found.driver->path + "\"\n");
  EXPECT_THAT(r.output, AllOf(HasSubstr("cuInit CUDA_SUCCESS"), HasSubstr("roundtrip ok"),
                              Not(HasSubstr("BAD"))));
  std::printf("%s", r.output.c_str());
}

// --- NVIDIA's NVRTC (issue 7): it needs no GPU, so these run wherever the toolkit is ---

TEST(NvrtcOptions, CompileOptionsBecomeNvrtcsLongOptions) {
  be::CompileOptions o;
  o.arch = 90;
  o.real_arch = true;
  o.fmad = false;
  o.device_debug = o.line_info = o.default_device = o.relocatable = true;
  o.std = "c++17";
  o.defines = {{"N", "4"}, {"EMPTY", ""}};
  o.undefines = {"OLD"};
  o.include_paths = {"/inc"};
  o.pre_includes = {"pre.h"};
  o.extra = {"--maxrregcount=32", "--ftz=true"};
  EXPECT_EQ(
      cu::nvrtc_options(o),
      (std::vector<std::string>{
          "--gpu-architecture=sm_90", "--fmad=false", "--device-debug", "--generate-line-info",
          "--device-as-default-execution-space", "--relocatable-device-code=true", "--std=c++17",
          "--define-macro=N=4", "--define-macro=EMPTY=", "--undefine-macro=OLD",
          "--include-path=/inc", "--pre-include=pre.h", "--maxrregcount=32", "--ftz=true"}));
  // An architecture variant arrives spelled out in extra and replaces the plain one.
  be::CompileOptions variant;
  variant.arch = 90;
  variant.extra = {"--gpu-architecture=sm_90a"};
  EXPECT_EQ(cu::nvrtc_options(variant), (std::vector<std::string>{"--gpu-architecture=sm_90a"}));
  EXPECT_TRUE(cu::nvrtc_options(be::CompileOptions{}).empty());  // NVRTC's defaults
}

TEST(NvrtcLocator, SkipsOursAndNonNvrtcThenFindsNvidias) {
  std::string error;
  EXPECT_EQ(cu::elf_has_section(our_libnvrtc().string(), cu::kNvrtcIdentitySection, error), true)
      << error;
  TempDir t;
  fs::create_directories(t.path() / "copy");
  fs::copy_file(our_libnvrtc(), t.path() / "copy/libnvrtc.so.13");
  std::vector<std::string> dirs = {(t.path() / "copy").string(),
                                   standin("notnvidia").parent_path().string()};
  const cu::NvrtcSearchResult none = cu::search_nvrtc(dirs);
  EXPECT_FALSE(none.nvrtc.has_value());
  ASSERT_EQ(none.tried.size(), 2u);
  EXPECT_THAT(none.tried[0], HasSubstr("cudamux's own libnvrtc.so.13"));
  EXPECT_THAT(none.tried[1], HasSubstr("is not NVIDIA's NVRTC: it does not export"));
  const cu::NvrtcSearchResult real = cu::search_nvrtc(cu::default_nvrtc_search_dirs());
  if (!real.nvrtc) GTEST_SKIP() << "no NVIDIA NVRTC found (no CUDA toolkit here)";
  EXPECT_EQ(cu::elf_has_section(real.nvrtc->path, cu::kNvrtcIdentitySection, error), false);
}

TEST(NvrtcLocator, DefaultFoldersIncludeTheToolkit) {
  const auto dirs = cu::default_nvrtc_search_dirs();
  EXPECT_THAT(dirs, ::testing::Contains("/usr/local/cuda/lib64"));
  EXPECT_EQ(dirs.back(), "/usr/lib64");
}

class NvidiaNvrtc : public CudaBackend {
 protected:
  // A backend without a driver (none is needed to compile), with NVIDIA's NVRTC.
  be::Compiler* compiler() {
    const cu::NvrtcSearchResult found = cu::search_nvrtc(cu::default_nvrtc_search_dirs());
    if (!found.nvrtc) return nullptr;
    be::Backend* b = create("search_path = [\"/nonexistent-cudamux-dir\"]\nnvrtc = \"" +
                            found.nvrtc->path + "\"\n");
    return b ? b->compiler() : nullptr;
  }
  static be::CompileRequest request(std::string_view source) {
    be::CompileRequest r;
    r.source = source;
    r.name = "saxpy.cu";
    r.options.arch = 90;
    return r;
  }
};

constexpr std::string_view kSaxpy = R"(
#include "scale.h"
template <typename T>
__global__ void axpy(T a, const T* x, T* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = SCALE * a * x[i] + y[i];
}
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = SCALE * a * x[i] + y[i];
}
)";

TEST_F(NvidiaNvrtc, CompilesSaxpyToPtxWithHeadersDefinesAndNameExpressions) {
  be::Compiler* c = compiler();
  if (!c) GTEST_SKIP() << "no NVIDIA NVRTC found (no CUDA toolkit here)";
  const auto archs = c->supported_archs();
  EXPECT_THAT(archs, ::testing::Contains(90));
  EXPECT_TRUE(std::is_sorted(archs.begin(), archs.end()));
  be::CompileRequest r = request(kSaxpy);
  r.headers = {
      {"scale.h", "#ifndef FACTOR\n#error FACTOR not defined\n#endif\n#define SCALE FACTOR\n"}};
  r.options.defines = {{"FACTOR", "2.0f"}};
  r.name_expressions = {"axpy<float>", "&axpy<double>"};
  be::CompileResult out;
  ASSERT_TRUE(c->compile(r, out).ok()) << out.log;
  ASSERT_TRUE(out.success) << out.log;
  const std::string ptx(out.image.begin(), out.image.end());
  ASSERT_FALSE(ptx.empty());
  EXPECT_EQ(ptx.back(), '\0');  // self-delimiting for cuModuleLoadData
  EXPECT_THAT(ptx, AllOf(HasSubstr(".target sm_90"), HasSubstr(".entry saxpy(")));
  EXPECT_TRUE(out.cubin.empty());  // compute_90: no CUBIN
  ASSERT_EQ(out.lowered_names.size(), 2u);
  EXPECT_EQ(out.lowered_names[0].first, "axpy<float>");
  EXPECT_EQ(out.lowered_names[0].second, "_Z4axpyIfEvT_PKS0_PS0_i");
  EXPECT_EQ(out.lowered_names[1].second, "_Z4axpyIdEvT_PKS0_PS0_i");
  EXPECT_THAT(ptx, HasSubstr(".entry " + out.lowered_names[0].second));
}

TEST_F(NvidiaNvrtc, RealArchitectureGivesACubin) {
  be::Compiler* c = compiler();
  if (!c) GTEST_SKIP() << "no NVIDIA NVRTC found (no CUDA toolkit here)";
  be::CompileRequest r = request("extern \"C\" __global__ void k(int* p) { *p = 7; }");
  r.options.real_arch = true;
  be::CompileResult out;
  ASSERT_TRUE(c->compile(r, out).ok()) << out.log;
  ASSERT_TRUE(out.success) << out.log;
  ASSERT_GT(out.cubin.size(), 4u);
  EXPECT_EQ(std::string(out.cubin.begin(), out.cubin.begin() + 4),
            "\x7f"
            "ELF");
  ASSERT_FALSE(out.image.empty());
}

TEST_F(NvidiaNvrtc, ProgramErrorsAreAFailedResultWithNvidiasLog) {
  be::Compiler* c = compiler();
  if (!c) GTEST_SKIP() << "no NVIDIA NVRTC found (no CUDA toolkit here)";
  be::CompileRequest r = request("__global__ void k() { undeclared_function(); }\n");
  r.name = "broken.cu";
  be::CompileResult out;
  ASSERT_TRUE(c->compile(r, out).ok());
  EXPECT_FALSE(out.success);
  EXPECT_THAT(out.log, AllOf(HasSubstr("broken.cu(1)"), HasSubstr("undeclared_function")));
  EXPECT_TRUE(out.image.empty());
  // A missing header is a compile error too (nothing of ours is searched).
  be::CompileRequest missing = request("#include \"nowhere.h\"\n");
  be::CompileResult out2;
  ASSERT_TRUE(c->compile(missing, out2).ok());
  EXPECT_FALSE(out2.success);
  EXPECT_THAT(out2.log, HasSubstr("nowhere.h"));
}

TEST_F(CudaBackend, NoNvrtcMeansNoCompilerAndSaysWhereItLooked) {
  TempDir t;
  be::Backend* b =
      create("search_path = [\"/nonexistent-cudamux-dir\"]\nnvrtc_search_path = [\"" +
             t.path().string() + "\", \"" + standin("notnvidia").parent_path().string() + "\"]\n");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->compiler(), nullptr);
  EXPECT_EQ(b->compiler(), nullptr);  // looked for once
  EXPECT_EQ(count(log_.str(), "no NVIDIA NVRTC found"), 1);
  EXPECT_THAT(log_.str(),
              AllOf(HasSubstr((t.path() / "libnvrtc.so.13").string() + ": does not exist"),
                    HasSubstr("is not NVIDIA's NVRTC")));
  std::string error;
  EXPECT_EQ(create("nvrtc = \"relative/libnvrtc.so.13\"", &error), nullptr);
  EXPECT_THAT(error, HasSubstr("test.toml:1:9: [cuda] key 'nvrtc': \"relative/libnvrtc.so.13\" is "
                               "not an absolute path"));
  be::Backend* ours = create("search_path = []\nnvrtc = \"" + our_libnvrtc().string() + "\"");
  ASSERT_NE(ours, nullptr);
  EXPECT_EQ(ours->compiler(), nullptr);
  EXPECT_THAT(log_.str(), HasSubstr("cudamux's own libnvrtc.so.13"));
}

TEST(ThroughLibnvrtc, OurLibnvrtcCompilesWithNvidiasNvrtcOnTheCudaBackend) {
  const cu::NvrtcSearchResult found = cu::search_nvrtc(cu::default_nvrtc_search_dirs());
  if (!found.nvrtc) GTEST_SKIP() << "no NVIDIA NVRTC found (no CUDA toolkit here)";
  // No driver at all: NVRTC needs none (cuInit is never called).
  const ProbeRun r = run_probe(
      "search_path = [\"/nonexistent-cudamux-dir\"]\nnvrtc = \"" + found.nvrtc->path + "\"\n",
      "info", "", "cuda_backend_nvrtc_probe");
  EXPECT_THAT(r.output,
              AllOf(HasSubstr("compile NVRTC_SUCCESS"), HasSubstr("ptx entry saxpy yes"),
                    HasSubstr("lowered _Z4axpyIfEvT_PKS0_PS0_i"),
                    HasSubstr("bad compile NVRTC_ERROR_COMPILATION"), HasSubstr("undeclared")))
      << r.output;
}

TEST(Locator, TheLibcudaThisProcessRunsOnIsSkippedEvenUnmarked) {
  // Last: loads our libcuda.so.1 into this process's global scope.
  ASSERT_NE(::dlopen(our_libcuda().c_str(), RTLD_NOW | RTLD_GLOBAL), nullptr) << ::dlerror();
  EXPECT_TRUE(cu::is_loaded_libcuda(our_libcuda().string()));
  EXPECT_FALSE(cu::is_loaded_libcuda(standin("fake").string()));
}

}  // namespace
