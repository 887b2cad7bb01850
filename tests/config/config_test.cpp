#include "cudamux/config.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.hpp"

namespace cudamux::test {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

class ConfigTest : public TempEnvTest {
 protected:
  // The ConfigError text load_file(path) throws; fails the test if it doesn't throw.
  static std::string error_of(const std::string& path) {
    try {
      (void)config::load_file(path);
    } catch (const config::ConfigError& e) {
      return e.what();
    }
    ADD_FAILURE() << "no ConfigError for " << path;
    return {};
  }
  static std::string load_error() {
    try {
      (void)config::load();
    } catch (const config::ConfigError& e) {
      return e.what();
    }
    ADD_FAILURE() << "no ConfigError from load()";
    return {};
  }
};

bool etc_config_exists() { return fs::exists("/etc/cudamux/config.toml"); }

TEST_F(ConfigTest, BuiltInDefaultsWhenNoFileExists) {
  if (etc_config_exists()) GTEST_SKIP() << "/etc/cudamux/config.toml exists on this machine";
  const config::Settings s = config::load();
  EXPECT_EQ(s.source, "<built-in defaults>");
  EXPECT_EQ(s.backend, "auto");
  EXPECT_THAT(s.plugin_paths, IsEmpty());
  EXPECT_EQ(s.log_level, "warn");
  EXPECT_EQ(s.log_sink, "stderr");
  EXPECT_EQ(s.driver_version, 13000);
  EXPECT_THAT(s.warnings, IsEmpty());
  EXPECT_TRUE(s.document.empty());
  EXPECT_EQ(s.origins.at("backend"), "built-in default");
  EXPECT_EQ(s.origins.at("log.level"), "built-in default");
  EXPECT_THAT(s.candidates, ElementsAre((dir() / "emptyhome/.config/cudamux/config.toml").string(),
                                        "/etc/cudamux/config.toml"));
}

TEST_F(ConfigTest, EveryKeyIsRead) {
  const std::string path = write("conf/cudamux.toml",
                                 "backend = \"mock\"\n"
                                 "plugin_path = [\"/opt/p1\", \"rel/p2\"]\n"
                                 "driver_version = 12080\n"
                                 "[log]\n"
                                 "level = \"DEBUG\"\n"
                                 "sink = \"file:logs/cudamux.log\"\n"
                                 "[mock]\n"
                                 "devices = 2\n"
                                 "whatever_the_plugin_wants = \"untouched\"\n"
                                 "[hallucinate]\n"
                                 "anything = 1\n");
  const config::Settings s = config::load_file(path);
  EXPECT_EQ(s.source, path);
  EXPECT_EQ(s.backend, "mock");
  // Relative paths in a file are relative to that file's folder.
  EXPECT_THAT(s.plugin_paths, ElementsAre("/opt/p1", (dir() / "conf/rel/p2").string()));
  EXPECT_THAT(s.plugin_path_origins, ElementsAre(path + ":2:16", path + ":2:27"));
  EXPECT_EQ(s.driver_version, 12080);
  EXPECT_EQ(s.log_level, "debug");
  EXPECT_EQ(s.log_sink, "file:" + (dir() / "conf/logs/cudamux.log").string());
  EXPECT_EQ(s.origins.at("backend"), path + ":1:11");
  EXPECT_EQ(s.origins.at("driver_version"), path + ":3:18");
  EXPECT_EQ(s.origins.at("log.level"), path + ":5:9");
  EXPECT_EQ(s.origins.at("log.sink"), path + ":6:8");
  // Backend tables are passed through untouched, unknown keys included, without warnings.
  EXPECT_EQ(s.document["mock"]["devices"].value_or(0), 2);
  EXPECT_EQ(s.document["mock"]["whatever_the_plugin_wants"].value_or(std::string()), "untouched");
  EXPECT_THAT(s.warnings, IsEmpty());
}

TEST_F(ConfigTest, PluginPathMayBeASingleString) {
  const std::string path = write("c.toml", "plugin_path = \"/single\"\n");
  EXPECT_THAT(config::load_file(path).plugin_paths, ElementsAre("/single"));
}

TEST_F(ConfigTest, LogLevelAcceptsWarningSpelling) {
  const std::string path = write("c.toml", "log.level = \"Warning\"\n");
  EXPECT_EQ(config::load_file(path).log_level, "warn");
}

TEST_F(ConfigTest, MalformedTomlNamesFileLineAndColumn) {
  const std::string path = write("bad.toml", "# fine\nbackend = \"mock\nlog.level = \"info\"\n");
  const std::string msg = error_of(path);
  EXPECT_THAT(msg, AllOf(StartsWith(path + ":2:"), HasSubstr("malformed TOML")));
}

TEST_F(ConfigTest, DuplicateKeyIsMalformed) {
  const std::string path = write("dup.toml", "backend = \"mock\"\nbackend = \"hip\"\n");
  EXPECT_THAT(error_of(path), AllOf(StartsWith(path + ":2:"), HasSubstr("malformed TOML")));
}

struct BadCase {
  const char* name;
  const char* text;
  const char* position;  // "line:column" of the offending value
  const char* key;
  const char* detail;
};

class ConfigBadValueTest : public ConfigTest, public ::testing::WithParamInterface<BadCase> {};

TEST_P(ConfigBadValueTest, ErrorNamesFileLineColumnAndKey) {
  const BadCase& c = GetParam();
  const std::string path = write("bad.toml", c.text);
  const std::string msg = error_of(path);
  EXPECT_THAT(msg, StartsWith(path + ":" + c.position + ": error: key '" + c.key + "'"));
  EXPECT_THAT(msg, HasSubstr(c.detail));
}

INSTANTIATE_TEST_SUITE_P(
    WrongType, ConfigBadValueTest,
    ::testing::Values(
        BadCase{"backend", "backend = 42\n", "1:11", "backend",
                "expected a string, found an integer"},
        BadCase{"plugin_path", "plugin_path = 5\n", "1:15", "plugin_path",
                "expected a string or an array of strings, found an integer"},
        BadCase{"plugin_path_item", "plugin_path = [\"/ok\", 7]\n", "1:23", "plugin_path",
                "found an integer"},
        BadCase{"plugin_path_table", "[plugin_path]\nx = 1\n", "1:1", "plugin_path",
                "found a table"},
        BadCase{"driver_version", "driver_version = \"13000\"\n", "1:18", "driver_version",
                "expected an integer, found a string"},
        BadCase{"driver_version_float", "driver_version = 13.0\n", "1:18", "driver_version",
                "expected an integer, found a floating-point number"},
        BadCase{"log", "log = \"debug\"\n", "1:7", "log", "expected a table, found a string"},
        BadCase{"log_level", "[log]\nlevel = 3\n", "2:9", "log.level",
                "expected a string, found an integer"},
        BadCase{"log_sink", "[log]\nsink = true\n", "2:8", "log.sink",
                "expected a string, found a boolean"},
        BadCase{"hallucinate", "hallucinate = 1\n", "1:15", "hallucinate",
                "expected a table, found an integer"},
        BadCase{"mock", "mock = \"x\"\n", "1:8", "mock", "expected a table, found a string"},
        BadCase{"hip", "\nhip = []\n", "2:7", "hip", "expected a table, found an array"},
        BadCase{"cuda", "cuda = 1\n", "1:8", "cuda", "expected a table, found an integer"},
        BadCase{"custom_backend", "backend = \"myplugin\"\nmyplugin = 3\n", "2:12", "myplugin",
                "expected a table"}),
    [](const auto& p) { return std::string(p.param.name); });

INSTANTIATE_TEST_SUITE_P(
    BadValue, ConfigBadValueTest,
    ::testing::Values(
        BadCase{"log_level", "[log]\nlevel = \"verbose\"\n", "2:9", "log.level",
                "unknown log level 'verbose' (expected one of trace, debug, info, warn, error, "
                "critical, off)"},
        BadCase{"log_sink", "log.sink = \"syslog\"\n", "1:12", "log.sink",
                "invalid sink 'syslog': expected stderr, stdout or file:<path>"},
        BadCase{"log_sink_empty_file", "log.sink = \"file:\"\n", "1:12", "log.sink",
                "'file:' needs a path"},
        BadCase{"backend_path", "backend = \"../evil\"\n", "1:11", "backend",
                "invalid backend name"},
        BadCase{"backend_empty", "backend = \"\"\n", "1:11", "backend", "must not be empty"},
        BadCase{"plugin_path_empty", "plugin_path = [\"\"]\n", "1:16", "plugin_path",
                "empty folder name"},
        BadCase{"driver_version_zero", "driver_version = 0\n", "1:18", "driver_version",
                "out of range: 0"},
        BadCase{"driver_version_negative", "driver_version = -5\n", "1:18", "driver_version",
                "out of range: -5"},
        BadCase{"driver_version_huge", "driver_version = 99999999999\n", "1:18", "driver_version",
                "out of range: 99999999999"}),
    [](const auto& p) { return std::string(p.param.name); });

TEST_F(ConfigTest, UnknownKeysWarnWithFileLineColumnAndKey) {
  const std::string path = write("unknown.toml",
                                 "backend = \"mock\"\n"
                                 "\n"
                                 "  frobnicate = 1\n"
                                 "[log]\n"
                                 "level = \"info\"\n"
                                 "colour = true\n"
                                 "[mokc]\n"
                                 "devices = 1\n");
  const config::Settings s = config::load_file(path);  // warnings, not errors
  EXPECT_EQ(s.backend, "mock");
  EXPECT_EQ(s.log_level, "info");
  ASSERT_EQ(s.warnings.size(), 3u);
  EXPECT_THAT(s.warnings, ::testing::UnorderedElementsAre(
                              path + ":3:3: warning: unknown key 'frobnicate' (ignored)",
                              HasSubstr(path + ":6:1: warning: unknown key 'log.colour'"),
                              path + ":7:2: warning: unknown key 'mokc' (ignored)"));
}

TEST_F(ConfigTest, TableOfTheSelectedCustomBackendIsNotUnknown) {
  const std::string path = write("c.toml", "backend = \"myplugin\"\n[myplugin]\nx = 1\n");
  EXPECT_THAT(config::load_file(path).warnings, IsEmpty());
}

TEST_F(ConfigTest, TableOfABackendChosenByEnvironmentIsNotUnknown) {
  set_env("CUDAMUX_CONFIG", write("c.toml", "[myplugin]\nx = 1\n"));
  set_env("CUDAMUX_BACKEND", "myplugin");
  const config::Settings s = config::load();
  EXPECT_EQ(s.backend, "myplugin");
  EXPECT_THAT(s.warnings, IsEmpty());
}

TEST_F(ConfigTest, LoadFileOfMissingFileFails) {
  const std::string path = (dir() / "nope.toml").string();
  EXPECT_THAT(error_of(path), AllOf(HasSubstr(path), HasSubstr("does not exist")));
}

TEST_F(ConfigTest, CudamuxConfigPointingAtMissingFileIsAnError) {
  const std::string missing = (dir() / "missing.toml").string();
  set_env("CUDAMUX_CONFIG", missing);
  // Even with a valid XDG file around: an explicit choice must not be silently replaced.
  set_env("XDG_CONFIG_HOME", (dir() / "xdg").string());
  write("xdg/cudamux/config.toml", "backend = \"mock\"\n");
  EXPECT_THAT(load_error(),
              AllOf(HasSubstr("CUDAMUX_CONFIG"), HasSubstr(missing), HasSubstr("does not exist")));
}

TEST_F(ConfigTest, CudamuxConfigPointingAtFolderIsAnError) {
  set_env("CUDAMUX_CONFIG", dir().string());
  EXPECT_THAT(load_error(), AllOf(HasSubstr(dir().string()), HasSubstr("is a directory")));
}

TEST_F(ConfigTest, UnreadableFileIsAnErrorNotAFallThrough) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file";
  set_env("XDG_CONFIG_HOME", (dir() / "xdg").string());
  const std::string path = write("xdg/cudamux/config.toml", "backend = \"mock\"\n");
  ::chmod(path.c_str(), 0);
  EXPECT_THAT(load_error(), AllOf(HasSubstr(path), HasSubstr("Permission denied")));
}

