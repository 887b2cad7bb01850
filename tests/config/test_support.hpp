// Shared fixture: a private temporary folder and a clean, restored environment.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

namespace cudamux::test {

namespace fs = std::filesystem;

inline constexpr const char* kManagedEnv[] = {"CUDAMUX_CONFIG",
                                              "CUDAMUX_BACKEND",
                                              "CUDAMUX_PLUGIN_PATH",
                                              "CUDAMUX_LOG_LEVEL",
                                              "CUDAMUX_LOG_SINK",
                                              "XDG_CONFIG_HOME",
                                              "HOME"};

class TempEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           ("cudamux-config-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    dir_ = fs::canonical(dir_);
    for (const char* name : kManagedEnv) {
      const char* v = std::getenv(name);
      saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
      ::unsetenv(name);
    }
    // An empty HOME keeps the developer's own ~/.config/cudamux out of every test.
    set_env("HOME", (dir_ / "emptyhome").string());
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static void set_env(const char* name, const std::string& value) {
    ::setenv(name, value.c_str(), 1);
  }

  // Writes `text` to dir()/relative (creating folders) and returns the full path.
  std::string write(const std::string& relative, const std::string& text) const {
    const fs::path p = dir_ / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }

  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
  std::map<std::string, std::optional<std::string>> saved_;
};

}  // namespace cudamux::test
