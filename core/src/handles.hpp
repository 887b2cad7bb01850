// Generation-checked handle tables: CUcontext / CUstream / CUevent values are
// encoded slot indices, so a stale or garbage handle is detected with two loads
// and no lock (the hot path of e.g. cuStreamQuery), and a destroyed handle never
// aliases a newer object.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

namespace cudamux::core {

template <class T>
class HandleTable {
 public:
  // `tag`: the low byte of every handle of this table; distinct per table, so that a
  // handle of one kind (a CUevent passed as a CUstream) never names an object of another.
  // The first chunk is made here, with the core: zeroing its 16 KiB on the first insert was 4
  // page faults, ~15 us on the GPU machine's VM, in each of the four tables a program's first
  // kernel load fills (libraries, modules, kernels, functions; issue 14's first-launch time).
  explicit HandleTable(std::uint8_t tag) noexcept : tag_(tag) {
    chunks_[0].store(new (std::nothrow) Chunk{}, std::memory_order_relaxed);  // else: on insert
  }
  HandleTable(const HandleTable&) = delete;
  HandleTable& operator=(const HandleTable&) = delete;
  ~HandleTable() {
    for (auto& chunk : chunks_) delete chunk.load(std::memory_order_relaxed);
  }

  // Stores `obj` and returns its handle value (never 0, 1 or 2: those are
  // CUDA's null / CU_STREAM_LEGACY / CU_STREAM_PER_THREAD).
  std::uintptr_t insert(T* obj) {
    std::lock_guard lock(mutex_);
    std::uint32_t index;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else {
      index = next_++;
      if ((index >> kChunkBits) >= kMaxChunks) return 0;  // table full: caller reports OOM
      auto& chunk = chunks_[index >> kChunkBits];
      if (!chunk.load(std::memory_order_relaxed))
        chunk.store(new Chunk{}, std::memory_order_release);
    }
    Slot& slot = slot_at(index);
    slot.object.store(obj, std::memory_order_relaxed);
    const std::uint32_t gen = slot.generation.load(std::memory_order_relaxed);
    slot.generation.store(gen | 1u, std::memory_order_release);  // odd = live
    return encode(index, gen | 1u);
  }

  // Object for a live handle, nullptr for anything else.
  [[nodiscard]] T* find(std::uintptr_t handle) const noexcept {
    if ((handle & kTagMask) != tag_) return nullptr;
    const std::uint32_t index = static_cast<std::uint32_t>((handle >> kIndexShift) & kIndexMask);
    const std::uint32_t gen = static_cast<std::uint32_t>(handle >> kGenShift);
    const Chunk* chunk = (index >> kChunkBits) < kMaxChunks
                             ? chunks_[index >> kChunkBits].load(std::memory_order_acquire)
                             : nullptr;
    if (!chunk) return nullptr;
    const Slot& slot = (*chunk)[index & (kChunkSize - 1)];
    if (slot.generation.load(std::memory_order_acquire) != gen) return nullptr;
    return slot.object.load(std::memory_order_relaxed);
  }

  // Whether `handle` was issued by this table and has died since (a destroyed object's handle,
  // not a made-up value: issued handles carry an odd generation, and a slot's only grows).
  [[nodiscard]] bool stale(std::uintptr_t handle) const noexcept {
    if ((handle & kTagMask) != tag_) return false;
    const std::uint32_t index = static_cast<std::uint32_t>((handle >> kIndexShift) & kIndexMask);
    const std::uint32_t gen = static_cast<std::uint32_t>(handle >> kGenShift);
    if ((gen & 1u) == 0) return false;
    const Chunk* chunk = (index >> kChunkBits) < kMaxChunks
                             ? chunks_[index >> kChunkBits].load(std::memory_order_acquire)
                             : nullptr;
    if (!chunk) return false;
    return (*chunk)[index & (kChunkSize - 1)].generation.load(std::memory_order_acquire) > gen;
  }

