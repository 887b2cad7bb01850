// Configuration and plugin failure paths under fault (issue 9): each case runs the probe
// program in a child process with a bounded wait, and expects a clear error, never a hang.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr int kSharedObjectInitFailed = 303;  // CUDA_ERROR_SHARED_OBJECT_INIT_FAILED
constexpr int kInvalidValue = 1;              // CUDA_ERROR_INVALID_VALUE

struct ProbeRun {
  bool timed_out = false;
  bool signaled = false;
  int status = -1;     // exit code, or the signal when `signaled`
  std::string output;  // stdout and stderr together
  double seconds = 0;
};

// Runs the probe with `env` added to (or, with an empty value, removed from) this
// process's environment; kills it after `limit_s` and reports timed_out.
ProbeRun run_probe(const std::map<std::string, std::string>& env,
                   std::vector<std::string> args = {CUDAMUX_LIB_DIR "/libcuda.so.1"},
                   int limit_s = 60) {
  std::vector<std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (env.count(key) == 0) vars.push_back(kv);
  }
  for (const auto& [k, v] : env) {
    if (!v.empty()) vars.push_back(k + "=" + v);
  }
  std::vector<char*> envp;
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  args.insert(args.begin(), CUDAMUX_RELIABILITY_PROBE);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int fds[2];
  EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  ProbeRun r;
  const auto deadline = start + std::chrono::seconds(limit_s);
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;  // EOF: the child (and anything it started) closed the pipe
    r.output.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFSIGNALED(status)) {
    r.signaled = true;
    r.status = WTERMSIG(status);
  } else {
    r.status = WEXITSTATUS(status);
  }
  return r;
}

class Fault : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::path(::testing::TempDir()) /
          ("cudamux-fault-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  void write(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::trunc) << text;
  }
  std::string cuinit(int code) { return "cuInit=" + std::to_string(code) + "\n"; }
  fs::path dir;
};

TEST_F(Fault, ProbeWorksWithAValidConfig) {
  write(dir / "ok.toml", "backend = \"mock\"\n");
  const ProbeRun r = run_probe({{"CUDAMUX_CONFIG", (dir / "ok.toml").string()}});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cuInit=0\n"));
}

TEST_F(Fault, MissingConfigFileIsAnError) {
  const fs::path p = dir / "nope.toml";
  const ProbeRun r = run_probe({{"CUDAMUX_CONFIG", p.string()}});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr(cuinit(kInvalidValue)));
  EXPECT_THAT(r.output, HasSubstr("CUDAMUX_CONFIG='" + p.string() + "': file does not exist"));
}

TEST_F(Fault, ConfigThatIsADirectoryIsAnError) {
  const ProbeRun r = run_probe({{"CUDAMUX_CONFIG", dir.string()}});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr(cuinit(kInvalidValue)));
  EXPECT_THAT(r.output, HasSubstr("is a directory"));
}

TEST_F(Fault, UnreadableConfigIsAnError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  const fs::path p = dir / "secret.toml";
  write(p, "backend = \"mock\"\n");
  fs::permissions(p, fs::perms::none);
  const ProbeRun r = run_probe({{"CUDAMUX_CONFIG", p.string()}});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cannot read config file '" + p.string() + "'"));
  EXPECT_THAT(r.output, HasSubstr("Permission denied"));
}

// A FIFO (or any special file) as config: opening it for reading would wait for a writer
// forever. It must be refused at once.
TEST_F(Fault, ConfigThatIsAFifoIsAnErrorNotAHang) {
  const fs::path p = dir / "fifo.toml";
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  const ProbeRun r =
      run_probe({{"CUDAMUX_CONFIG", p.string()}}, {CUDAMUX_LIB_DIR "/libcuda.so.1"}, 20);
  ASSERT_FALSE(r.timed_out) << "cuInit hung on a FIFO config:\n" << r.output;
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr(cuinit(kInvalidValue)));
  EXPECT_THAT(r.output, HasSubstr("not a regular file"));
}

// The same file, edited between runs: each run reads it afresh and reports what is wrong
// with this version, with file:line:column.
TEST_F(Fault, ConfigChangedBetweenRuns) {
  const fs::path p = dir / "c.toml";
  const std::map<std::string, std::string> env{{"CUDAMUX_CONFIG", p.string()}};
  write(p, "backend = \"mock\"\n");
  ProbeRun r = run_probe(env);
  EXPECT_EQ(r.status, 0) << r.output;

  write(p, "backend = \"mock\"\n[log\nlevel = 3\n");
  r = run_probe(env);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr(p.string() + ":2:"));
  EXPECT_THAT(r.output, HasSubstr("malformed TOML"));

  write(p, "backend = \"nosuchbackend\"\n");
  r = run_probe(env);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr(cuinit(kSharedObjectInitFailed)));
  EXPECT_THAT(r.output, HasSubstr("no libcudamux-nosuchbackend.so found"));
  EXPECT_THAT(r.output, HasSubstr(p.string() + ":1:"));  // names where the choice came from

  write(p, "");  // emptied: built-in defaults again
  r = run_probe(env);
  EXPECT_EQ(r.status, 0) << r.output;
}

