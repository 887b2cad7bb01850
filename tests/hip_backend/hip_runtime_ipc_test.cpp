// The runtime API's IPC on the hip backend over the fake HIP runtime (issue 17): cudaIpc*
// handles made here are opened by another process (driver_ipc_child, of the conformance suite),
// which reads and writes the same memory and waits for this process's event; this process
// cannot open its own handles. (The runtime API has no stream memory operations.) A file of its
// own: cuda_runtime_api.h and HIP's headers do not mix in one translation unit.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fake_hip_hooks.hpp"
#include "ipc_child_command.hpp"

namespace {

using namespace fake_hip_hooks;

#define ASSERT_RT(call) ASSERT_EQ((call), cudaSuccess) << #call

TEST(HipRuntimeIpc, AnotherProcessOpensMemoryAndEvent) {
  const std::string child_path = ipc_child::program_path();
  if (access(child_path.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << child_path;
  ASSERT_RT(cudaSetDevice(0));
  void* buf = nullptr;
  ASSERT_RT(cudaMalloc(&buf, 1 << 16));
  const unsigned value = 0xc0ffee11;
  ASSERT_RT(cudaMemcpy(buf, &value, sizeof value, cudaMemcpyHostToDevice));
  cudaIpcMemHandle_t mh{};
  ASSERT_RT(cudaIpcGetMemHandle(&mh, buf));
  EXPECT_NE(fake_log().find("hipIpcGetMemHandle("), std::string::npos) << fake_log();
  cudaEvent_t e = nullptr;
  ASSERT_RT(cudaEventCreateWithFlags(&e, cudaEventInterprocess | cudaEventDisableTiming));
  cudaIpcEventHandle_t eh{};
  ASSERT_RT(cudaIpcGetEventHandle(&eh, e));
  cudaStream_t s = nullptr;
  ASSERT_RT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ASSERT_RT(cudaEventRecord(e, s));
  ASSERT_RT(cudaStreamSynchronize(s));

  // This process cannot open its own handles.
  void* own = nullptr;
  EXPECT_EQ(cudaIpcOpenMemHandle(&own, mh, cudaIpcMemLazyEnablePeerAccess),
            cudaErrorDeviceUninitialized);
  cudaEvent_t own_event = nullptr;
  EXPECT_EQ(cudaIpcOpenEventHandle(&own_event, eh), cudaErrorDeviceUninitialized);
  (void)cudaGetLastError();

  const std::string command =
      child_path + " " + ipc_child::hex(&mh, sizeof mh) + " " + ipc_child::hex(&eh, sizeof eh);
  FILE* child = popen(command.c_str(), "r");
  ASSERT_NE(child, nullptr);
  char word[64] = {}, state[64] = {}, last[64] = {};
  const bool got = fgets(word, sizeof word, child) != nullptr &&
                   fgets(state, sizeof state, child) != nullptr &&
                   fgets(last, sizeof last, child) != nullptr;
  const int status = pclose(child);
  EXPECT_TRUE(got);
  EXPECT_STREQ(word, "c0ffee11\n");
  EXPECT_STREQ(state, "done\n") << "the record completed before the child started";
  EXPECT_STREQ(last, "synchronized\n");
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  unsigned reply = 0;
  ASSERT_RT(cudaMemcpy(&reply, static_cast<char*>(buf) + 4, sizeof reply, cudaMemcpyDeviceToHost));
  EXPECT_EQ(reply, ~value) << "the other process wrote into the same memory";
  ASSERT_RT(cudaStreamDestroy(s));
  ASSERT_RT(cudaEventDestroy(e));
  ASSERT_RT(cudaFree(buf));
}

}  // namespace
