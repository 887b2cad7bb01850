// MD2 (RFC 1319's test suite) and HMAC-MD2 with the integrity check's key and message layout,
// against the known answers in docs/export-tables.md.
#include "md2.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace cudamux::core {
namespace {

std::string hex(const Md2::Digest& d) {
  std::string s;
  char b[3];
  for (auto x : d) {
    std::snprintf(b, sizeof b, "%02x", x);
    s += b;
  }
  return s;
}

std::string md2(const std::string& text) {
  Md2 m;
  m.update({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
  return hex(m.finish());
}

TEST(Md2, Rfc1319TestSuite) {
  EXPECT_EQ(md2(""), "8350e5a3e24c153df2275c9f80692773");
  EXPECT_EQ(md2("a"), "32ec01ec4a6dac72c0ab96fb34c0b5d1");
  EXPECT_EQ(md2("abc"), "da853b0d3f88d99b30283a69e6ded6bb");
  EXPECT_EQ(md2("message digest"), "ab4f496bfb2a530b219ff33031fe06b0");
  EXPECT_EQ(md2("abcdefghijklmnopqrstuvwxyz"), "4e8ddff3650292ab5a4108c3aa47940b");
  EXPECT_EQ(md2("12345678901234567890123456789012345678901234567890123456789012345678901234567890"),
            "d5976f79d83d3a0dc9806c3c66f3efd8");
}

// The integrity check's message: 48 bytes of process facts, then 28 per device.
std::vector<std::uint8_t> message(std::uint32_t driver, std::uint32_t version, std::uint32_t pid,
                                  std::uint32_t thread, std::uint64_t cudart, std::uint64_t table,
                                  std::uint64_t function, std::uint64_t seconds,
                                  const std::vector<std::vector<std::uint8_t>>& devices) {
  std::vector<std::uint8_t> m(48);
  std::memcpy(&m[0], &driver, 4);
  std::memcpy(&m[4], &version, 4);
  std::memcpy(&m[8], &pid, 4);
  std::memcpy(&m[12], &thread, 4);
  std::memcpy(&m[16], &cudart, 8);
  std::memcpy(&m[24], &table, 8);
  std::memcpy(&m[32], &function, 8);
  std::memcpy(&m[40], &seconds, 8);
  for (const auto& d : devices) m.insert(m.end(), d.begin(), d.end());
  return m;
}

std::vector<std::uint8_t> device(std::vector<std::uint8_t> uuid, std::int32_t domain,
                                 std::int32_t bus, std::int32_t dev) {
  for (std::int32_t v : {domain, bus, dev}) {
    const auto* b = reinterpret_cast<const std::uint8_t*>(&v);
    uuid.insert(uuid.end(), b, b + 4);
  }
  return uuid;
}

constexpr std::array<std::uint8_t, 16> kKey = {0x14, 0x6A, 0xDD, 0xAE, 0x53, 0xA9, 0xA7, 0x52,
                                               0xAA, 0x08, 0x41, 0x36, 0x0B, 0xF5, 0x5A, 0x9F};

TEST(HmacMd2, IntegrityCheckKnownAnswers) {
  // Recorded from NVIDIA's runtime by ZLUDA (CUDA 11.8, Windows).
  const auto recorded = message(12020, 11082, 0x4D08, 0x2B78, 0x7FF8C80717F0, 0x7FF8C825E4B0,
                                0x7FF8C7DD0AD0, 0x64A365EE,
                                {device({0x67, 0x22, 0xcb, 0xcf, 0xc6, 0x61, 0xf2, 0x92, 0x74, 0xd6,
                                         0xed, 0x23, 0x2a, 0x32, 0x13, 0x1c},
                                        0, 4, 0)});
  EXPECT_EQ(hex(hmac_md2(kKey, recorded)), "7a7014f22846c3a784cdbf423331f1ea");
  std::vector<std::uint8_t> uuid(16);
  for (int i = 0; i < 16; ++i) uuid[i] = static_cast<std::uint8_t>(i);
  const auto one = message(13000, 13002, 0x1234, 0x89ABCDEF, 0x7F0000001000, 0x7F0000002000,
                           0x7F0000003000, 0x68000000, {device(uuid, 0, 1, 0)});
  EXPECT_EQ(hex(hmac_md2(kKey, one)), "af7888c0d4c1b2f34d7abaa4369d3b05");
  const auto none = message(13000, 13002, 0x1234, 0x89ABCDEF, 0x7F0000001000, 0x7F0000002000,
                            0x7F0000003000, 0x68000000, {});
  EXPECT_EQ(hex(hmac_md2(kKey, none)), "b9cab8ed406c93a9483b187e5aea811c");
}

}  // namespace
}  // namespace cudamux::core
