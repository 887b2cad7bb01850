// IPC of the mock (issue 17): device allocations and events shared with other processes.
//
// Memory: a device arena is backed by a memfd (memory.cpp); a handle names the exporting
// process, that descriptor and the allocation's place in it, and the importer maps the same
// pages through /proc/<pid>/fd/<fd>. Events: an exported event keeps its record counters
// (submitted, completed) in a memfd page of its own that the importer maps the same way.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace cudamux::mock {

class DeviceArena;

// The handle of the allocation based at `base` in `arena`.
CUresult ipc_export_memory(const DeviceArena& arena, void* base, CUipcMemHandle& out);
// Maps the exported allocation into this process; CUDA_ERROR_INVALID_CONTEXT for a handle of
// this very process (NVIDIA's driver refuses those too).
CUresult ipc_open_memory(const CUipcMemHandle& handle, void** out, std::size_t& bytes);
CUresult ipc_close_memory(void* ptr);

// Record counters of an interprocess event, in memory both processes map.
struct IpcEventCounters {
  std::uint64_t magic;
  std::uint64_t submitted;  // generation of the last record submitted (by either process)
  std::uint64_t completed;  // highest generation completed
};

class IpcEventState {
 public:
  // A new shared page (the exporter); nullptr when it cannot be made.
  static std::shared_ptr<IpcEventState> create(std::uint64_t submitted, std::uint64_t completed);
  // Another process's page (the importer); the reason in `r` when it cannot be opened.
  static std::shared_ptr<IpcEventState> open(const CUipcEventHandle& handle, CUresult& r);
  ~IpcEventState();
  IpcEventState(const IpcEventState&) = delete;
  IpcEventState& operator=(const IpcEventState&) = delete;

  void handle(CUipcEventHandle& out) const noexcept;
  std::uint64_t begin_record() noexcept;  // the new record's generation
  void complete(std::uint64_t generation) noexcept;
  [[nodiscard]] std::uint64_t submitted() const noexcept;
  [[nodiscard]] bool done(std::uint64_t generation) const noexcept;
  // Polls until `generation` completed (or `stop` is set).
  void wait(std::uint64_t generation, const std::atomic<bool>* stop = nullptr) const noexcept;

 private:
  IpcEventState(int fd, IpcEventCounters* counters) : fd_(fd), counters_(counters) {}
  int fd_;  // the exporter's descriptor (-1 in the importer)
  IpcEventCounters* counters_;
};

}  // namespace cudamux::mock
