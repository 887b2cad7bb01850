// The mock compiler's rewrite of kernel launches in device code (fission.hpp,
// rewrite_device_launches) on its own: text in, text out.
#include <gtest/gtest.h>

#include <string>

#include "fission.hpp"

namespace cudamux::mock {
namespace {

// The tests' texts hold no comments or literals: the code view is the text itself.
std::string rewritten(std::string text, std::size_t* count = nullptr) {
  const std::string code = text;
  const std::size_t n = rewrite_device_launches(text, code);
  if (count != nullptr) *count = n;
  return text;
}

TEST(DeviceLaunchRewrite, PlainQualifiedAndTemplateKernels) {
  std::size_t n = 0;
  EXPECT_EQ(rewritten("{ child<<<1, 32>>>(x, y); }", &n),
            "{ ::cudamux::detail::device_launch<(&child)>(1, 32, 0, nullptr, x, y); }");
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(rewritten("if (a) ns::k<int, 4><<<g, b, s, st>>>(p);"),
            "if (a) ::cudamux::detail::device_launch<(&ns::k<int, 4>)>(g, b, s, st, p);");
  EXPECT_EQ(rewritten("k<<<dim3(2, 2), dim3(f(1, 2))>>>();"),
            "::cudamux::detail::device_launch<(&k)>(dim3(2, 2), dim3(f(1, 2)), 0, nullptr);");
  // Nested template arguments closed by `>>`.
  EXPECT_EQ(rewritten("k<A<B>><<<1, 1>>>(v);"),
            "::cudamux::detail::device_launch<(&k<A<B>>)>(1, 1, 0, nullptr, v);");
}

TEST(DeviceLaunchRewrite, LineBreaksMoveAfterTheCallAndLaterTextStays) {
  EXPECT_EQ(rewritten("a<<<1,\n 2>>>(x,\n y); z = x << 2;"),
            "::cudamux::detail::device_launch<(&a)>(1, 2, 0, nullptr, x,  y)\n\n; z = x << 2;");
}

TEST(DeviceLaunchRewrite, WhatItCannotReadStaysAsWritten) {
  std::size_t n = 0;
  const std::string unchanged[] = {
      "x << y < z;",               // shifts and comparisons
      "k<<<1>>>(x);",              // one configuration argument
      "k<<<1, 2, 3, 4, 5>>>(x);",  // five
      "k<<<1, 2>>> x;",            // no argument list
      "(k)<<<1, 2>>>(x);",         // not a name
  };
  for (const auto& text : unchanged) {
    EXPECT_EQ(rewritten(text, &n), text);
    EXPECT_EQ(n, 0u) << text;
  }
  EXPECT_EQ(rewritten("", &n), "");
}

}  // namespace
}  // namespace cudamux::mock