  // Invalidates the handle; returns the object it named (caller destroys it), or nullptr.
  T* erase(std::uintptr_t handle) noexcept {
    std::lock_guard lock(mutex_);
    T* obj = find(handle);
    if (!obj) return nullptr;
    const std::uint32_t index = static_cast<std::uint32_t>((handle >> kIndexShift) & kIndexMask);
    Slot& slot = slot_at(index);
    slot.generation.fetch_add(1, std::memory_order_acq_rel);  // even = dead
    slot.object.store(nullptr, std::memory_order_relaxed);
    free_.push_back(index);
    return obj;
  }

  // Like erase, but the slot stays reserved for revive(): the handle is dead meanwhile. For
  // objects whose handle must outlive them, as a device's primary context does across resets
  // (NVIDIA's runtime keeps the handle it got once).
  T* erase_keeping_handle(std::uintptr_t handle) noexcept {
    std::lock_guard lock(mutex_);
    T* obj = find(handle);
    if (!obj) return nullptr;
    Slot& slot = slot_at(static_cast<std::uint32_t>((handle >> kIndexShift) & kIndexMask));
    slot.object.store(nullptr, std::memory_order_relaxed);
    slot.generation.fetch_add(1, std::memory_order_release);  // even = dead, not on free_
    return obj;
  }
  // Makes a handle dead through erase_keeping_handle() name `obj`; false if it was not.
  bool revive(std::uintptr_t handle, T* obj) noexcept {
    std::lock_guard lock(mutex_);
    if ((handle & kTagMask) != tag_) return false;
    const auto index = static_cast<std::uint32_t>((handle >> kIndexShift) & kIndexMask);
    const auto gen = static_cast<std::uint32_t>(handle >> kGenShift);
    if (index >= next_) return false;
    Slot& slot = slot_at(index);
    if (slot.generation.load(std::memory_order_relaxed) != gen + 1) return false;
    slot.object.store(obj, std::memory_order_relaxed);
    slot.generation.store(gen, std::memory_order_release);
    return true;
  }

  // Copies of all live objects (for teardown and per-context sweeps).
  std::vector<T*> live() const {
    std::lock_guard lock(mutex_);
    std::vector<T*> out;
    for (std::uint32_t i = 0; i < next_; ++i) {
      const Slot& slot = slot_at(i);
      if (slot.generation.load(std::memory_order_relaxed) & 1u)
        out.push_back(slot.object.load(std::memory_order_relaxed));
    }
    return out;
  }

 private:
  struct Slot {
    std::atomic<std::uint32_t> generation{0};
    std::atomic<T*> object{nullptr};
  };
  static constexpr unsigned kChunkBits = 10;
  static constexpr std::uint32_t kChunkSize = 1u << kChunkBits;
  static constexpr std::uint32_t kMaxChunks = 4096;  // 4M live handles per type
  using Chunk = std::array<Slot, kChunkSize>;

  // Layout of a handle value: generation(32) | index(24) | tag(8).
  static constexpr std::uintptr_t kTagMask = 0xff;
  static constexpr unsigned kIndexShift = 8;
  static constexpr std::uintptr_t kIndexMask = 0xffffff;
  static constexpr unsigned kGenShift = 32;

  std::uintptr_t encode(std::uint32_t index, std::uint32_t gen) const noexcept {
    return (static_cast<std::uintptr_t>(gen) << kGenShift) |
           (static_cast<std::uintptr_t>(index) << kIndexShift) | tag_;
  }
  Slot& slot_at(std::uint32_t index) noexcept {
    return (
        *chunks_[index >> kChunkBits].load(std::memory_order_relaxed))[index & (kChunkSize - 1)];
  }
  const Slot& slot_at(std::uint32_t index) const noexcept {
    return (
        *chunks_[index >> kChunkBits].load(std::memory_order_relaxed))[index & (kChunkSize - 1)];
  }

  // find() reads tag_ and the first chunk pointers: one cache line (issue 14, launches).
  alignas(64) const std::uintptr_t tag_;
  std::array<std::atomic<Chunk*>, kMaxChunks> chunks_{};
  mutable std::mutex mutex_;
  std::vector<std::uint32_t> free_;
  std::uint32_t next_ = 0;
};

}  // namespace cudamux::core
