// The [mock] configuration table: errors name file, line, column and key; unknown keys warn.
#include "mock_fixture.hpp"

namespace cudamux::mock::test {
namespace {

using ::testing::HasSubstr;

std::string creation_error(const std::string& text) {
  auto c = create_backend(text, "conf/mock.toml");
  EXPECT_EQ(c.backend, nullptr) << "expected creation to fail for:\n" << text;
  return c.error;
}

TEST(MockConfig, NoTableMeansDefaults) {
  auto c = create_backend("[other]\nx = 1\n");
  ASSERT_NE(c.backend, nullptr) << c.error;
  EXPECT_EQ(c.backend->devices().count(), 1);
  EXPECT_EQ(c.log->str().find("warn"), std::string::npos) << c.log->str();
}

TEST(MockConfig, WrongTypeNamesFileLineColumnAndKey) {
  const auto e = creation_error("# comment\n[mock]\ndevices = \"two\"\n");
  EXPECT_THAT(e, HasSubstr("conf/mock.toml:3:11"));
  EXPECT_THAT(e, HasSubstr("devices"));
  EXPECT_THAT(e, HasSubstr("integer"));
}

TEST(MockConfig, BadValues) {
  EXPECT_THAT(creation_error("[mock]\ndevices = 0\n"),
              HasSubstr("conf/mock.toml:2:11: [mock] key 'devices'"));
  EXPECT_THAT(creation_error("[mock]\ndevices = 1000\n"), HasSubstr("out of range"));
  EXPECT_THAT(creation_error("[mock]\nmemory = -5\n"),
              HasSubstr("conf/mock.toml:2:10: [mock] key 'memory'"));
  EXPECT_THAT(creation_error("[mock]\nmemory = 1.5e9\n"),
              HasSubstr("'memory': expected an integer, got a float"));
  EXPECT_THAT(creation_error("[mock]\n\nprofile = \"v100\"\n"),
              HasSubstr("conf/mock.toml:3:11: [mock] key 'profile': unknown profile \"v100\""));
  EXPECT_THAT(creation_error("[mock]\nprofile = 3\n"), HasSubstr("'profile': expected a string"));
  EXPECT_THAT(creation_error("[mock]\nattributes = 5\n"),
              HasSubstr("'attributes': expected a table"));
}

TEST(MockConfig, BadAttributes) {
  EXPECT_THAT(
      creation_error("[mock.attributes]\nCU_DEVICE_ATTRIBUTE_WARP_SIZE = \"x\"\n"),
      HasSubstr("conf/mock.toml:2:33: [mock] key 'attributes.CU_DEVICE_ATTRIBUTE_WARP_SIZE'"));
  EXPECT_THAT(creation_error("[mock.attributes]\nCU_DEVICE_ATTRIBUTE_WARP_SIZE = 3000000000\n"),
              HasSubstr("out of range"));
  EXPECT_THAT(creation_error("[mock.attributes]\ncompute_capability = \"9\"\n"),
              HasSubstr("conf/mock.toml:2:22: [mock] key 'attributes.compute_capability'"));
  EXPECT_THAT(creation_error("[mock.attributes]\ncompute_capability = 9.0\n"),
              HasSubstr("expected a string"));
  EXPECT_THAT(creation_error("[mock.attributes]\nname = \"\"\n"), HasSubstr("'attributes.name'"));
}

TEST(MockConfig, UnknownKeysWarnWithLocation) {
  auto c = create_backend(
      "[mock]\ndevices = 2\nmemroy = 5\n[mock.attributes]\nCU_DEVICE_ATTRIBUTE_BOGUS = 1\n",
      "conf/mock.toml");
  ASSERT_NE(c.backend, nullptr) << c.error;
  EXPECT_EQ(c.backend->devices().count(), 2);
  const auto log = c.log->str();
  EXPECT_THAT(log, HasSubstr("warn"));
  EXPECT_THAT(log, HasSubstr("conf/mock.toml:3:1: [mock] unknown key 'memroy'"));
  EXPECT_THAT(log, HasSubstr("unknown key 'attributes.CU_DEVICE_ATTRIBUTE_BOGUS'"));
}

TEST(MockConfig, ExplicitCcAttributeWinsOverComputeCapability) {
  auto c = create_backend(
      "[mock.attributes]\nCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 7\ncompute_capability = "
      "\"8.6\"\n");
  ASSERT_NE(c.backend, nullptr) << c.error;
  be::DeviceProperties p;
  ASSERT_EQ(cu(c.backend->devices().properties(0, p)), CUDA_SUCCESS);
  EXPECT_EQ(p.cc_major, 8);
  EXPECT_EQ(p.cc_minor, 7);
}

}  // namespace
}  // namespace cudamux::mock::test
