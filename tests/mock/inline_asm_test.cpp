// The scanner of inline PTX statements (plugins/mock/src/inline_asm.cpp), on its own.
#include "inline_asm.hpp"

#include <gtest/gtest.h>

namespace cudamux::mock {
namespace {

TEST(InlineAsm, ReadsTemplatesOperandsAndConstraints) {
  const std::string src =
      "__device__ unsigned lane() {\n"
      "  unsigned r; // asm(\"not this\")\n"
      "  asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(r));\n"
      "  const char* s = \"asm(\\\"nor this\\\")\";\n"
      "  asm(\"add.s32 %0, %1, %2;\"\n      \"\\n\" : \"=r\"(r) : \"r\"(a[i + (1)]), \"n\"(4) : "
      "\"memory\");\n"
      "  return r;\n}\n";
  std::string error;
  const auto st = find_asm_statements(src, error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].text, "mov.u32 %0, %%laneid;");
  EXPECT_EQ(st[0].line, 3u);
  ASSERT_EQ(st[0].operands.size(), 1u);
  EXPECT_TRUE(st[0].operands[0].output);
  EXPECT_FALSE(st[0].operands[0].read);
  EXPECT_EQ(st[0].operands[0].letter, 'r');
  EXPECT_EQ(st[0].operands[0].expression, "r");
  EXPECT_EQ(src.substr(st[0].begin, 3), "asm");
  EXPECT_EQ(src[st[0].end - 1], ')');
  EXPECT_EQ(st[1].text, "add.s32 %0, %1, %2;\n");
  ASSERT_EQ(st[1].operands.size(), 3u);
  EXPECT_EQ(st[1].operands[1].expression, "a[i + (1)]");
  EXPECT_EQ(st[1].operands[2].letter, 'n');
  EXPECT_FALSE(st[1].operands[2].output);
}

// CCCL's forms: `::` between operand lists, raw-string templates.
TEST(InlineAsm, ReadsDoubleColonsAndRawStringTemplates) {
  const std::string src =
      "asm volatile(\"membar.gl;\" ::: \"memory\");\n"
      "asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t)::);\n"
      "asm volatile(R\"YYY(\n  ld.acquire.gpu.b32 %0,[%1];\n)YYY\" : \"=r\"(d) : \"l\"(p) : "
      "\"memory\");\n"
      "const char* q = R\"(asm(\"not this\"))\";\n";
  std::string error;
  const auto st = find_asm_statements(src, error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_EQ(st.size(), 3u);
  EXPECT_EQ(st[0].text, "membar.gl;");
  EXPECT_TRUE(st[0].operands.empty());
  ASSERT_EQ(st[1].operands.size(), 1u);
  EXPECT_TRUE(st[1].operands[0].output);
  EXPECT_EQ(st[2].text, "\n  ld.acquire.gpu.b32 %0,[%1];\n");
  ASSERT_EQ(st[2].operands.size(), 2u);
  EXPECT_EQ(st[2].operands[1].expression, "p");
  EXPECT_EQ(st[2].line, 3u);
}

// A preprocessed text: only statements at accepted offsets are translated, one module and one
// numbering; statements the scanner or the front end cannot read are listed and left, and the
// scan goes on after them; empty templates (compiler barriers) stay as written.
TEST(InlineAsm, RewritesTheStatementsItMayAsOneModule) {
  std::string text =
      "void f(unsigned& r) { asm(\"mov.u32 %0, %%laneid;\" : \"=r\"(r)); }\n"
      "void h(int& r) { asm(\"mov.u32 %0, 1;\" : \"=x\"(r)); asm(\"pause\" :: :); }\n"
      "void g(unsigned& r) { asm(\"mov.u32 %0, 7;\" : \"=r\"(r)); asm volatile(\"\" ::: "
      "\"memory\"); }\n"
      "// host\nvoid x(unsigned& r) { asm(\"mov.u32 %0, 9;\" : \"=r\"(r)); }\n";
  const std::string original = text;
  const std::size_t host = text.find("// host");
  std::string preamble, error;
  std::vector<UnreadAsm> skipped;
  EXPECT_EQ(rewrite_inline_asm_where(
                text, [&](std::size_t offset) { return offset < host; }, preamble, error, &skipped),
            2u)
      << error;
  EXPECT_NE(text.find("::cudamux_asm_call_0((r))"), std::string::npos) << text;
  EXPECT_NE(text.find("::cudamux_asm_call_1((r))"), std::string::npos) << text;
  EXPECT_NE(text.find("asm(\"pause\" :: :)"), std::string::npos) << text;
  EXPECT_NE(text.find("asm volatile(\"\" ::: \"memory\")"), std::string::npos) << text;
  EXPECT_NE(text.find("asm(\"mov.u32 %0, 9;\""), std::string::npos) << text;
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_NE(skipped[0].why.find("not one of PTX's"), std::string::npos) << skipped[0].why;
  // Offsets are those of the text as it was.
  EXPECT_EQ(original.substr(skipped[1].offset, 10), "asm(\"pause") << skipped[1].offset;
  EXPECT_NE(preamble.find("cudamux_asm_call_1"), std::string::npos);
  EXPECT_EQ(preamble.find("cudamux_asm_call_2"), std::string::npos);
}

TEST(InlineAsm, BuildsOneFunctionPerStatement) {
  const std::string src =
      "asm(\"{ .reg .pred p; setp.ne.u32 p, %[x], 0; selp.u32 %[y], 1, 2, p; }\""
      " : [y] \"+r\"(y) : [x] \"r\"(x));";
  std::string error;
  const auto st = find_asm_statements(src, error);
  ASSERT_EQ(st.size(), 1u) << error;
  std::string ptx;
  ASSERT_TRUE(asm_functions_ptx(st, ptx, error)) << error;
  EXPECT_NE(ptx.find(".func cudamux_asm_0(.param .b64 cudamux_asm_args)"), std::string::npos);
  EXPECT_NE(ptx.find("setp.ne.u32 p, %cudamux_op1, 0; selp.u32 %cudamux_op0, 1, 2, p;"),
            std::string::npos)
      << ptx;
  // "+r": read before and written after; the input only read.
  EXPECT_NE(ptx.find("ld.b32 %cudamux_op0, [%cudamux_args+0];"), std::string::npos);
  EXPECT_NE(ptx.find("ld.b32 %cudamux_op1, [%cudamux_args+8];"), std::string::npos);
  EXPECT_NE(ptx.find("st.b32 [%cudamux_args+0], %cudamux_op0;"), std::string::npos);
  EXPECT_EQ(ptx.find("st.b32 [%cudamux_args+8]"), std::string::npos);
  const std::string call = asm_call(st[0], 0, src.substr(st[0].begin, st[0].end - st[0].begin));
  EXPECT_EQ(call, "::cudamux_asm_call_0((y), (x))");
  EXPECT_NE(asm_wrappers(st, {"cudamux_asm_0"})
                .find("cudamux_asm_0(reinterpret_cast<const char*>(&args));"),
            std::string::npos);
}

TEST(InlineAsm, KeepsLineCountsOfMultiLineStatements) {
  const std::string src = "asm(\"trap;\"\n\n);";
  std::string error;
  const auto st = find_asm_statements(src, error);
  ASSERT_EQ(st.size(), 1u);
  const std::string call = asm_call(st[0], 3, src.substr(st[0].begin, st[0].end - st[0].begin));
  EXPECT_EQ(call, "::cudamux_asm_call_3()\n\n");
}

TEST(InlineAsm, ReportsWhatItCannotRead) {
  std::string error;
  EXPECT_TRUE(find_asm_statements("asm(\"mov.u32 %0, 1;\" : \"=x\"(r));", error).empty());
  EXPECT_NE(error.find("not one of PTX's"), std::string::npos) << error;
  error.clear();
  EXPECT_TRUE(find_asm_statements("asm(\"unterminated);", error).empty());
  EXPECT_NE(error.find("line 1"), std::string::npos) << error;
  error.clear();
  auto st = find_asm_statements("asm(\"mov.u32 %0, %3;\" : \"=r\"(r));", error);
  ASSERT_EQ(st.size(), 1u) << error;
  std::string ptx;
  EXPECT_FALSE(asm_functions_ptx(st, ptx, error));
  EXPECT_NE(error.find("operand %3"), std::string::npos) << error;
  // `asm` as a plain name is no statement.
  error.clear();
  EXPECT_TRUE(find_asm_statements("int asm_count = 0; int my_asm(int);", error).empty());
  EXPECT_TRUE(error.empty());
}

}  // namespace
}  // namespace cudamux::mock
