#include "cudamux/plugin_loader.hpp"

#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

#include "test_support.hpp"

namespace cudamux::test {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const fs::path kPluginDir = CUDAMUX_TEST_PLUGIN_DIR;

class PluginLoaderTest : public TempEnvTest {
 protected:
  void SetUp() override {
    TempEnvTest::SetUp();
    sink_ = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured_);
    logger_ = std::make_shared<spdlog::logger>("cudamux", sink_);
    logger_->set_level(spdlog::level::trace);
  }

  // Settings searching the test plugins' folder after an empty private one.
  config::Settings settings(const std::string& backend) const {
    config::Settings s;
    s.backend = backend;
    s.source = "test-settings";
    s.plugin_paths = {(dir() / "empty").string(), kPluginDir.string()};
    s.plugin_path_origins = {"CUDAMUX_PLUGIN_PATH", "test"};
    return s;
  }

  std::string load_error(const config::Settings& s) {
    try {
      (void)plugins::load_backend(s, logger_);
    } catch (const plugins::PluginError& e) {
      return e.what();
    }
    ADD_FAILURE() << "no PluginError for backend " << s.backend;
    return {};
  }

  // Every failure message lists every folder searched.
  static void expect_lists_search_path(const std::string& msg, const config::Settings& s) {
    const std::string file = plugins::plugin_file_name(s.backend);
    for (const std::string& folder : plugins::search_paths(s)) {
      EXPECT_THAT(msg, HasSubstr((fs::path(folder) / file).string())) << "folder " << folder;
    }
  }

  std::ostringstream captured_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> logger_;
};

TEST_F(PluginLoaderTest, FileName) {
  EXPECT_EQ(plugins::plugin_file_name("hip"), "libcudamux-hip.so");
}

TEST_F(PluginLoaderTest, DefaultFolderIsNextToTheObjectHoldingTheCore) {
  // The core is libcudamux-core.so.0; find where the dynamic loader mapped it from.
  std::ifstream maps("/proc/self/maps");
  std::string line, core_path;
  while (std::getline(maps, line)) {
    const auto at = line.find('/');
    if (at != std::string::npos && line.find("libcudamux-core.so") != std::string::npos) {
      core_path = line.substr(at);
      break;
    }
  }
  ASSERT_FALSE(core_path.empty()) << "libcudamux-core.so is not mapped into the test";
  EXPECT_EQ(plugins::default_plugin_dir(),
            (fs::canonical(core_path).parent_path() / "cudamux/plugins").string());
}

TEST_F(PluginLoaderTest, SearchOrderIsEnvThenConfigThenDefault) {
  set_env("CUDAMUX_CONFIG", write("c.toml", "plugin_path = [\"/cfg/a\", \"/cfg/b\"]\n"));
  set_env("CUDAMUX_PLUGIN_PATH", "/env/x:/env/y");
  const config::Settings s = config::load();
  EXPECT_THAT(plugins::search_paths(s),
              ElementsAre("/env/x", "/env/y", "/cfg/a", "/cfg/b", plugins::default_plugin_dir()));
}

TEST_F(PluginLoaderTest, LoadsAWorkingPluginAndPassesItsConfigTable) {
  const std::string path = write("c.toml", "backend = \"testok\"\n[testok]\ndevices = 3\n");
  config::Settings s = config::load_file(path);
  s.plugin_paths = {kPluginDir.string()};
  s.plugin_path_origins = {"test"};
  const plugins::LoadedBackend loaded = plugins::load_backend(s, logger_);
  ASSERT_NE(loaded.backend, nullptr);
  EXPECT_EQ(loaded.name, "testok");
  EXPECT_EQ(loaded.file, (kPluginDir / "libcudamux-testok.so").string());
  EXPECT_THAT(loaded.reason, HasSubstr("backend 'testok' set by " + path + ":1:11"));
  EXPECT_EQ(loaded.backend->name(), "testok");
  EXPECT_EQ(loaded.backend->devices().count(), 3);
  // The plugin got our logger and the config source.
  EXPECT_THAT(captured_.str(),
              HasSubstr("testok: created with config from " + path + " (with table)"));
}