// The config changes under a running program: it was read once, by cuInit; the program
// carries on and a second cuInit returns the first one's result.
TEST_F(Fault, ConfigChangedDuringARunIsNotReread) {
  const fs::path p = dir / "c.toml";
  write(p, "backend = \"mock\"\n");
  const ProbeRun r = run_probe({{"CUDAMUX_CONFIG", p.string()}, {"PROBE_CLOBBER", p.string()}});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cuInit again=0\n"));
  std::ifstream in(p);
  std::string first;
  std::getline(in, first);
  EXPECT_THAT(first, HasSubstr("not TOML"));  // the file really was clobbered
}

// libcuda.so.1 copied to a folder without cudamux/plugins beside it.
TEST_F(Fault, PluginFolderMissing) {
  for (const char* lib : {"libcuda.so.1", "libcudamux-core.so.0"}) {
    fs::copy_file(fs::path(CUDAMUX_LIB_DIR) / lib, dir / lib);
  }
  const ProbeRun r = run_probe({{"CUDAMUX_BACKEND", "mock"}}, {(dir / "libcuda.so.1").string()});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr(cuinit(kSharedObjectInitFailed)));
  EXPECT_THAT(r.output, HasSubstr("no libcudamux-mock.so found in the plugin search path"));
  EXPECT_THAT(r.output, HasSubstr((dir / "cudamux" / "plugins" / "libcudamux-mock.so").string()));
  // Every other call says the driver is not initialised rather than crashing.
  EXPECT_THAT(r.output, HasSubstr("cuDeviceGetCount=3 "));  // CUDA_ERROR_NOT_INITIALIZED
}

TEST_F(Fault, PluginPathFolderMissing) {
  const fs::path missing = dir / "does-not-exist";
  const ProbeRun r =
      run_probe({{"CUDAMUX_BACKEND", "crashinit"}, {"CUDAMUX_PLUGIN_PATH", missing.string()}});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr(cuinit(kSharedObjectInitFailed)));
  EXPECT_THAT(r.output, HasSubstr((missing / "libcudamux-crashinit.so").string() +
                                  "  (from CUDAMUX_PLUGIN_PATH)"));
}

// A plugin that crashes in its init takes the process down, as a crashing driver would;
// what we owe is a line naming it, before the previous disposition (core dump, or a
// sanitizer's report) acts.
TEST_F(Fault, PluginCrashingInInitIsNamed) {
  const ProbeRun r = run_probe(
      {{"CUDAMUX_BACKEND", "crashinit"}, {"CUDAMUX_PLUGIN_PATH", CUDAMUX_FAULT_PLUGIN_DIR}});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_TRUE(r.signaled || r.status != 0) << r.output;
  if (r.signaled) {
    EXPECT_EQ(r.status, SIGSEGV);
  }
  EXPECT_THAT(r.output,
              HasSubstr("cudamux: fatal: backend plugin " + std::string(CUDAMUX_FAULT_PLUGIN_DIR) +
                        "/libcudamux-crashinit.so crashed in cudamux_backend_create"));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("cuInit=")));
}

TEST_F(Fault, PluginHangingInInitTimesOut) {
  const ProbeRun r = run_probe({{"CUDAMUX_BACKEND", "hanginit"},
                                {"CUDAMUX_PLUGIN_PATH", CUDAMUX_FAULT_PLUGIN_DIR},
                                {"CUDAMUX_PLUGIN_INIT_TIMEOUT", "1"}},
                               {CUDAMUX_LIB_DIR "/libcuda.so.1"}, 60);
  ASSERT_FALSE(r.timed_out) << "cuInit hung:\n" << r.output;
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr(cuinit(kSharedObjectInitFailed)));
  EXPECT_THAT(r.output, HasSubstr("cudamux_backend_create did not return within 1 s"));
  EXPECT_THAT(r.output, HasSubstr("cuDeviceGetCount=3 "));
}

TEST_F(Fault, BadInitTimeoutValueWarnsAndUsesTheDefault) {
  const ProbeRun r =
      run_probe({{"CUDAMUX_BACKEND", "mock"}, {"CUDAMUX_PLUGIN_INIT_TIMEOUT", "soon"}});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("CUDAMUX_PLUGIN_INIT_TIMEOUT='soon' is not a number"));
}

TEST_F(Fault, NoTimeoutCallsCreateOnTheCallersThread) {
  // 0 = no limit; a plugin that fails normally still fails clearly.
  const ProbeRun r = run_probe({{"CUDAMUX_BACKEND", "mock"}, {"CUDAMUX_PLUGIN_INIT_TIMEOUT", "0"}});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cuInit=0\n"));
}

}  // namespace
