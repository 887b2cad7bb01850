// Streams and events of the mock: real asynchrony on host threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

#include "cudamux/backend.hpp"
#include "ipc.hpp"
#include "kernels.hpp"

namespace cudamux::mock {

namespace be = cudamux::backend;

// Completion of one record of an event. An event's records each get their own signal,
// so that a wait captures exactly the record submitted before it (re-recording cannot
// retarget it) and a pending record survives cuEventDestroy.
struct RecordSignal {
  std::uint64_t generation = 0;  // 1 for the event's first record, 2 for the next, ...
  std::chrono::steady_clock::time_point when{};  // written before `done` is published
  std::atomic<bool> done{false};
  std::shared_ptr<IpcEventState> ipc;  // an interprocess event's counters (issue 17)

  void complete() noexcept;
  void wait() const noexcept;
};

class MockEvent final : public be::Event {
 public:
  explicit MockEvent(unsigned flags) : flags_(flags) {}
  // An event opened from another process's handle (cuIpcOpenEventHandle).
  explicit MockEvent(std::shared_ptr<IpcEventState> ipc)
      : flags_(CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS), ipc_(std::move(ipc)) {}
  be::Status query() override;
  be::Status synchronize() override;
  be::Status elapsed_since(const be::Event& start, float& ms) const override;

  // Called by Queue::record at submission time: the new record becomes the last one.
  std::shared_ptr<RecordSignal> begin_record();
  // The record last submitted (nullptr if never recorded).
  [[nodiscard]] std::shared_ptr<RecordSignal> last_record() const;
  // Interprocess events (issue 17): from the first export on, records count in memory the
  // other process shares, and queries and waits follow those counters.
  CUresult export_ipc(CUipcEventHandle& out);
  [[nodiscard]] std::shared_ptr<IpcEventState> ipc() const;

 private:
  const unsigned flags_;
  mutable std::mutex mu_;
  std::uint64_t generation_ = 0;
  std::shared_ptr<RecordSignal> last_;
  std::shared_ptr<IpcEventState> ipc_;
};

class MockQueue;
class MockImages;

// What launches need from the backend: its logger and the block pool (started on first use).
struct KernelEnv {
  std::shared_ptr<spdlog::logger> log;
  // The backend's arrays, for copies with array ends (issue 17); set once at creation.
  const MockImages* images = nullptr;
  // The backend's compiler, which also builds the C++ translated from PTX (issue 15).
  MockCompiler* compiler = nullptr;
  int workers = -1;  // pool threads besides the launching queue's; -1: cores - 1
  std::once_flag started;
  std::unique_ptr<BlockPool> pool;
  BlockPool& get_pool();
};

// The queues of one context, so that DeviceContext::synchronize can reach them. Queues hold
// it by shared_ptr because their lifetime is not tied to the context object's.
struct QueueRegistry {
  std::mutex mu;
  std::vector<MockQueue*> queues;
};

// One worker thread per queue (started on the first asynchronous submission) executes the
// queue's operations in FIFO order. Threads rather than a shared pool because a wait on an
// event blocks its queue: with a pool, waits could starve the workers that would record.
class MockQueue final : public be::Queue {
 public:
  MockQueue(std::shared_ptr<QueueRegistry> registry, unsigned flags, int priority,
            std::shared_ptr<KernelEnv> kernels = nullptr);
  ~MockQueue() override;  // drains
  MockQueue(const MockQueue&) = delete;
  MockQueue& operator=(const MockQueue&) = delete;

  be::Status copy(const be::CopyDesc& desc) override;
  be::Status copy_sync(const be::CopyDesc& desc) override;
  be::Status fill(const be::FillDesc& desc) override;
  be::Status host_function(void (*fn)(void*), void* user) override;
  be::Status record(be::Event& event) override;
  be::Status wait(be::Event& event) override;
  be::Status query() override;
  be::Status synchronize() override;
  // Validates, copies the arguments and enqueues; the blocks run on the pool when the
  // queue reaches the launch. A failing kernel makes the queue report its error (sticky).
  be::Status launch(const be::LaunchDesc& desc) override;
  // Stream memory operations (issue 17): a wait polls the value until its condition holds
  // (any writer: the host, another queue, a kernel), blocking only this queue's worker.
  bool wait_value(void* addr, unsigned bytes, std::uint64_t value, unsigned flags,
                  be::Status& status) override;
  bool write_value(void* addr, unsigned bytes, std::uint64_t value, unsigned flags,
                   be::Status& status) override;
  // Ends pending and future value waits as if satisfied (the context is being destroyed), so
  // that its synchronisation cannot hang on a wait nothing will ever satisfy.
  void interrupt_waits() noexcept;

  [[nodiscard]] unsigned flags() const noexcept { return flags_; }
  [[nodiscard]] int priority() const noexcept { return priority_; }

 private:
  struct HostFunction {
    void (*fn)(void*);
    void* user;
  };
  struct Record {
    std::shared_ptr<RecordSignal> signal;
  };
  struct Wait {
    std::shared_ptr<RecordSignal> signal;
  };
  struct IpcWait {
    std::shared_ptr<IpcEventState> state;
    std::uint64_t generation;
  };
  struct WaitValue {
    void* addr;
    unsigned bytes;
    std::uint64_t value;
    unsigned flags;
  };
  struct WriteValue {
    void* addr;
    unsigned bytes;
    std::uint64_t value;
  };
  using Op = std::variant<be::CopyDesc, be::FillDesc, HostFunction, Record, Wait, KernelLaunch,
                          WaitValue, WriteValue, IpcWait>;
  void run_wait_value(const WaitValue& w) const noexcept;

  // Turns array ends of a copy into pitched pointers to the arrays' storage (issue 17).
  be::Status resolve_arrays(be::CopyDesc& d) const;
  // Appends and returns the op's sequence number (1-based).
  std::uint64_t submit(Op op);
  void wait_for(std::uint64_t sequence);
  void worker_loop();
  void execute(const Op& op);
  be::Status sticky() const noexcept { return be::Status{error_.load(std::memory_order_acquire)}; }

  const std::shared_ptr<QueueRegistry> registry_;
  const unsigned flags_;
  const int priority_;  // kept for the core; ordering ignores it
  const std::shared_ptr<KernelEnv> kernels_;
  std::atomic<std::int32_t> error_{0};
  std::atomic<bool> interrupted_{
      false};  // interrupt_waits()  // first kernel failure (CUresult), reported from then on

  std::mutex mu_;
  std::condition_variable work_cv_;  // worker: new op, op slot freed, or stop
  std::condition_variable done_cv_;  // waiters: an op completed
  std::deque<Op> ops_;
  std::uint64_t submitted_ = 0;
  std::uint64_t completed_ = 0;
  bool busy_ = false;  // an op is executing (on the worker or inline in copy_sync)
  bool stop_ = false;
  std::thread worker_;
};

// Strided 3D copy and 2D fill as the queue executes them (exposed for tests/benchmarks).
void run_copy(const be::CopyDesc& desc) noexcept;
void run_fill(const be::FillDesc& desc) noexcept;

}  // namespace cudamux::mock
