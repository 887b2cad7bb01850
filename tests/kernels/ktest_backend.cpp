// "ktest": a tiny deterministic backend for the core's module and launch tests. Its module
// images are NUL-terminated text:
//
//   cudamux-ktest-module
//   kernel <name> <param size>... [regs=N] [shared=N] [maxthreads=N]
//   global <name> <bytes>
//
// Parameters are laid out as a compiler would (each aligned to min(size, 8)). What a kernel
// does depends on its name: "record*" appends its launch (dims, shared bytes, packed
// arguments) to the global "record"; "axpy" (float a, float* x, float* y, int n) computes
// y = a*x + y; "fault_assert" / "fault_illegal" make the context fail as a GPU would.
// Queues are asynchronous (one worker thread each), so ordering and argument lifetime are
// observable.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "cudamux/backend.hpp"
#include "ktest_record.h"

namespace {
namespace be = cudamux::backend;
constexpr be::Status st(CUresult r) { return be::Status{static_cast<std::int32_t>(r)}; }
constexpr char kMagic[] = "cudamux-ktest-module\n";

class Errors final : public be::ErrorDomain {
 public:
  std::optional<CUresult> to_cuda(std::int32_t n) const noexcept override { return static_cast<CUresult>(n); }
  std::string_view native_name(std::int32_t) const noexcept override { return "ktest"; }
  be::Status not_ready() const noexcept override { return st(CUDA_ERROR_NOT_READY); }
  be::Status not_supported() const noexcept override { return st(CUDA_ERROR_NOT_SUPPORTED); }
  be::Status out_of_memory() const noexcept override { return st(CUDA_ERROR_OUT_OF_MEMORY); }
  be::Status invalid_value() const noexcept override { return st(CUDA_ERROR_INVALID_VALUE); }
};

// A small device: limits chosen so that tests can reach them.
const std::map<CUdevice_attribute, int> kAttributes = {
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 48 * 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 99 * 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 100 * 1024},
    {CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536},
    {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 4},
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 1536},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 16},
    {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 8},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 6},
    {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1},
    {CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 0},
    {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
};

class Devices final : public be::Devices {
 public:
  int count() const noexcept override { return 1; }
  be::Status properties(int o, be::DeviceProperties& out) const override {
    if (o != 0) return st(CUDA_ERROR_INVALID_DEVICE);
    out.name = "cudamux ktest device";
    out.total_memory = 1 << 30;
    out.cc_major = 8;
    out.cc_minor = 6;
    return be::kOk;
  }
  be::Status attribute(int o, CUdevice_attribute a, int& v) const override {
    if (o != 0) return st(CUDA_ERROR_INVALID_DEVICE);
    auto it = kAttributes.find(a);
    if (it == kAttributes.end()) return st(CUDA_ERROR_NOT_SUPPORTED);
    v = it->second;
    return be::kOk;
  }
  be::Status memory_info(int, std::size_t& f, std::size_t& t) const override {
    f = t = 1 << 30;
    return be::kOk;
  }
  bool can_access_peer(int, int) const noexcept override { return false; }
};

// Record completion of an event: records are numbered, waits capture the number.
struct EventState {
  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t issued = 0, done = 0;
};
class Event final : public be::Event {
 public:
  std::shared_ptr<EventState> s = std::make_shared<EventState>();
  be::Status query() override {
    std::lock_guard l(s->mu);
    return s->done >= s->issued ? be::kOk : st(CUDA_ERROR_NOT_READY);
  }
  be::Status synchronize() override {
    std::unique_lock l(s->mu);
    s->cv.wait(l, [&] { return s->done >= s->issued; });
    return be::kOk;
  }
  be::Status elapsed_since(const be::Event&, float& ms) const override {
    ms = 0;
    return be::kOk;
  }
};

class Queue;
struct ContextState {
  std::atomic<int> error{0};  // a kernel fault: every later query/synchronize reports it
  std::mutex mu;
  std::vector<Queue*> queues;  // live queues, for DeviceContext::synchronize
};

