#include "queue.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "images.hpp"
#include "memory.hpp"

namespace cudamux::mock {

namespace {
constexpr be::Status status(CUresult r) { return be::Status{static_cast<std::int32_t>(r)}; }

template <typename T>
void fill_elements(std::byte* dst, std::size_t count, std::uint32_t value) noexcept {
  const auto v = static_cast<T>(value);
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  // All bytes equal (0, 0xFFFFFFFF, ...): memset is the fastest fill there is.
  if (std::all_of(bytes, bytes + sizeof(T), [&](unsigned char b) { return b == bytes[0]; })) {
    std::memset(dst, bytes[0], count * sizeof(T));
  } else if (reinterpret_cast<std::uintptr_t>(dst) % alignof(T) == 0) {
    std::fill_n(reinterpret_cast<T*>(dst), count, v);
  } else {
    for (std::size_t i = 0; i < count; ++i) std::memcpy(dst + i * sizeof(T), &v, sizeof(T));
  }
}

void fill_row(std::byte* dst, unsigned elem_size, std::size_t count, std::uint32_t value) noexcept {
  switch (elem_size) {
    case 1:
      std::memset(dst, static_cast<int>(value & 0xFFu), count);
      break;
    case 2:
      fill_elements<std::uint16_t>(dst, count, value);
      break;
    default:
      fill_elements<std::uint32_t>(dst, count, value);
      break;
  }
}
}  // namespace

void run_copy(const be::CopyDesc& d) noexcept {
  const std::size_t w = d.width_bytes;
  const std::size_t h = std::max<std::size_t>(d.height, 1);
  const std::size_t depth = std::max<std::size_t>(d.depth, 1);
  if (w == 0) return;
  // Zero pitches mean "tightly packed", as for 1D copies the core leaves them unset.
  const std::size_t sp = d.src_pitch != 0 ? d.src_pitch : w;
  const std::size_t dp = d.dst_pitch != 0 ? d.dst_pitch : w;
  const std::size_t ss = d.src_slice != 0 ? d.src_slice : sp * h;
  const std::size_t ds = d.dst_slice != 0 ? d.dst_slice : dp * h;
  auto* dst = static_cast<std::byte*>(d.dst);
  const auto* src = static_cast<const std::byte*>(d.src);

  const bool rows_packed = h == 1 || (sp == w && dp == w);
  const bool slices_packed = depth == 1 || (ss == w * h && ds == w * h);
  // memmove: CUDA accepts overlapping ranges (an H100 gives memmove's result for them).
  if (rows_packed && slices_packed) {
    std::memmove(dst, src, w * h * depth);
    return;
  }
  for (std::size_t z = 0; z < depth; ++z) {
    if (rows_packed) {
      std::memmove(dst + z * ds, src + z * ss, w * h);
      continue;
    }
    for (std::size_t y = 0; y < h; ++y)
      std::memmove(dst + z * ds + y * dp, src + z * ss + y * sp, w);
  }
}

void run_fill(const be::FillDesc& f) noexcept {
  const unsigned elem = f.elem_size == 1 || f.elem_size == 2 ? f.elem_size : 4;
  const std::size_t row_bytes = f.width_elems * elem;
  const std::size_t h = std::max<std::size_t>(f.height, 1);
  const std::size_t pitch = f.pitch != 0 ? f.pitch : row_bytes;
  auto* dst = static_cast<std::byte*>(f.dst);
  if (row_bytes == 0) return;
  if (pitch == row_bytes) {
    fill_row(dst, elem, f.width_elems * h, f.value);
    return;
  }
  for (std::size_t y = 0; y < h; ++y) fill_row(dst + y * pitch, elem, f.width_elems, f.value);
}

// ---- events ----------------------------------------------------------------------------

void RecordSignal::complete() noexcept {
  when = std::chrono::steady_clock::now();
  if (ipc) ipc->complete(generation);
  done.store(true, std::memory_order_release);
  done.notify_all();
}

void RecordSignal::wait() const noexcept {
  // std::atomic::wait spins briefly, then sleeps on a futex: fine for both BLOCKING_SYNC
  // and default events.
  done.wait(false, std::memory_order_acquire);
}

std::shared_ptr<RecordSignal> MockEvent::begin_record() {
  auto signal = std::make_shared<RecordSignal>();
  std::lock_guard lock(mu_);
  if (ipc_) {
    signal->ipc = ipc_;
    signal->generation = ipc_->begin_record();
  } else {
    signal->generation = ++generation_;
  }
  last_ = signal;
  return signal;
}

CUresult MockEvent::export_ipc(CUipcEventHandle& out) {
  std::lock_guard lock(mu_);
  if (!ipc_) {
    const bool pending = last_ && !last_->done.load(std::memory_order_acquire);
    ipc_ = IpcEventState::create(generation_, pending ? generation_ - 1 : generation_);
    if (!ipc_) return CUDA_ERROR_MAP_FAILED;
    // A record still pending completes the shared counter too.
    if (pending) last_->ipc = ipc_;
  }
  ipc_->handle(out);
  return CUDA_SUCCESS;
}

std::shared_ptr<IpcEventState> MockEvent::ipc() const {
  std::lock_guard lock(mu_);
  return ipc_;
}

std::shared_ptr<RecordSignal> MockEvent::last_record() const {
  std::lock_guard lock(mu_);
  return last_;
}

be::Status MockEvent::query() {
  if (const auto shared = ipc())
    return shared->done(shared->submitted()) ? be::kOk : status(CUDA_ERROR_NOT_READY);
  const auto signal = last_record();
  if (signal && !signal->done.load(std::memory_order_acquire)) return status(CUDA_ERROR_NOT_READY);
  return be::kOk;
}

be::Status MockEvent::synchronize() {
  if (const auto shared = ipc()) {
    shared->wait(shared->submitted());
    return be::kOk;
  }
  if (const auto signal = last_record()) signal->wait();
  return be::kOk;
}

be::Status MockEvent::elapsed_since(const be::Event& start, float& ms) const {
  const auto* begin = dynamic_cast<const MockEvent*>(&start);
  if (begin == nullptr) return status(CUDA_ERROR_INVALID_HANDLE);
  if (((flags_ | begin->flags_) & CU_EVENT_DISABLE_TIMING) != 0) {
    return status(CUDA_ERROR_INVALID_HANDLE);
  }
  const auto a = begin->last_record();
  const auto b = last_record();
  if (!a || !b) return status(CUDA_ERROR_INVALID_HANDLE);  // never recorded
  if (!a->done.load(std::memory_order_acquire) || !b->done.load(std::memory_order_acquire)) {
    return status(CUDA_ERROR_NOT_READY);
  }
  ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return be::kOk;
}

// ---- queues ----------------------------------------------------------------------------

BlockPool& KernelEnv::get_pool() {
  std::call_once(started, [&] {
    // The launching queue's thread runs blocks too.
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const unsigned n = workers >= 0 ? static_cast<unsigned>(workers) : cores - 1;
    pool = std::make_unique<BlockPool>(n);
  });
  return *pool;
}

MockQueue::MockQueue(std::shared_ptr<QueueRegistry> registry, unsigned flags, int priority,
                     std::shared_ptr<KernelEnv> kernels)
    : registry_(std::move(registry)),
      flags_(flags),
      priority_(priority),
      kernels_(std::move(kernels)) {
  std::lock_guard lock(registry_->mu);
  registry_->queues.push_back(this);
}

MockQueue::~MockQueue() {
  interrupt_waits();  // nothing waits for a destroyed queue's value waits any more
  {
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [&] { return completed_ == submitted_; });
    stop_ = true;
  }
  work_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  std::lock_guard lock(registry_->mu);
  std::erase(registry_->queues, this);
}