TEST_F(ConfigTest, CudamuxConfigWinsOverXdg) {
  set_env("XDG_CONFIG_HOME", (dir() / "xdg").string());
  write("xdg/cudamux/config.toml", "backend = \"fromxdg\"\n");
  const std::string explicit_file = write("explicit.toml", "backend = \"fromexplicit\"\n");
  set_env("CUDAMUX_CONFIG", explicit_file);
  const config::Settings s = config::load();
  EXPECT_EQ(s.source, explicit_file);
  EXPECT_EQ(s.backend, "fromexplicit");
  EXPECT_THAT(s.candidates, ElementsAre(explicit_file));
}

TEST_F(ConfigTest, XdgConfigHomeWinsOverHomeAndEtc) {
  set_env("XDG_CONFIG_HOME", (dir() / "xdg").string());
  set_env("HOME", (dir() / "home").string());
  const std::string xdg_file = write("xdg/cudamux/config.toml", "backend = \"fromxdg\"\n");
  write("home/.config/cudamux/config.toml", "backend = \"fromhome\"\n");
  const config::Settings s = config::load();
  EXPECT_EQ(s.source, xdg_file);
  EXPECT_EQ(s.backend, "fromxdg");
  EXPECT_THAT(s.candidates, ElementsAre(xdg_file, "/etc/cudamux/config.toml"));
}

