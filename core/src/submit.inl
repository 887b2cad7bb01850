// Legacy-default-stream ordering (included from core.hpp).
//
// CUDA: work on the legacy default stream waits for all prior work of the
// context's blocking streams, and work on a blocking stream waits for all prior
// work of the legacy stream. Non-blocking streams order against neither. We
// implement it with one marker event per stream, recorded only when the other
// side actually has work it has not ordered against yet, so streams that never
// meet the legacy stream pay a mutex and two compares per submission.
#pragma once

namespace cudamux::core {

template <class Op>
backend::Status submit(Stream& s, Op&& op) {
  if (!s.blocking() && s.kind != StreamKind::legacy) return op(*s.queue);
  Context& ctx = *s.ctx;
  std::lock_guard lock(ctx.order_mutex);
  if (s.kind == StreamKind::legacy) {
    for (Stream* other : ctx.streams) {
      if (!other->blocking() || !other->has_unsynced_work) continue;
      if (auto st = other->queue->record(*other->marker); !st.ok()) return st;
      if (auto st = s.queue->wait(*other->marker); !st.ok()) return st;
      other->has_unsynced_work = false;
    }
    ++ctx.legacy_submitted;
    return op(*s.queue);
  }
  if (ctx.legacy_submitted > s.legacy_seen) {
    Stream& legacy = *ctx.legacy;
    if (ctx.legacy_marker_at != ctx.legacy_submitted) {
      if (auto st = legacy.queue->record(*legacy.marker); !st.ok()) return st;
      ctx.legacy_marker_at = ctx.legacy_submitted;
    }
    if (auto st = s.queue->wait(*legacy.marker); !st.ok()) return st;
    s.legacy_seen = ctx.legacy_submitted;
  }
  s.has_unsynced_work = true;
  return op(*s.queue);
}

}  // namespace cudamux::core