std::uint64_t MockQueue::submit(Op op) {
  std::uint64_t sequence = 0;
  {
    std::lock_guard lock(mu_);
    ops_.push_back(std::move(op));
    sequence = ++submitted_;
    if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
  }
  work_cv_.notify_one();
  return sequence;
}

void MockQueue::wait_for(std::uint64_t sequence) {
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [&] { return completed_ >= sequence; });
}

void MockQueue::worker_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || (!ops_.empty() && !busy_); });
    if (ops_.empty() || busy_) {
      if (stop_) return;  // only reached drained: the destructor waits for completion first
      continue;
    }
    Op op = std::move(ops_.front());
    ops_.pop_front();
    busy_ = true;
    lock.unlock();
    execute(op);
    lock.lock();
    busy_ = false;
    ++completed_;
    done_cv_.notify_all();
  }
}

void MockQueue::execute(const Op& op) {
  struct Visitor {
    void operator()(const be::CopyDesc& d) const noexcept {
      const DeviceMemoryAccess access;
      run_copy(d);
    }
    void operator()(const be::FillDesc& f) const noexcept {
      const DeviceMemoryAccess access;
      run_fill(f);
    }
    void operator()(const HostFunction& h) const { h.fn(h.user); }
    void operator()(const Record& r) const noexcept { r.signal->complete(); }
    void operator()(const Wait& w) const noexcept { w.signal->wait(); }
    void operator()(const WaitValue& w) const noexcept { q->run_wait_value(w); }
    void operator()(const IpcWait& w) const noexcept {
      w.state->wait(w.generation, &q->interrupted_);
    }
    void operator()(const WriteValue& w) const noexcept {
      const DeviceMemoryAccess access;
      // Stream-ordered and visible to every other thread (a release store: what CUDA's
      // default write, a fence before the store, promises).
      if (w.bytes == 8)
        std::atomic_ref(*static_cast<std::uint64_t*>(w.addr))
            .store(w.value, std::memory_order_seq_cst);
      else
        std::atomic_ref(*static_cast<std::uint32_t*>(w.addr))
            .store(static_cast<std::uint32_t>(w.value), std::memory_order_seq_cst);
    }
    void operator()(const KernelLaunch& k) const {
      if (q->error_.load(std::memory_order_acquire) != 0) return;  // after a failure: skipped
      const int rc = execute_launch(k);
      if (rc != 0) {
        std::int32_t none = 0;
        q->error_.compare_exchange_strong(none, rc, std::memory_order_acq_rel);
      }
    }
    MockQueue* q;
  };
  std::visit(Visitor{this}, op);
}