TEST_F(PluginLoaderTest, PluginConfigTableOutlivesTheSettings) {
  plugins::LoadedBackend loaded;
  {
    config::Settings s = settings("testok");
    s.document.insert("testok", toml::table{{"devices", 5}});
    loaded = plugins::load_backend(s, logger_);
  }  // Settings (and its document) destroyed here; the plugin reads its table later.
  EXPECT_EQ(loaded.backend->devices().count(), 5);
}

TEST_F(PluginLoaderTest, NoConfigTableMeansNullConfig) {
  const plugins::LoadedBackend loaded = plugins::load_backend(settings("testok"), logger_);
  EXPECT_EQ(loaded.backend->devices().count(), 0);
  EXPECT_THAT(captured_.str(), HasSubstr("(without table)"));
}

TEST_F(PluginLoaderTest, NullLoggerUsesTheCudamuxLogger) {
  EXPECT_NE(plugins::load_backend(settings("testok"), nullptr).backend, nullptr);
}

TEST_F(PluginLoaderTest, FirstFolderWins) {
  fs::create_directories(dir() / "first");
  fs::copy_file(kPluginDir / "libcudamux-testok.so", dir() / "first/libcudamux-testok.so");
  config::Settings s = settings("testok");
  s.plugin_paths.insert(s.plugin_paths.begin(), (dir() / "first").string());
  s.plugin_path_origins.insert(s.plugin_path_origins.begin(), "test");
  EXPECT_EQ(plugins::load_backend(s, logger_).file,
            (dir() / "first/libcudamux-testok.so").string());
}

TEST_F(PluginLoaderTest, MissingPluginListsEverySearchedPath) {
  const config::Settings s = settings("nosuch");
  const std::string msg = load_error(s);
  EXPECT_THAT(msg, AllOf(HasSubstr("cannot load cudamux backend 'nosuch'"),
                         HasSubstr("no libcudamux-nosuch.so found"),
                         HasSubstr("(from CUDAMUX_PLUGIN_PATH)"), HasSubstr("(from default)")));
  expect_lists_search_path(msg, s);
}

TEST_F(PluginLoaderTest, NotASharedObject) {
  const std::string junk = write("junk/libcudamux-junk.so", "this is not an ELF file\n");
  config::Settings s = settings("junk");
  s.plugin_paths.push_back((dir() / "junk").string());
  s.plugin_path_origins.push_back("test");
  const std::string msg = load_error(s);
  EXPECT_THAT(
      msg, AllOf(HasSubstr("backend 'junk'"), HasSubstr("from " + junk),
                 HasSubstr("the dynamic loader refused it"),
                 // dlerror()'s own words
                 ::testing::AnyOf(HasSubstr("invalid ELF header"), HasSubstr("file too short"))));
  expect_lists_search_path(msg, s);
}

TEST_F(PluginLoaderTest, BrokenFirstFileIsAnErrorNotASkip) {
  // A broken override must be reported, not silently replaced by a later folder's plugin.
  const std::string junk = write("first/libcudamux-testok.so", "junk");
  config::Settings s = settings("testok");
  s.plugin_paths.insert(s.plugin_paths.begin(), (dir() / "first").string());
  s.plugin_path_origins.insert(s.plugin_path_origins.begin(), "test");
  EXPECT_THAT(load_error(s), HasSubstr("from " + junk));
}

TEST_F(PluginLoaderTest, UnresolvedSymbolFailsAtLoadTime) {
  const config::Settings s = settings("unresolved");
  const std::string msg = load_error(s);
  EXPECT_THAT(msg,
              AllOf(HasSubstr((kPluginDir / "libcudamux-unresolved.so").string()),
                    HasSubstr("the dynamic loader refused it: " +
                              (kPluginDir / "libcudamux-unresolved.so").string() +
                              ": undefined symbol: cudamux_test_symbol_that_does_not_exist\n")));
  expect_lists_search_path(msg, s);
}

TEST_F(PluginLoaderTest, LibraryWithoutEntrySymbols) {
  const config::Settings s = settings("noentry");
  const std::string msg = load_error(s);
  EXPECT_THAT(msg, AllOf(HasSubstr((kPluginDir / "libcudamux-noentry.so").string()),
                         HasSubstr("not a cudamux plugin"),
                         HasSubstr("does not export 'cudamux_backend_abi_version'")));
  expect_lists_search_path(msg, s);
}

