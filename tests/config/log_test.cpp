#include "cudamux/log.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "cudamux/api_support.hpp"
#include "test_support.hpp"

namespace cudamux::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class LogTest : public TempEnvTest {
 protected:
  void TearDown() override {
    log::configure(config::Settings{});  // back to stderr/warn for the next test
    TempEnvTest::TearDown();
  }
  config::Settings file_settings(const std::string& level) const {
    config::Settings s;
    s.log_level = level;
    s.log_sink = "file:" + (dir() / "cudamux.log").string();
    return s;
  }
};

TEST(LogDefaultTest, BeforeConfigureStderrAtWarn) {
  // Re-executes this binary for this test alone, so no other test has configured yet.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        auto logger = log::get();
        const bool ok = logger != nullptr && logger->name() == "cudamux" &&
                        logger->level() == spdlog::level::warn && !api::trace_enabled();
        logger->warn("early warning");
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "\\[cudamux\\] \\[.*warning.*\\] early warning");
}

TEST_F(LogTest, FileSinkGetsLevelAndPattern) {
  log::configure(file_settings("info"));
  auto logger = log::get();
  EXPECT_EQ(logger->name(), "cudamux");
  EXPECT_EQ(logger->level(), spdlog::level::info);
  logger->info("hello {}", 42);
  logger->debug("not shown");
  const std::string text = slurp(dir() / "cudamux.log");  // flushed per message
  EXPECT_THAT(text, AllOf(HasSubstr("[cudamux]"), HasSubstr("[info] hello 42"),
                          Not(HasSubstr("not shown"))));
}

TEST_F(LogTest, FileSinkCreatesMissingFolders) {
  config::Settings s = file_settings("info");
  s.log_sink = "file:" + (dir() / "new/sub/cudamux.log").string();
  log::configure(s);
  log::get()->info("in a new folder");
  EXPECT_THAT(slurp(dir() / "new/sub/cudamux.log"), HasSubstr("in a new folder"));
}

TEST_F(LogTest, FileSinkAppends) {
  { std::ofstream(dir() / "cudamux.log") << "previous run\n"; }
  log::configure(file_settings("warn"));
  log::get()->error("second run");
  EXPECT_THAT(slurp(dir() / "cudamux.log"),
              AllOf(HasSubstr("previous run"), HasSubstr("[error] second run")));
}

TEST_F(LogTest, StdoutSink) {
  config::Settings s;
  s.log_sink = "stdout";
  s.log_level = "info";
  ::testing::internal::CaptureStdout();
  log::configure(s);
  log::get()->info("to stdout");
  log::get()->flush();
  EXPECT_THAT(::testing::internal::GetCapturedStdout(), HasSubstr("[cudamux] [info] to stdout"));
}

TEST_F(LogTest, TraceLevelTurnsOnApiTracing) {
  log::configure(file_settings("trace"));
  EXPECT_TRUE(api::trace_enabled());
  EXPECT_EQ(log::get()->level(), spdlog::level::trace);
  log::configure(file_settings("debug"));
  EXPECT_FALSE(api::trace_enabled());
}

TEST_F(LogTest, OffSilencesEverything) {
  log::configure(file_settings("off"));
  log::get()->critical("never");
  EXPECT_THAT(slurp(dir() / "cudamux.log"), Not(HasSubstr("never")));
}

TEST_F(LogTest, DebugLevelReportsWhereSettingsCameFrom) {
  config::Settings s = file_settings("debug");
  s.origins["backend"] = "CUDAMUX_BACKEND";
  s.backend = "mock";
  log::configure(s);
  EXPECT_THAT(slurp(dir() / "cudamux.log"), HasSubstr("backend = 'mock' (from CUDAMUX_BACKEND)"));
}

TEST_F(LogTest, LoggingWhileReconfiguringIsSafe) {
  // Threads keep logging through whichever logger they got while configure() swaps it.
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&stop] {
      while (!stop.load()) log::get()->debug("tick");
    });
  }
  for (int i = 0; i < 50; ++i) log::configure(file_settings(i % 2 ? "debug" : "info"));
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(log::get()->level(), spdlog::level::debug);  // the last configure() won
}

TEST_F(LogTest, UnopenableFileFallsBackToStderrAndSaysSo) {
  // Under a regular file: no one, not even root, can create that (spdlog creates folders).
  const std::string blocker = write("not-a-folder", "");
  config::Settings s;
  s.log_sink = "file:" + blocker + "/x.log";
  s.log_level = "info";
  ::testing::internal::CaptureStderr();
  EXPECT_NO_THROW(log::configure(s));
  log::get()->info("still logging");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, AllOf(HasSubstr("cannot open log file '" + blocker + "/x.log'"),
                         HasSubstr("logging to stderr instead"), HasSubstr("still logging")));
}

}  // namespace
}  // namespace cudamux::test
