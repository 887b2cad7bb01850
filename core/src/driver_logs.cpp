// CUDA's error log management (cuLogs*, CUDA 12.9): every failed call's reason, as cudamux's
// reject() states it, kept in a ring of at most 25600 bytes as NVIDIA's driver keeps its own,
// handed to registered callbacks and, with CUDA_LOG_FILE, written out as it happens. Lines
// have NVIDIA's shape: [Time][TID][Source][Severity][API Entry Point] Message.
#include "driver_logs.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <list>
#include <mutex>
#include <string>
#include <vector>

#include "core.hpp"
#include "cudamux/driver_impl.hpp"

namespace cudamux::core {
namespace {

constexpr std::size_t kLogCapacity = 25600;  // NVIDIA's documented maximum

struct Callback {
  CUlogsCallback fn;
  void* user;
};

struct LogState {
  std::mutex mu;
  std::deque<std::pair<CUlogIterator, std::string>> entries;  // oldest first, each ends in \n
  std::size_t bytes = 0;
  CUlogIterator next = 0;  // sequence number of the next message
  bool dropped = false;    // older messages were overwritten
  std::list<Callback> callbacks;
  std::FILE* live = nullptr;  // CUDA_LOG_FILE
  bool live_checked = false;
};

LogState& state() {
  static auto* s = new LogState;  // outlives every static destructor that may still log
  return *s;
}

thread_local bool t_in_callback = false;  // a callback's own failing calls are not reported

std::string format_line(CUlogLevel level, const char* function, const char* message) {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t t = system_clock::to_time_t(now);
  std::tm tm{};
  localtime_r(&t, &tm);
  const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  char head[96];
  std::snprintf(head, sizeof head, "[%02d:%02d:%02d.%03lld][%ld][CUDA][%c][", tm.tm_hour, tm.tm_min,
                tm.tm_sec, static_cast<long long>(ms), static_cast<long>(::syscall(SYS_gettid)),
                level == CU_LOG_LEVEL_ERROR ? 'E' : 'W');
  std::string line(head);
  line += function ? function : "?";
  line += "] ";
  line += message ? message : "";
  line += '\n';
  return line;
}

void open_live_locked(LogState& s) {
  if (s.live_checked) return;
  s.live_checked = true;
  const char* target = std::getenv("CUDA_LOG_FILE");
  if (!target || !*target) return;
  if (std::strcmp(target, "stdout") == 0)
    s.live = stdout;
  else if (std::strcmp(target, "stderr") == 0)
    s.live = stderr;
  else
    s.live = std::fopen(target, "a");
}

}  // namespace

void record_driver_log(CUlogLevel level, const char* function, const char* message) noexcept {
  if (t_in_callback) return;
  try {
    LogState& s = state();
    std::string line = format_line(level, function, message);
    std::vector<Callback> callbacks;
    {
      std::lock_guard lock(s.mu);
      open_live_locked(s);
      if (s.live) {
        std::fputs(line.c_str(), s.live);
        std::fflush(s.live);
      }
      if (line.size() > kLogCapacity) line.resize(kLogCapacity - 1), line += '\n';
      s.bytes += line.size();
      s.entries.emplace_back(s.next++, line);
      while (s.bytes > kLogCapacity) {
        s.bytes -= s.entries.front().second.size();
        s.entries.pop_front();
        s.dropped = true;
      }
      callbacks.assign(s.callbacks.begin(), s.callbacks.end());
    }
    if (!callbacks.empty()) {
      t_in_callback = true;
      line.pop_back();  // the callback gets the message without its newline
      for (const auto& cb : callbacks) cb.fn(cb.user, level, line.data(), line.size());
      t_in_callback = false;
    }
  } catch (...) {
    t_in_callback = false;
  }
}

}  // namespace cudamux::core