TEST_F(ConfigTest, HomeDotConfigWhenXdgUnset) {
  set_env("HOME", (dir() / "home").string());
  const std::string home_file =
      write("home/.config/cudamux/config.toml", "backend = \"fromhome\"\n");
  const config::Settings s = config::load();
  EXPECT_EQ(s.source, home_file);
  EXPECT_EQ(s.backend, "fromhome");
}

TEST_F(ConfigTest, RelativeXdgConfigHomeIsIgnored) {
  set_env("XDG_CONFIG_HOME", "relative/xdg");
  set_env("HOME", (dir() / "home").string());
  const std::string home_file =
      write("home/.config/cudamux/config.toml", "backend = \"fromhome\"\n");
  EXPECT_EQ(config::load().source, home_file);
}

TEST_F(ConfigTest, XdgSetWithoutFileSkipsHomeAndGoesOn) {
  if (etc_config_exists()) GTEST_SKIP() << "/etc/cudamux/config.toml exists on this machine";
  set_env("XDG_CONFIG_HOME", (dir() / "xdg").string());
  set_env("HOME", (dir() / "home").string());
  write("home/.config/cudamux/config.toml", "backend = \"fromhome\"\n");
  const config::Settings s = config::load();
  EXPECT_EQ(s.source, "<built-in defaults>");  // ~/.config is XDG's default, not a fallback
  EXPECT_EQ(s.backend, "auto");
}

