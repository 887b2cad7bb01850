// Compiles CUDA C++ with the mock's compiler and launches kernels through the backend interface.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "mock_fixture.hpp"

namespace cudamux::mock::test {

struct Compiled {
  be::CompileResult result;
  be::Status status;
};

class KernelTest : public MockTest {
 protected:
  struct dim3_t {
    unsigned v[3];
    dim3_t(unsigned x, unsigned y = 1, unsigned z = 1) : v{x, y, z} {}
  };

  std::string config() override { return "[mock]\nmemory = 268435456\n"; }

  // Keeps the backend's log stream alive (the mock logs after creation: compiles, launches).
  void SetUp() override {
    created = create_backend(config());
    ASSERT_TRUE(created.backend) << created.error;
    backend = std::move(created.backend);
    ASSERT_EQ(cu(backend->open_context(0, 0, ctx)), CUDA_SUCCESS);
  }
  std::string log_text() const { return created.log->str(); }
  Created created;

  Compiled compile(const std::string& source, be::CompileOptions options = {},
                   std::vector<std::string> expressions = {},
                   std::vector<std::pair<std::string, std::string>> headers = {},
                   const std::string& name = "test.cu") {
    Compiled c;
    be::CompileRequest r;
    r.source = source;
    r.name = name;
    r.options = std::move(options);
    // These programs are written as for NVIDIA's NVRTC with the toolkit's include folder named
    // (NVRTC searches no folder of its own): the mock's built-in headers stand in for it.
    if (r.options.include_paths.empty())
      r.options.include_paths.emplace_back("/usr/local/cuda/include");
    r.name_expressions = std::move(expressions);
    r.headers = std::move(headers);
    c.status = backend->compiler()->compile(r, c.result);
    return c;
  }

  // Compiles and loads; fails the test on errors.
  std::unique_ptr<be::Module> build(const std::string& source, be::CompileOptions options = {},
                                    std::vector<std::string> expressions = {}) {
    auto c = compile(source, std::move(options), std::move(expressions));
    EXPECT_TRUE(c.status.ok());
    EXPECT_TRUE(c.result.success) << c.result.log;
    lowered = c.result.lowered_names;
    std::unique_ptr<be::Module> m;
    if (!c.result.success) return m;
    EXPECT_EQ(cu(ctx->load_module(be::native_image(c.result.image.data()), m)), CUDA_SUCCESS);
    return m;
  }

  // Packs `args` per the function's parameter layout, launches on `q`.
  template <class... A>
  CUresult launch(be::Queue& q, be::Function* f, dim3_t grid, dim3_t block, unsigned shared,
                  A... args) {
    const auto& params = f->params();
    std::vector<std::byte> buffer;
    const void* values[] = {static_cast<const void*>(&args)..., nullptr};
    const std::size_t sizes[] = {sizeof(A)..., 0};
    EXPECT_EQ(params.size(), sizeof...(A));
    for (std::size_t i = 0; i < params.size() && i < sizeof...(A); ++i) {
      EXPECT_EQ(params[i].size, sizes[i]);
      if (buffer.size() < params[i].offset + params[i].size)
        buffer.resize(params[i].offset + params[i].size);
      std::memcpy(buffer.data() + params[i].offset, values[i], sizes[i]);
    }
    be::LaunchDesc d;
    d.function = f;
    for (int i = 0; i < 3; ++i) {
      d.grid[i] = grid.v[i];
      d.block[i] = block.v[i];
    }
    d.shared_bytes = shared;
    d.args = buffer.empty() ? nullptr : buffer.data();
    d.args_size = buffer.size();
    return cu(q.launch(d));
  }

  template <class T>
  T* dev(std::size_t n) {
    return static_cast<T*>(dalloc(n * sizeof(T)));
  }

  std::vector<std::pair<std::string, std::string>> lowered;
};

}  // namespace cudamux::mock::test