TEST_F(PluginLoaderTest, LibraryWithoutCreateSymbol) {
  const config::Settings s = settings("abionly");
  const std::string msg = load_error(s);
  EXPECT_THAT(msg, HasSubstr("does not export 'cudamux_backend_create'"));
  expect_lists_search_path(msg, s);
}

TEST_F(PluginLoaderTest, WrongAbiVersion) {
  const config::Settings s = settings("badabi");
  const std::string msg = load_error(s);
  EXPECT_THAT(msg,
              AllOf(HasSubstr((kPluginDir / "libcudamux-badabi.so").string()),
                    HasSubstr("plugin ABI version " + std::to_string(backend::kAbiVersion + 41) +
                              ", this cudamux expects " + std::to_string(backend::kAbiVersion))));
  expect_lists_search_path(msg, s);
}

TEST_F(PluginLoaderTest, CreateFailureCarriesThePluginsMessage) {
  const config::Settings s = settings("failcreate");
  const std::string msg = load_error(s);
  EXPECT_THAT(msg, AllOf(HasSubstr((kPluginDir / "libcudamux-failcreate.so").string()),
                         HasSubstr("the plugin failed to start: failcreate: the frobnicator is "
                                   "missing (config from test-settings)")));
  expect_lists_search_path(msg, s);
}

TEST_F(PluginLoaderTest, CreateThrowingIsAPluginError) {
  const config::Settings s = settings("throwcreate");
  EXPECT_THAT(load_error(s), HasSubstr("cudamux_backend_create threw: throwcreate: boom"));
}

TEST_F(PluginLoaderTest, AutoWithoutAmdGpuPicksMock) {
  if (plugins::detail::probe_amd_gpu().present) GTEST_SKIP() << "this machine has an AMD GPU";
  fs::create_directories(dir() / "auto");
  fs::copy_file(kPluginDir / "libcudamux-testok.so", dir() / "auto/libcudamux-mock.so");
  config::Settings s = settings("auto");
  s.plugin_paths = {(dir() / "auto").string()};
  s.plugin_path_origins = {"test"};
  const plugins::LoadedBackend loaded = plugins::load_backend(s, logger_);
  EXPECT_EQ(loaded.name, "mock");
  EXPECT_EQ(loaded.file, (dir() / "auto/libcudamux-mock.so").string());
  EXPECT_THAT(loaded.reason, HasSubstr("auto: no AMD GPU found (/dev/kfd does not exist)"));
  // The copied plugin calls itself testok: worth a warning.
  EXPECT_THAT(captured_.str(), HasSubstr("calls itself 'testok', expected 'mock'"));
}

TEST_F(PluginLoaderTest, AutoWithoutAnyPluginStillSaysWhy) {
  if (plugins::detail::probe_amd_gpu().present) GTEST_SKIP() << "this machine has an AMD GPU";
  config::Settings s = settings("auto");
  s.plugin_paths = {(dir() / "empty").string()};
  s.plugin_path_origins = {"test"};
  s.use_default_plugin_dir = false;  // the build's own plugin folder holds a real mock
  EXPECT_THAT(load_error(s),
              AllOf(HasSubstr("cannot load cudamux backend 'mock' (auto: no AMD GPU"),
                    HasSubstr("no libcudamux-mock.so found")));
}

TEST_F(PluginLoaderTest, NvidiaProbe) {
  const fs::path root = dir() / "nvroot";
  const auto none = plugins::detail::probe_nvidia_gpu(root.string());
  EXPECT_FALSE(none.present);
  EXPECT_THAT(none.detail, AllOf(HasSubstr("proc/driver/nvidia/version"), HasSubstr("dev/nvidia0")));
  write("nvroot/dev/nvidia0", "");
  const auto dev = plugins::detail::probe_nvidia_gpu(root.string());
  EXPECT_TRUE(dev.present);
  EXPECT_THAT(dev.detail, HasSubstr("dev/nvidia0 exists"));
  write("nvroot/proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04\nGCC\n");
  const auto proc = plugins::detail::probe_nvidia_gpu(root.string());
  EXPECT_TRUE(proc.present);
  EXPECT_THAT(proc.detail, HasSubstr("version: NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04"));
}

