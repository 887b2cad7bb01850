// Fat binary parser fuzzer (issue 14). The input is a fat binary, as a program or a file
// could hand one over: parse() must accept it or say why, never read outside it, crash,
// leak or allocate without bound; every entry it accepts must lie inside the input, and
// decompress(), describe() and the selection functions must cope with whatever parse()
// accepted. Seeds: tests/fuzz/corpus-fatbin (nvcc 13.0 output from tests/fatbin/data).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "cudamux/fatbin.hpp"

namespace fb = cudamux::fatbin;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

bool inside(std::span<const std::byte> part, std::span<const std::byte> whole) {
  return part.data() >= whole.data() && part.size() <= whole.size() &&
         part.data() - whole.data() <= static_cast<std::ptrdiff_t>(whole.size() - part.size());
}

void check_selection(const std::vector<fb::Entry>& entries, unsigned device) {
  if (const auto i = fb::select_elf(entries, device)) {
    check(*i < entries.size());
    const fb::Entry& e = entries[*i];
    check(e.kind == fb::Kind::elf && e.arch <= device && e.arch / 10 == device / 10);
  }
  if (const auto i = fb::select_ptx(entries, device)) {
    check(*i < entries.size());
    check(entries[*i].kind == fb::Kind::ptx && entries[*i].arch <= device);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  std::vector<fb::Entry> entries;
  std::string error;
  if (!fb::parse(bytes, entries, error)) {
    check(!error.empty() && entries.empty());
  } else {
    for (const fb::Entry& e : entries) {
      check(inside(e.header, bytes) && inside(e.payload, bytes));
      check(e.header.size() >= 64 && e.header.data() + e.header.size() <= e.payload.data());
      check(e.uncompressed_size <= fb::kMaxUncompressedSize ||
            e.compression == fb::Compression::none);
      std::vector<std::byte> out;
      if (fb::decompress(e, out, error)) {
        if (e.kind == fb::Kind::ptx) {
          check(!out.empty() && out.back() == std::byte{0});
        } else {
          check(out.size() == e.uncompressed_size);
        }
      } else {
        check(!error.empty() && out.empty());
      }
    }
    (void)fb::describe(entries);
    for (const unsigned device : {50u, 75u, 86u, 90u, 100u, 103u, 120u})
      check_selection(entries, device);
  }
  // extent() and unwrap() read fixed-size headers from a pointer: give them a copy that is
  // long enough (what the caller of these pointer-only functions guarantees).
  std::vector<std::byte> padded(bytes.begin(), bytes.end());
  padded.resize(std::max<std::size_t>(padded.size(), 32));
  if (const auto n = fb::extent(padded.data())) {
    check(*n >= 16 && *n <= fb::kMaxContainerSize);
    if (*n <= size) {
      std::vector<fb::Entry> first;
      if (fb::parse(bytes.first(*n), first, error))
        check(entries.empty() || first.size() <= entries.size());
    }
  }
  struct {
    std::uint32_t magic, version;
    const void* data;
    void* filename_or_fatbins;
  } wrapper{fb::kWrapperMagic, 1, padded.data(), nullptr};
  const void* container = nullptr;
  if (fb::unwrap(&wrapper, container, error)) check(container == padded.data());
  return 0;
}
