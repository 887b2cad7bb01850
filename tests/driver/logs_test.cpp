// Error log management (cuLogs*): failed calls leave a message in the driver's log, which is
// dumped to memory or a file from an iterator and handed to registered callbacks.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "conformance.hpp"

namespace conformance {
namespace {

using Logs = Driver;

struct Received {
  std::vector<std::string> messages;
  std::vector<CUlogLevel> levels;
};

void CUDA_CB on_log(void* data, CUlogLevel level, char* message, size_t length) {
  auto* r = static_cast<Received*>(data);
  r->messages.emplace_back(message, length);
  r->levels.push_back(level);
}

// A call that fails and is logged on every driver: NVIDIA's own documented example
// ("[cuLogsDumpToMemory] buffer cannot be NULL").
CUresult failing_call() {
  size_t size = 16;
  return cuLogsDumpToMemory(nullptr, nullptr, &size, 0);
}

TEST_F(Logs, FailedCallsAreLoggedFromTheIterator) {
  CUlogIterator it = 0;
  ASSERT_OK(cuLogsCurrent(&it, 0));
  char buffer[25600 + 1];
  size_t size = sizeof buffer;
  // Nothing new since the iterator: an empty dump.
  ASSERT_OK(cuLogsDumpToMemory(&it, buffer, &size, 0));
  EXPECT_EQ(size, 0u);
  ASSERT_CU(CUDA_ERROR_INVALID_VALUE, failing_call());
  size = sizeof buffer;
  ASSERT_OK(cuLogsDumpToMemory(&it, buffer, &size, 0));
  ASSERT_GT(size, 0u);
  EXPECT_EQ(std::strlen(buffer), size);
  EXPECT_NE(std::string(buffer).find("cuLogsDumpToMemory"), std::string::npos) << buffer;
  // The iterator moved past what was dumped.
  size = sizeof buffer;
  ASSERT_OK(cuLogsDumpToMemory(&it, buffer, &size, 0));
  EXPECT_EQ(size, 0u) << buffer;
  CUlogIterator now = 0;
  ASSERT_OK(cuLogsCurrent(&now, 0));
  EXPECT_EQ(now, it);
}

TEST_F(Logs, CallbacksReceiveErrorsUntilUnregistered) {
  Received got;
  CUlogsCallbackHandle handle = nullptr;
  ASSERT_OK(cuLogsRegisterCallback(on_log, &got, &handle));
  ASSERT_NE(handle, nullptr);
  ASSERT_CU(CUDA_ERROR_INVALID_VALUE, failing_call());
  ASSERT_FALSE(got.messages.empty());
  EXPECT_EQ(got.levels.back(), CU_LOG_LEVEL_ERROR);
  EXPECT_NE(got.messages.back().find("cuLogsDumpToMemory"), std::string::npos)
      << got.messages.back();
  ASSERT_OK(cuLogsUnregisterCallback(handle));
  const size_t before = got.messages.size();
  ASSERT_CU(CUDA_ERROR_INVALID_VALUE, failing_call());
  EXPECT_EQ(got.messages.size(), before);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLogsRegisterCallback(nullptr, nullptr, nullptr));
}

TEST_F(Logs, DumpToFileAndBadArguments) {
  CUlogIterator it = 0;
  ASSERT_OK(cuLogsCurrent(&it, 0));
  ASSERT_CU(CUDA_ERROR_INVALID_VALUE, failing_call());
  const auto path = std::filesystem::temp_directory_path() /
                    ("cudamux-logs-" + std::to_string(::getpid()) + ".txt");
  std::filesystem::remove(path);
  ASSERT_OK(cuLogsDumpToFile(&it, path.c_str(), 0));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(path);
  EXPECT_NE(text.str().find("cuLogsDumpToMemory"), std::string::npos) << text.str();

  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLogsCurrent(nullptr, 0));
  EXPECT_OK(cuLogsCurrent(&it, 1));  // reserved flags: NVIDIA's driver (580) ignores them
  size_t size = 16;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLogsDumpToMemory(&it, nullptr, &size, 0));
  char buffer[64];
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLogsDumpToMemory(&it, buffer, nullptr, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLogsDumpToFile(&it, nullptr, 0));
}

TEST_F(Logs, ABufferTooSmallForAnyMessageIsRefused) {
  CUlogIterator it = 0;
  ASSERT_OK(cuLogsCurrent(&it, 0));
  ASSERT_CU(CUDA_ERROR_INVALID_VALUE, failing_call());
  char tiny[4];
  size_t size = sizeof tiny;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLogsDumpToMemory(&it, tiny, &size, 0));
  EXPECT_EQ(size, 0u);
}

}  // namespace
}  // namespace conformance
