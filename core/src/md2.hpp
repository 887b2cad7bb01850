// MD2 (RFC 1319) and HMAC over it (RFC 2104 with MD2's 16-byte block). NVIDIA's static
// runtime checks the driver with an HMAC-MD2 of process and device facts (the integrity check
// export table, issue 14; docs/export-tables.md); nothing else here uses MD2.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace cudamux::core {

class Md2 {
 public:
  using Digest = std::array<std::uint8_t, 16>;
  void update(std::span<const std::uint8_t> bytes) noexcept;
  // Pads, appends the checksum and returns the digest; the object is spent afterwards.
  Digest finish() noexcept;

 private:
  void add(std::uint8_t byte) noexcept;
  void transform() noexcept;
  std::array<std::uint8_t, 48> state_{};  // X: hash, block, hash ^ block
  std::array<std::uint8_t, 16> checksum_{};
  std::uint8_t count_ = 0;  // bytes of the current block
  std::uint8_t last_ = 0;   // L, the last checksum byte written
};

// HMAC-MD2 with a 16-byte key (one MD2 block, so the key is used as is).
Md2::Digest hmac_md2(const std::array<std::uint8_t, 16>& key,
                     std::span<const std::uint8_t> message) noexcept;

}  // namespace cudamux::core