be::Status MockQueue::resolve_arrays(be::CopyDesc& d) const {
  if (!d.dst_array && !d.src_array) return be::kOk;
  // A copy of an array's level 0 box is a pitched copy of its storage. Resolved at submission:
  // the core keeps an array alive until work queued before its destruction has finished.
  auto end = [&](std::uint64_t handle, std::size_t x, std::size_t y, std::size_t z,
                 std::size_t& pitch, std::size_t& slice) -> std::byte* {
    const cudamux_image* im =
        kernels_ && kernels_->images ? kernels_->images->find_array(handle) : nullptr;
    if (!im) return nullptr;
    const cudamux_image_level& lv = im->levels[0];
    pitch = lv.row_pitch;
    slice = lv.slice_pitch;
    return static_cast<std::byte*>(lv.data) + z * lv.slice_pitch + y * lv.row_pitch + x;
  };
  if (d.dst_array) {
    d.dst = end(d.dst_array, d.dst_x_bytes, d.dst_y, d.dst_z, d.dst_pitch, d.dst_slice);
    if (!d.dst) return status(CUDA_ERROR_INVALID_VALUE);
    d.dst_array = 0;
  }
  if (d.src_array) {
    auto* src = end(d.src_array, d.src_x_bytes, d.src_y, d.src_z, d.src_pitch, d.src_slice);
    if (!src) return status(CUDA_ERROR_INVALID_VALUE);
    d.src = src;
    d.src_array = 0;
  }
  return be::kOk;
}

be::Status MockQueue::copy(const be::CopyDesc& in) {
  be::CopyDesc desc = in;
  if (const auto st = resolve_arrays(desc); !st.ok()) return st;
  submit(desc);
  return be::kOk;
}

be::Status MockQueue::copy_sync(const be::CopyDesc& in) {
  be::CopyDesc desc = in;
  if (const auto st = resolve_arrays(desc); !st.ok()) return st;
  {
    std::unique_lock lock(mu_);
    if (ops_.empty() && !busy_) {
      // Idle: run on the calling thread (no hand-off, caller's cache). busy_ keeps later
      // submissions from other threads queued behind us, preserving stream order.
      busy_ = true;
      ++submitted_;
      lock.unlock();
      {
        const DeviceMemoryAccess access;
        run_copy(desc);
      }
      lock.lock();
      busy_ = false;
      ++completed_;
      done_cv_.notify_all();
      if (!ops_.empty()) work_cv_.notify_one();
      return be::kOk;
    }
  }
  wait_for(submit(desc));
  return be::kOk;
}

be::Status MockQueue::fill(const be::FillDesc& desc) {
  if (desc.elem_size != 1 && desc.elem_size != 2 && desc.elem_size != 4) {
    return status(CUDA_ERROR_INVALID_VALUE);
  }
  submit(desc);
  return be::kOk;
}

be::Status MockQueue::host_function(void (*fn)(void*), void* user) {
  if (fn == nullptr) return status(CUDA_ERROR_INVALID_VALUE);
  submit(HostFunction{fn, user});
  return be::kOk;
}

be::Status MockQueue::record(be::Event& event) {
  auto* e = dynamic_cast<MockEvent*>(&event);
  if (e == nullptr) return status(CUDA_ERROR_INVALID_HANDLE);
  submit(Record{e->begin_record()});
  return be::kOk;
}