TEST_F(ConfigTest, EnvironmentOverridesWinOverTheFile) {
  set_env("CUDAMUX_CONFIG", write("c.toml",
                                  "backend = \"hip\"\n"
                                  "plugin_path = \"/from/file\"\n"
                                  "[log]\n"
                                  "level = \"debug\"\n"
                                  "sink = \"stdout\"\n"));
  set_env("CUDAMUX_BACKEND", "mock");
  set_env("CUDAMUX_PLUGIN_PATH", "/env/a::/env/b:");
  set_env("CUDAMUX_LOG_LEVEL", "error");
  set_env("CUDAMUX_LOG_SINK", "file:/tmp/x.log");
  const config::Settings s = config::load();
  EXPECT_EQ(s.backend, "mock");
  EXPECT_THAT(s.plugin_paths, ElementsAre("/env/a", "/env/b", "/from/file"));
  EXPECT_THAT(s.plugin_path_origins,
              ElementsAre("CUDAMUX_PLUGIN_PATH", "CUDAMUX_PLUGIN_PATH", s.source + ":2:15"));
  EXPECT_EQ(s.log_level, "error");
  EXPECT_EQ(s.log_sink, "file:/tmp/x.log");
  EXPECT_EQ(s.origins.at("backend"), "CUDAMUX_BACKEND");
  EXPECT_EQ(s.origins.at("plugin_path"), "CUDAMUX_PLUGIN_PATH, then " + s.source + ":2:15");
  EXPECT_EQ(s.origins.at("log.level"), "CUDAMUX_LOG_LEVEL");
  EXPECT_EQ(s.origins.at("log.sink"), "CUDAMUX_LOG_SINK");
  EXPECT_EQ(s.origins.at("driver_version"), "built-in default");
}

