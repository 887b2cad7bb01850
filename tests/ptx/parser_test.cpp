// The PTX parser (issue 15) on nvcc output (fixtures), NVIDIA's cuda-samples corpus when
// present, hand-written PTX and broken input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cudamux/ptx/ir.hpp"

namespace fs = std::filesystem;
using namespace cudamux::ptx;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string first_diag(const std::vector<Diagnostic>& d) {
  if (d.empty()) return "";
  return std::to_string(d[0].loc.line) + ":" + std::to_string(d[0].loc.column) + ": " +
         d[0].message;
}

}  // namespace

// NVIDIA's cuda-samples compiled to PTX (not committed): every file parses cleanly.
TEST(Corpus, CudaSamplesParse) {
  const char* env = std::getenv("CUDAMUX_PTX_CORPUS");
  fs::path dir = env ? env : "/tmp/ptxcorpus";
  if (!fs::is_directory(dir)) GTEST_SKIP() << "no corpus at " << dir;
  int n = 0;
  for (auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".ptx") continue;
    std::vector<Diagnostic> d;
    auto m = parse(read_file(e.path()), d);
    EXPECT_TRUE(m.has_value()) << e.path().filename() << ": " << first_diag(d);
    EXPECT_TRUE(d.empty()) << e.path().filename() << ": " << first_diag(d);
    ++n;
  }
  EXPECT_GT(n, 0);
}