class Function final : public be::Function {
 public:
  std::string name_;
  std::vector<be::ParamInfo> params_;
  std::map<CUfunction_attribute, int> attrs_;
  std::map<std::string, std::vector<unsigned char>, std::less<>>* globals = nullptr;  // its module's
  std::string_view name() const noexcept override { return name_; }
  be::Status attribute(CUfunction_attribute a, int& v) const override {
    auto it = attrs_.find(a);
    if (it == attrs_.end()) return st(CUDA_ERROR_NOT_SUPPORTED);
    v = it->second;
    return be::kOk;
  }
  const std::vector<be::ParamInfo>& params() const noexcept override { return params_; }
};

class Module final : public be::Module {
 public:
  std::map<std::string, Function, std::less<>> functions;
  std::vector<std::string> order;
  std::map<std::string, std::vector<unsigned char>, std::less<>> globals;
  be::Function* function(std::string_view n) noexcept override {
    auto it = functions.find(n);
    return it == functions.end() ? nullptr : &it->second;
  }
  bool global(std::string_view n, void*& a, std::size_t& b) noexcept override {
    auto it = globals.find(n);
    if (it == globals.end()) return false;
    a = it->second.data();
    b = it->second.size();
    return true;
  }
  std::vector<std::string_view> function_names() const override {
    return {order.begin(), order.end()};
  }
};

be::Status parse(const char* text, Module& m) {
  if (std::strncmp(text, kMagic, sizeof kMagic - 1) != 0) return st(CUDA_ERROR_INVALID_IMAGE);
  std::istringstream in(text + sizeof kMagic - 1);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string kind, name;
    if (!(ls >> kind)) continue;
    if (!(ls >> name)) return st(CUDA_ERROR_INVALID_IMAGE);
    if (kind == "global") {
      std::size_t bytes = 0;
      if (!(ls >> bytes)) return st(CUDA_ERROR_INVALID_IMAGE);
      m.globals[name].assign(bytes, 0);
      continue;
    }
    if (kind != "kernel") return st(CUDA_ERROR_INVALID_IMAGE);
    Function f;
    f.name_ = name;
    std::size_t offset = 0;
    std::string tok;
    while (ls >> tok) {
      if (auto eq = tok.find('='); eq != std::string::npos) {
        const int v = std::atoi(tok.c_str() + eq + 1);
        const std::string key = tok.substr(0, eq);
        if (key == "regs") f.attrs_[CU_FUNC_ATTRIBUTE_NUM_REGS] = v;
        else if (key == "shared") f.attrs_[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES] = v;
        else if (key == "maxthreads") f.attrs_[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] = v;
        else return st(CUDA_ERROR_INVALID_IMAGE);
        continue;
      }
      const std::size_t size = std::strtoul(tok.c_str(), nullptr, 10);
      if (size == 0) return st(CUDA_ERROR_INVALID_IMAGE);
      const std::size_t align = std::min<std::size_t>(size, 8);
      offset = (offset + align - 1) / align * align;
      f.params_.push_back({offset, size});
      offset += size;
    }
    m.order.push_back(name);
    m.functions.emplace(name, std::move(f));
  }
  return be::kOk;
}

