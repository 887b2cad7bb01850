// The option parser on its own (cudamux::nvrtc_options::parse, exported by the core).
#include "cudamux/nvrtc_options.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace opt = cudamux::nvrtc_options;

namespace {

nvrtcResult run(std::vector<const char*> args, opt::Parsed& out, std::string& error,
                std::vector<int> archs = {75, 80, 90}) {
  return opt::parse(args, archs, out, error);
}

TEST(NvrtcOptionParser, OneLetterOptionsInEveryForm) {
  opt::Parsed p;
  std::string err;
  ASSERT_EQ(
      run({"-DA", "-D B=1", "-D=C", "-D", "E=2", "--define-macro", "F", "-I/x", "-I", "y", "-U Z"},
          p, err),
      NVRTC_SUCCESS)
      << err;
  using D = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(p.options.defines, (D{{"A", "1"}, {"B", "1"}, {"C", "1"}, {"E", "2"}, {"F", "1"}}));
  EXPECT_EQ(p.options.include_paths, (std::vector<std::string>{"/x", "y"}));
  EXPECT_EQ(p.options.undefines, (std::vector<std::string>{"Z"}));
}

TEST(NvrtcOptionParser, ArchitecturesAreCheckedAgainstTheCompiler) {
  opt::Parsed p;
  std::string err;
  ASSERT_EQ(run({"-arch=sm_80"}, p, err), NVRTC_SUCCESS);
  EXPECT_EQ(p.options.arch, 80);
  EXPECT_TRUE(p.options.real_arch);
  EXPECT_EQ(p.arch_spelling, "sm_80");
  opt::Parsed q;
  EXPECT_EQ(run({"-arch=sm_86"}, q, err), NVRTC_ERROR_INVALID_OPTION);
  EXPECT_NE(err.find("75, 80, 90"), std::string::npos)
      << err;  // the message lists what is accepted
  opt::Parsed any;
  EXPECT_EQ(run({"-arch=compute_86"}, any, err, {}), NVRTC_SUCCESS);  // no list: any number
  EXPECT_EQ(any.options.arch, 86);
  opt::Parsed bad;
  EXPECT_EQ(run({"-arch=compute_"}, bad, err, {}), NVRTC_ERROR_INVALID_OPTION);
  EXPECT_EQ(run({"-arch=sm_-5"}, bad, err, {}), NVRTC_ERROR_INVALID_OPTION);
}

TEST(NvrtcOptionParser, RelocatableForms) {
  for (auto [args, want] : std::vector<std::pair<std::vector<const char*>, bool>>{
           {{"-dc"}, true},
           {{"-rdc=true"}, true},
           {{"-rdc", "false"}, false},
           {{"-dc", "-dw"}, false},
           {{"--relocatable-device-code=true"}, true}}) {
    opt::Parsed p;
    std::string err;
    ASSERT_EQ(run(args, p, err), NVRTC_SUCCESS) << err;
    EXPECT_EQ(p.options.relocatable, want) << args[0];
  }
}

TEST(NvrtcOptionParser, TimingAndPchFlags) {
  opt::Parsed p;
  std::string err;
  ASSERT_EQ(run({"--time", "t.csv", "-fdevice-time-trace=tr.json", "-create-pch=a.pch",
                 "-fdevice-syntax-only"},
                p, err),
            NVRTC_SUCCESS);
  EXPECT_EQ(p.time_file, "t.csv");
  EXPECT_EQ(p.time_trace_file, "tr.json");
  EXPECT_TRUE(p.create_pch);
  EXPECT_TRUE(p.syntax_only);
  EXPECT_FALSE(p.auto_pch);
}

TEST(NvrtcOptionParser, ShortAndLongNamesAreNotInterchangeable) {
  opt::Parsed p;
  std::string err;
  EXPECT_EQ(run({"--arch=sm_80"}, p, err), NVRTC_ERROR_INVALID_OPTION);
  EXPECT_EQ(run({"-gpu-architecture=sm_80"}, p, err), NVRTC_ERROR_INVALID_OPTION);
  EXPECT_EQ(run({"---G"}, p, err), NVRTC_ERROR_INVALID_OPTION);
}

}  // namespace