TEST_F(PluginLoaderTest, AutoChoiceAcrossGpusAndPlugins) {
  using plugins::detail::choose_auto;
  const plugins::detail::AmdGpuProbe amd{true, "1 GPU node(s)"};
  const plugins::detail::AmdGpuProbe no_amd{false, "/dev/kfd does not exist"};
  const plugins::detail::NvidiaGpuProbe nv{true, "/dev/nvidia0 exists"};
  const plugins::detail::NvidiaGpuProbe no_nv{false, "neither ... exists"};
  // AMD wins when both are present and the hip plugin is there.
  EXPECT_EQ(choose_auto(amd, true, nv, true).name, "hip");
  auto c = choose_auto(amd, false, nv, true);  // AMD GPU without its plugin: mock, with a warning
  EXPECT_EQ(c.name, "mock");
  EXPECT_TRUE(c.warn);
  c = choose_auto(no_amd, true, nv, true);
  EXPECT_EQ(c.name, "cuda");
  EXPECT_FALSE(c.warn);
  EXPECT_EQ(c.reason, "auto: no AMD GPU found (/dev/kfd does not exist), NVIDIA GPU found (/dev/nvidia0 "
                      "exists), using cuda");
  c = choose_auto(no_amd, false, nv, false);
  EXPECT_EQ(c.name, "mock");
  EXPECT_TRUE(c.warn);
  EXPECT_THAT(c.reason, HasSubstr("but no libcudamux-cuda.so in the plugin search path, using mock"));
  c = choose_auto(no_amd, false, no_nv, true);
  EXPECT_EQ(c.name, "mock");
  EXPECT_FALSE(c.warn);
  EXPECT_THAT(c.reason, HasSubstr("no NVIDIA GPU found (neither ... exists), using mock"));
}

TEST_F(PluginLoaderTest, AutoPicksCudaWhenAnNvidiaGpuAndTheCudaPluginArePresent) {
  if (plugins::detail::probe_amd_gpu().present) GTEST_SKIP() << "this machine has an AMD GPU";
  if (!plugins::detail::probe_nvidia_gpu().present) GTEST_SKIP() << "this machine has no NVIDIA GPU";
  fs::create_directories(dir() / "auto");
  fs::copy_file(kPluginDir / "libcudamux-testok.so", dir() / "auto/libcudamux-cuda.so");
  config::Settings s = settings("auto");
  s.plugin_paths = {(dir() / "auto").string()};
  s.plugin_path_origins = {"test"};
  const plugins::LoadedBackend loaded = plugins::load_backend(s, logger_);
  EXPECT_EQ(loaded.name, "cuda");
  EXPECT_THAT(loaded.reason, HasSubstr("NVIDIA GPU found"));
}

TEST_F(PluginLoaderTest, AmdProbe) {
  const fs::path root = dir() / "root";
  EXPECT_FALSE(plugins::detail::probe_amd_gpu(root.string()).present);
  EXPECT_THAT(plugins::detail::probe_amd_gpu(root.string()).detail,
              HasSubstr("dev/kfd does not exist"));

  write("root/dev/kfd", "");
  const std::string nodes = "root/sys/class/kfd/kfd/topology/nodes/";
  write(nodes + "0/properties", "cpu_cores_count 16\nsimd_count 0\nmem_banks_count 1\n");
  const auto cpu_only = plugins::detail::probe_amd_gpu(root.string());
  EXPECT_FALSE(cpu_only.present);
  EXPECT_THAT(cpu_only.detail, HasSubstr("simd_count > 0"));

  write(nodes + "1/properties", "cpu_cores_count 0\nsimd_count 304\n");
  const auto gpu = plugins::detail::probe_amd_gpu(root.string());
  EXPECT_TRUE(gpu.present);
  EXPECT_THAT(gpu.detail, HasSubstr("1 GPU node(s)"));
}

}  // namespace
}  // namespace cudamux::test