be::Status MockQueue::wait(be::Event& event) {
  auto* e = dynamic_cast<MockEvent*>(&event);
  if (e == nullptr) return status(CUDA_ERROR_INVALID_HANDLE);
  if (auto shared = e->ipc()) {
    const std::uint64_t target = shared->submitted();
    if (!shared->done(target)) submit(IpcWait{std::move(shared), target});
    return be::kOk;
  }
  auto signal = e->last_record();
  // Never recorded, or already complete: nothing to wait for (as in CUDA).
  if (!signal || signal->done.load(std::memory_order_acquire)) return be::kOk;
  submit(Wait{std::move(signal)});
  return be::kOk;
}

be::Status MockQueue::query() {
  std::lock_guard lock(mu_);
  if (!sticky().ok()) return sticky();
  return completed_ == submitted_ ? be::kOk : status(CUDA_ERROR_NOT_READY);
}

be::Status MockQueue::launch(const be::LaunchDesc& desc) {
  if (!kernels_) return status(CUDA_ERROR_NOT_SUPPORTED);
  KernelLaunch k;
  const auto st = prepare_launch(desc, kernels_->get_pool(), *kernels_->log, k);
  if (!st.ok()) return st;
  submit(std::move(k));
  return be::kOk;
}

namespace {
// CUDA's CUstreamWaitValue_flags conditions, on values of 32 or 64 bits.
template <class U, class S>
bool wait_holds(U current, U value, unsigned condition) noexcept {
  switch (condition) {
    case CU_STREAM_WAIT_VALUE_EQ:
      return current == value;
    case CU_STREAM_WAIT_VALUE_AND:
      return (current & value) != 0;
    case CU_STREAM_WAIT_VALUE_NOR:
      return static_cast<U>(~(current | value)) != 0;
    default:  // CU_STREAM_WAIT_VALUE_GEQ: cyclic greater-or-equal
      return static_cast<S>(current - value) >= 0;
  }
}
}  // namespace

void MockQueue::run_wait_value(const WaitValue& w) const noexcept {
  const unsigned condition = w.flags & 0xFu;
  const auto holds = [&] {
    const DeviceMemoryAccess access;
    if (w.bytes == 8) {
      const auto v =
          std::atomic_ref(*static_cast<std::uint64_t*>(w.addr)).load(std::memory_order_acquire);
      return wait_holds<std::uint64_t, std::int64_t>(v, w.value, condition);
    }
    const auto v =
        std::atomic_ref(*static_cast<std::uint32_t*>(w.addr)).load(std::memory_order_acquire);
    return wait_holds<std::uint32_t, std::int32_t>(v, static_cast<std::uint32_t>(w.value),
                                                   condition);
  };
  // Polls: the writer may be anyone (a plain host store included), so there is nothing to be
  // woken by. Spins briefly, then sleeps with a growing interval (at most 1 ms).
  auto pause = std::chrono::microseconds(0);
  for (unsigned spins = 0; !holds(); ++spins) {
    if (interrupted_.load(std::memory_order_acquire)) return;
    if (spins < 64) {
      std::this_thread::yield();
      continue;
    }
    pause = std::min(std::chrono::microseconds(1000), pause + std::chrono::microseconds(20));
    std::this_thread::sleep_for(pause);
  }
}

bool MockQueue::wait_value(void* addr, unsigned bytes, std::uint64_t value, unsigned flags,
                           be::Status& st) {
  if (addr == nullptr || (bytes != 4 && bytes != 8)) {
    st = status(CUDA_ERROR_INVALID_VALUE);
    return true;
  }
  submit(WaitValue{addr, bytes, value, flags});
  st = be::kOk;
  return true;
}

bool MockQueue::write_value(void* addr, unsigned bytes, std::uint64_t value, unsigned /*flags*/,
                            be::Status& st) {
  if (addr == nullptr || (bytes != 4 && bytes != 8)) {
    st = status(CUDA_ERROR_INVALID_VALUE);
    return true;
  }
  submit(WriteValue{addr, bytes, value});
  st = be::kOk;
  return true;
}

void MockQueue::interrupt_waits() noexcept { interrupted_.store(true, std::memory_order_release); }

be::Status MockQueue::synchronize() {
  std::uint64_t target = 0;
  {
    std::lock_guard lock(mu_);
    target = submitted_;
  }
  wait_for(target);
  return sticky();
}

}  // namespace cudamux::mock
