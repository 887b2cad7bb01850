// Stream-ordered memory pools (cuMemPool*, cuMemAllocAsync, cuMemFreeAsync): the internal
// interface other core files call. The design and reuse rules: docs/memory-pools.md.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace cudamux::core {

struct MemPool;
struct Stream;
struct Event;
struct Context;

// Allocates `bytes` from `pool` (null: the current pool of the stream's device) in the order
// of `s`. The graph and capture code calls these too; the driver entry points are thin
// wrappers after resolving the stream.
CUresult pool_alloc_async(MemPool* pool, std::size_t bytes, Stream& s, CUdeviceptr& out);
// Frees `p` in the order of `s`: pool memory goes back to its pool once the work queued on
// `s` before the free has run; cuMemAlloc memory is released then.
CUresult pool_free_async(CUdeviceptr p, Stream& s);

// --- hooks called from elsewhere in the core ---

// stream_event.cpp, after cuEventRecord succeeded: remembers which frees the record follows.
void pool_note_event_record(const Event& e, const Stream& s) noexcept;
// stream_event.cpp, after cuStreamWaitEvent succeeded: `s` now follows those frees
// (CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES).
void pool_note_stream_wait(const Stream& s, const Event& e) noexcept;
// stream_event.cpp / context.cpp, after a successful stream, event or context synchronize:
// pools of `device` release cached memory above their release threshold.
void pool_after_synchronize(int device) noexcept;
// context.cpp, destroy_context_contents (after its work is quiesced, before its memory is
// swept): forgets the pool blocks the context's backend allocated and the free events it owns.
void pool_forget_context(Context& ctx) noexcept;
// memory.cpp, cuMemFree: true when `p` is pool memory, which it frees synchronously; the
// outcome in `result`.
bool pool_free_sync(CUdeviceptr p, CUresult& result);
// memory.cpp, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: the pool of the live pool allocation at
// `base`, else null. May be called with Core::alloc_mutex held (the pools never take it while
// holding their own lock).
CUmemoryPool pool_of_pointer(std::uintptr_t base) noexcept;
// The program's handle of a pool (Allocation::native_pool names blocks of the driver's pools).
CUmemoryPool pool_handle(const MemPool& pool) noexcept;

}  // namespace cudamux::core