namespace cudamux::impl {
using core::reject;

CUresult cuLogsRegisterCallback(CUlogsCallback callbackFunc, void* userData,
                                CUlogsCallbackHandle* callback_out) {
  if (!callbackFunc)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuLogsRegisterCallback", "callback cannot be NULL");
  auto& s = core::state();
  std::lock_guard lock(s.mu);
  s.callbacks.push_back({callbackFunc, userData});
  // The handle is the list node: stable until unregistered.
  if (callback_out) *callback_out = reinterpret_cast<CUlogsCallbackHandle>(&s.callbacks.back());
  return CUDA_SUCCESS;
}

CUresult cuLogsUnregisterCallback(CUlogsCallbackHandle callback) {
  auto& s = core::state();
  {
    std::lock_guard lock(s.mu);
    for (auto it = s.callbacks.begin(); it != s.callbacks.end(); ++it) {
      if (reinterpret_cast<CUlogsCallbackHandle>(&*it) == callback) {
        s.callbacks.erase(it);
        return CUDA_SUCCESS;
      }
    }
  }
  return reject(CUDA_ERROR_INVALID_VALUE, "cuLogsUnregisterCallback",
                "not a registered callback handle");
}

CUresult cuLogsCurrent(CUlogIterator* iterator_out, unsigned int flags) {
  if (!iterator_out)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuLogsCurrent", "iterator_out cannot be NULL");
  (void)flags;  // reserved; NVIDIA's driver (580) ignores it here
  auto& s = core::state();
  std::lock_guard lock(s.mu);
  *iterator_out = s.next;
  return CUDA_SUCCESS;
}

namespace {

// The buffered messages from *iterator (all when null), oldest first, advancing it; a head
// line says when messages before them were overwritten.
std::vector<std::string> take_logs(CUlogIterator* iterator, bool& truncated) {
  auto& s = core::state();
  std::lock_guard lock(s.mu);
  std::vector<std::string> out;
  const CUlogIterator from = iterator ? *iterator : 0;
  truncated = false;
  if (!s.entries.empty() && s.dropped && s.entries.front().first > from) truncated = true;
  for (const auto& [seq, text] : s.entries)
    if (seq >= from) out.push_back(text);
  if (iterator) *iterator = s.next;
  return out;
}

}  // namespace

CUresult cuLogsDumpToFile(CUlogIterator* iterator, const char* pathToFile, unsigned int flags) {
  if (!pathToFile)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuLogsDumpToFile", "pathToFile cannot be NULL");
  if (flags != 0) return reject(CUDA_ERROR_INVALID_VALUE, "cuLogsDumpToFile", "flags must be 0");
  std::FILE* f = std::fopen(pathToFile, "a");
  if (!f) return reject(CUDA_ERROR_INVALID_VALUE, "cuLogsDumpToFile", "cannot open the file");
  bool truncated = false;
  const auto logs = take_logs(iterator, truncated);
  if (truncated) std::fputs("[CUDA] earlier log messages were overwritten\n", f);
  for (const auto& l : logs) std::fputs(l.c_str(), f);
  const bool ok = std::fclose(f) == 0;
  return ok ? CUDA_SUCCESS
            : reject(CUDA_ERROR_INVALID_VALUE, "cuLogsDumpToFile", "writing the file failed");
}

CUresult cuLogsDumpToMemory(CUlogIterator* iterator, char* buffer, size_t* size,
                            unsigned int flags) {
  if (!buffer)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuLogsDumpToMemory", "buffer cannot be NULL");
  if (!size) return reject(CUDA_ERROR_INVALID_VALUE, "cuLogsDumpToMemory", "size cannot be NULL");
  if (flags != 0) return reject(CUDA_ERROR_INVALID_VALUE, "cuLogsDumpToMemory", "flags must be 0");
  const std::size_t cap = *size;
  bool truncated = false;
  auto logs = take_logs(iterator, truncated);
  if (logs.empty()) {
    *size = 0;
    if (cap > 0) buffer[0] = '\0';
    return CUDA_SUCCESS;
  }
  // The newest messages that fit (with the NUL, and a head line when some are left out).
  static constexpr char kHead[] = "[CUDA] log buffer too small: older messages left out\n";
  std::size_t first = logs.size(), used = 0;
  while (first > 0 && used + logs[first - 1].size() + 1 <= cap) used += logs[--first].size();
  if (first == logs.size()) {
    *size = 0;
    return reject(CUDA_ERROR_INVALID_VALUE, "cuLogsDumpToMemory",
                  "buffer too small to hold any message");
  }
  std::string text;
  if (first > 0 || truncated) {
    // Make room for the head line by leaving out more of the oldest messages.
    while (first < logs.size() && used + sizeof kHead > cap) used -= logs[first++].size();
    if (used + sizeof kHead <= cap) text = kHead;
  }
  for (std::size_t i = first; i < logs.size(); ++i) text += logs[i];
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  *size = text.size();
  return CUDA_SUCCESS;
}

}  // namespace cudamux::impl