TEST_F(ConfigTest, RelativeEnvironmentPathsAreRelativeToTheWorkingDirectory) {
  set_env("CUDAMUX_CONFIG", "/dev/null");  // an empty file: defaults, nothing else
  set_env("CUDAMUX_PLUGIN_PATH", "plugins");
  set_env("CUDAMUX_LOG_SINK", "file:out.log");
  const config::Settings s = config::load();
  EXPECT_THAT(s.plugin_paths, ElementsAre((fs::current_path() / "plugins").string()));
  EXPECT_EQ(s.log_sink, "file:" + (fs::current_path() / "out.log").string());
}

TEST_F(ConfigTest, EmptyEnvironmentVariablesAreIgnored) {
  set_env("CUDAMUX_CONFIG", "");
  set_env("CUDAMUX_BACKEND", "");
  set_env("CUDAMUX_LOG_LEVEL", "");
  if (etc_config_exists()) GTEST_SKIP() << "/etc/cudamux/config.toml exists on this machine";
  const config::Settings s = config::load();
  EXPECT_EQ(s.backend, "auto");
  EXPECT_EQ(s.log_level, "warn");
}

struct EnvCase {
  const char* var;
  const char* value;
  const char* detail;
};

class ConfigBadEnvTest : public ConfigTest, public ::testing::WithParamInterface<EnvCase> {};

TEST_P(ConfigBadEnvTest, ErrorNamesTheVariable) {
  set_env("CUDAMUX_CONFIG", "/dev/null");
  set_env(GetParam().var, GetParam().value);
  EXPECT_THAT(load_error(), AllOf(StartsWith(std::string("environment variable ") + GetParam().var +
                                             "='" + GetParam().value + "'"),
                                  HasSubstr(GetParam().detail)));
}

INSTANTIATE_TEST_SUITE_P(
    Env, ConfigBadEnvTest,
    ::testing::Values(EnvCase{"CUDAMUX_LOG_LEVEL", "loud", "unknown log level"},
                      EnvCase{"CUDAMUX_LOG_SINK", "syslog", "expected stderr, stdout or file:"},
                      EnvCase{"CUDAMUX_LOG_SINK", "file:", "'file:' needs a path"},
                      EnvCase{"CUDAMUX_BACKEND", "a/b", "invalid backend name"}),
    [](const auto& p) {
      std::string name = std::string(p.param.var) + "_" + std::to_string(p.index);
      return name;
    });

TEST_F(ConfigTest, ErrorsInTheFileAreReportedBeforeEnvironmentOverrides) {
  // A broken file stays an error even when the environment would override the bad key:
  // the file is wrong and someone should fix it.
  set_env("CUDAMUX_CONFIG", write("c.toml", "[log]\nlevel = \"loud\"\n"));
  set_env("CUDAMUX_LOG_LEVEL", "info");
  EXPECT_THAT(load_error(), HasSubstr(":2:9: error: key 'log.level'"));
}

}  // namespace
}  // namespace cudamux::test