class Queue final : public be::Queue {
 public:
  explicit Queue(std::shared_ptr<ContextState> c) : ctx_(std::move(c)), worker_([this] { run(); }) {
    std::lock_guard l(ctx_->mu);
    ctx_->queues.push_back(this);
  }
  ~Queue() override {
    {
      std::lock_guard l(ctx_->mu);
      std::erase(ctx_->queues, this);
    }
    (void)synchronize();
    {
      std::lock_guard l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  be::Status copy(const be::CopyDesc& d) override {
    return push([d] { copy_now(d); });
  }
  be::Status copy_sync(const be::CopyDesc& d) override {
    if (auto s = push([d] { copy_now(d); }); !s.ok()) return s;
    return synchronize();
  }
  be::Status fill(const be::FillDesc& d) override {
    return push([d] {
      for (std::size_t r = 0; r < d.height; ++r)
        for (std::size_t i = 0; i < d.width_elems; ++i)
          std::memcpy(static_cast<char*>(d.dst) + r * d.pitch + i * d.elem_size, &d.value, d.elem_size);
    });
  }
  be::Status host_function(void (*fn)(void*), void* user) override {
    return push([fn, user] { fn(user); });
  }
  be::Status record(be::Event& e) override {
    auto s = static_cast<Event&>(e).s;
    std::uint64_t n;
    {
      std::lock_guard l(s->mu);
      n = ++s->issued;
    }
    return push([s, n] {
      std::lock_guard l(s->mu);
      s->done = std::max(s->done, n);
      s->cv.notify_all();
    });
  }
  be::Status wait(be::Event& e) override {
    auto s = static_cast<Event&>(e).s;
    std::uint64_t n;
    {
      std::lock_guard l(s->mu);
      n = s->issued;
    }
    return push([s, n] {
      std::unique_lock l(s->mu);
      s->cv.wait(l, [&] { return s->done >= n; });
    });
  }
  be::Status query() override {
    std::lock_guard l(mu_);
    if (!ops_.empty() || busy_) return st(CUDA_ERROR_NOT_READY);
    return st(static_cast<CUresult>(ctx_->error.load()));
  }
  be::Status synchronize() override {
    std::unique_lock l(mu_);
    idle_.wait(l, [&] { return ops_.empty() && !busy_; });
    return st(static_cast<CUresult>(ctx_->error.load()));
  }
  be::Status launch(const be::LaunchDesc& d) override {
    auto* f = static_cast<Function*>(d.function);
    std::vector<unsigned char> args(static_cast<const unsigned char*>(d.args),
                                    static_cast<const unsigned char*>(d.args) + d.args_size);
    auto ctx = ctx_;
    return push([f, ctx, d, args] {
      if (f->name_.rfind("record", 0) == 0) {
        auto it = f->globals->find("record");
        if (it == f->globals->end() || it->second.size() < sizeof(KtestRecord)) return;
        auto* rec = reinterpret_cast<KtestRecord*>(it->second.data());
        for (int i = 0; i < 3; ++i) {
          rec->grid[i] = d.grid[i];
          rec->block[i] = d.block[i];
        }
        rec->shared_bytes = d.shared_bytes;
        rec->cooperative = d.cooperative;
        rec->args_size = static_cast<unsigned>(args.size());
        if (!args.empty()) std::memcpy(rec->args, args.data(), std::min(args.size(), sizeof rec->args));
        ++rec->launches;
      } else if (f->name_ == "axpy") {
        float a;
        float *x, *y;
        int n;
        std::memcpy(&a, args.data() + f->params_[0].offset, 4);
        std::memcpy(&x, args.data() + f->params_[1].offset, 8);
        std::memcpy(&y, args.data() + f->params_[2].offset, 8);
        std::memcpy(&n, args.data() + f->params_[3].offset, 4);
        const long long total = 1LL * d.grid[0] * d.block[0];
        for (long long i = 0; i < total && i < n; ++i) y[i] = a * x[i] + y[i];
      } else if (f->name_ == "fault_assert") {
        int expected = 0;
        ctx->error.compare_exchange_strong(expected, CUDA_ERROR_ASSERT);
      } else if (f->name_ == "fault_illegal") {
        int expected = 0;
        ctx->error.compare_exchange_strong(expected, CUDA_ERROR_ILLEGAL_ADDRESS);
      }
    });
  }

 private:
  static void copy_now(const be::CopyDesc& d) {
    for (std::size_t z = 0; z < d.depth; ++z)
      for (std::size_t y = 0; y < d.height; ++y)
        std::memmove(static_cast<char*>(d.dst) + z * d.dst_slice + y * d.dst_pitch,
                     static_cast<const char*>(d.src) + z * d.src_slice + y * d.src_pitch, d.width_bytes);
  }
  be::Status push(std::function<void()> op) {
    {
      std::lock_guard l(mu_);
      ops_.push_back(std::move(op));
    }
    cv_.notify_all();
    return be::kOk;
  }
  void run() {
    std::unique_lock l(mu_);
    for (;;) {
      cv_.wait(l, [&] { return stop_ || !ops_.empty(); });
      if (ops_.empty()) return;
      auto op = std::move(ops_.front());
      ops_.pop_front();
      busy_ = true;
      l.unlock();
      op();
      l.lock();
      busy_ = false;
      if (ops_.empty()) idle_.notify_all();
    }
  }
  std::shared_ptr<ContextState> ctx_;
  std::mutex mu_;
  std::condition_variable cv_, idle_;
  std::deque<std::function<void()>> ops_;
  bool busy_ = false, stop_ = false;
  std::thread worker_;
};

class Context final : public be::DeviceContext {
 public:
  int ordinal() const noexcept override { return 0; }
  be::Status allocate(std::size_t b, void** out) override { return alloc(b, out); }
  be::Status free(void* p) override { return release(p); }
  be::Status allocate_host(std::size_t b, unsigned, void** out) override { return alloc(b, out); }
  be::Status free_host(void* p) override { return release(p); }
  be::Status allocate_managed(std::size_t b, unsigned, void** out) override { return alloc(b, out); }
  be::Status free_managed(void* p) override { return release(p); }
  be::Status register_host(void*, std::size_t, unsigned) override { return be::kOk; }
  be::Status unregister_host(void*) override { return be::kOk; }
  be::Status host_device_pointer(void* h, void** d) override {
    *d = h;
    return be::kOk;
  }
  be::Status create_queue(unsigned, int, std::unique_ptr<be::Queue>& out) override {
    out = std::make_unique<Queue>(state_);
    return be::kOk;
  }
  be::Status create_event(unsigned, std::unique_ptr<be::Event>& out) override {
    out = std::make_unique<Event>();
    return be::kOk;
  }
  be::Status synchronize() override {
    std::lock_guard l(state_->mu);
    for (Queue* q : state_->queues) (void)q->synchronize();
    return st(static_cast<CUresult>(state_->error.load()));
  }
  be::Status load_module(const be::ModuleImage& image, std::unique_ptr<be::Module>& out) override {
    if (image.kind != be::ImageKind::native) return st(CUDA_ERROR_NO_BINARY_FOR_GPU);
    auto m = std::make_unique<Module>();
    if (auto s = parse(static_cast<const char*>(image.data), *m); !s.ok()) return s;
    for (auto& [n, f] : m->functions) f.globals = &m->globals;
    out = std::move(m);
    return be::kOk;
  }

 private:
  static be::Status alloc(std::size_t b, void** out) {
    *out = std::aligned_alloc(256, (std::max<std::size_t>(b, 1) + 255) / 256 * 256);
    return *out ? be::kOk : st(CUDA_ERROR_OUT_OF_MEMORY);
  }
  static be::Status release(void* p) {
    std::free(p);
    return be::kOk;
  }
  std::shared_ptr<ContextState> state_ = std::make_shared<ContextState>();
};

class Backend final : public be::Backend {
 public:
  std::string_view name() const noexcept override { return "ktest"; }
  const be::ErrorDomain& errors() const noexcept override { return errors_; }
  be::Devices& devices() noexcept override { return devices_; }
  be::Status open_context(int o, unsigned, std::unique_ptr<be::DeviceContext>& out) override {
    if (o != 0) return st(CUDA_ERROR_INVALID_DEVICE);
    out = std::make_unique<Context>();
    return be::kOk;
  }
  be::Compiler* compiler() noexcept override { return nullptr; }

 private:
  Errors errors_;
  Devices devices_;
};

}  // namespace

CUDAMUX_PLUGIN_EXPORT std::uint32_t cudamux_backend_abi_version() { return be::kAbiVersion; }
CUDAMUX_PLUGIN_EXPORT be::Backend* cudamux_backend_create(const be::PluginHost&, std::string&) {
  return new Backend();
}
