// Textures and surfaces of PTX on the mock (issue 15 item 2, issue 17): nvcc's PTX of
// data/tex/tex_kernels.cu (tex, tld4, txq, suld, sust, sured, suq) loaded through the driver
// API, run on the mock, and compared with the same kernels compiled by the mock's NVRTC, whose
// texture functions are already checked against NVIDIA's GPUs (tests/driver/texture_test.cpp),
// and with values from CUDA's documented rules (surface arithmetic, tex1Dfetch, point
// sampling, the PTX ISA's query values).
#include <cuda.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cudamux/ptx/emit_cpp.hpp"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

#define ASSERT_CU(x) ASSERT_EQ(CUDA_SUCCESS, (x)) << #x
#define EXPECT_CU(x) EXPECT_EQ(CUDA_SUCCESS, (x)) << #x

// NVRTC's image of the reference kernels, built once per process.
const std::string& nvrtc_image() {
  static const std::string img = [] {
    std::string src = read_file(std::string(CUDAMUX_PTX_DATA) + "/tex/tex_kernels.cu");
    // The inline-PTX kernels are nvcc's only (the mock's NVRTC lists kernels before the
    // preprocessor would drop them).
    src = src.substr(0, src.find("// ---- nvcc only"));
    std::string out;
    nvrtcProgram prog = nullptr;
    if (nvrtcCreateProgram(&prog, src.c_str(), "tex_kernels.cu", 0, nullptr, nullptr) !=
        NVRTC_SUCCESS)
      return out;
    const char* opts[] = {"-DCUDAMUX_NVRTC_REF"};
    size_t size = 0;
    if (nvrtcCompileProgram(prog, 1, opts) != NVRTC_SUCCESS) {
      if (nvrtcGetProgramLogSize(prog, &size) == NVRTC_SUCCESS && size > 1) {
        std::string log(size, '\0');
        (void)nvrtcGetProgramLog(prog, log.data());
        ADD_FAILURE() << log;
      }
    } else if (nvrtcGetPTXSize(prog, &size) == NVRTC_SUCCESS) {
      out.assign(size, '\0');
      if (nvrtcGetPTX(prog, out.data()) != NVRTC_SUCCESS) out.clear();
    }
    (void)nvrtcDestroyProgram(&prog);
    return out;
  }();
  return img;
}

class TexturePtx : public ::testing::Test {
 protected:
  struct dim3_t {
    unsigned x = 1, y = 1, z = 1;
  };
  void SetUp() override {
    ASSERT_CU(cuInit(0));
    ASSERT_CU(cuDeviceGet(&dev, 0));
    ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    ASSERT_CU(cuCtxSetCurrent(ctx));
    const std::string ptx =
        read_file(std::string(CUDAMUX_PTX_DATA) + "/tex/tex_kernels.compute_75.ptx");
    ASSERT_FALSE(ptx.empty());
    ASSERT_CU(cuModuleLoadData(&ptx_mod, ptx.c_str()));
    ASSERT_FALSE(nvrtc_image().empty());
    ASSERT_CU(cuModuleLoadData(&ref_mod, nvrtc_image().data()));
  }
  void TearDown() override {
    for (CUtexObject t : texs) EXPECT_CU(cuTexObjectDestroy(t));
    for (CUsurfObject s : surfs) EXPECT_CU(cuSurfObjectDestroy(s));
    for (CUarray a : arrays) EXPECT_CU(cuArrayDestroy(a));
    for (CUmipmappedArray m : mipmaps) EXPECT_CU(cuMipmappedArrayDestroy(m));
    for (CUdeviceptr p : bufs) EXPECT_CU(cuMemFree(p));
    if (ptx_mod) {
      EXPECT_CU(cuModuleUnload(ptx_mod));
    }
    if (ref_mod) {
      EXPECT_CU(cuModuleUnload(ref_mod));
    }
    if (ctx) {
      EXPECT_CU(cuDevicePrimaryCtxRelease(dev));
    }
  }

  CUdeviceptr alloc(size_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_CU(cuMemAlloc(&p, bytes));
    EXPECT_CU(cuMemsetD8(p, 0, bytes));
    bufs.push_back(p);
    return p;
  }
  template <class T>
  CUdeviceptr upload(const std::vector<T>& v) {
    const CUdeviceptr p = alloc(v.size() * sizeof(T));
    EXPECT_CU(cuMemcpyHtoD(p, v.data(), v.size() * sizeof(T)));
    return p;
  }
  template <class T>
  std::vector<T> download(CUdeviceptr p, size_t n) {
    std::vector<T> v(n);
    EXPECT_CU(cuMemcpyDtoH(v.data(), p, n * sizeof(T)));
    return v;
  }
  CUresult launch(CUmodule m, const char* name, dim3_t grid, unsigned block,
                  std::vector<void*> args) {
    CUfunction f = nullptr;
    if (CUresult r = cuModuleGetFunction(&f, m, name)) return r;
    if (CUresult r = cuLaunchKernel(f, grid.x, grid.y, grid.z, block, 1, 1, 0, nullptr, args.data(),
                                    nullptr))
      return r;
    return cuCtxSynchronize();
  }
  // Runs `name` of both modules, each writing `out_bytes` at the first pointer argument that
  // is `out`; returns both outputs.
  std::pair<std::vector<unsigned char>, std::vector<unsigned char>> both(
      const char* name, unsigned n, size_t out_bytes, const std::vector<void*>& args_with_out,
      CUdeviceptr* out) {
    std::vector<unsigned char> r[2];
    CUmodule mods[2] = {ptx_mod, ref_mod};
    for (int k = 0; k < 2; ++k) {
      *out = alloc(out_bytes);
      EXPECT_CU(launch(mods[k], name, {(n + 63) / 64, 1, 1}, 64, args_with_out)) << name;
      r[k] = download<unsigned char>(*out, out_bytes);
    }
    return {r[0], r[1]};
  }
  CUarray make_array(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch, unsigned flags) {
    CUDA_ARRAY3D_DESCRIPTOR desc{};
    desc.Width = w;
    desc.Height = h;
    desc.Depth = d;
    desc.Format = f;
    desc.NumChannels = ch;
    desc.Flags = flags;
    CUarray a = nullptr;
    EXPECT_CU(cuArray3DCreate(&a, &desc));
    if (a) arrays.push_back(a);
    return a;
  }
  void fill(CUarray a, const void* src, size_t row_bytes, size_t h, size_t d) {
    CUDA_MEMCPY3D c{};
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = src;
    c.srcPitch = row_bytes;
    c.srcHeight = h;
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c.dstArray = a;
    c.WidthInBytes = row_bytes;
    c.Height = h;
    c.Depth = d;
    EXPECT_CU(cuMemcpy3D(&c));
  }
  void read_back(CUarray a, void* dst, size_t row_bytes, size_t h, size_t d) {
    CUDA_MEMCPY3D c{};
    c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    c.srcArray = a;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = dst;
    c.dstPitch = row_bytes;
    c.dstHeight = h;
    c.WidthInBytes = row_bytes;
    c.Height = h;
    c.Depth = d;
    EXPECT_CU(cuMemcpy3D(&c));
  }
  CUtexObject tex_of_array(CUarray a, CUaddress_mode m, CUfilter_mode f, unsigned flags) {
    CUDA_RESOURCE_DESC r{};
    r.resType = CU_RESOURCE_TYPE_ARRAY;
    r.res.array.hArray = a;
    CUDA_TEXTURE_DESC t{};
    t.addressMode[0] = t.addressMode[1] = t.addressMode[2] = m;
    t.filterMode = f;
    t.flags = flags;
    t.borderColor[0] = 0.75f;
    CUtexObject o = 0;
    EXPECT_CU(cuTexObjectCreate(&o, &r, &t, nullptr));
    if (o) texs.push_back(o);
    return o;
  }
  CUsurfObject surf_of(CUarray a) {
    CUDA_RESOURCE_DESC r{};
    r.resType = CU_RESOURCE_TYPE_ARRAY;
    r.res.array.hArray = a;
    CUsurfObject s = 0;
    EXPECT_CU(cuSurfObjectCreate(&s, &r));
    if (s) surfs.push_back(s);
    return s;
  }
  // Launches texture kernel `name(t, coords, out, n [, extra])` in both modules and expects
  // identical bytes; returns the PTX kernel's output as floats.
  std::vector<float> compare(const char* name, CUtexObject t, const std::vector<float>& coords,
                             unsigned n, size_t out_elems, void* extra = nullptr) {
    const CUdeviceptr c = upload(coords);
    CUdeviceptr out = 0;
    std::vector<void*> args = {&t, (void*)&c, &out, &n};
    if (extra) args.push_back(extra);
    auto [p, r] = both(name, n, out_elems * 4, args, &out);
    EXPECT_EQ(p, r) << name << ": the PTX kernel sampled differently from NVRTC's";
    std::vector<float> f(out_elems);
    std::memcpy(f.data(), p.data(), out_elems * 4);
    return f;
  }

  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUmodule ptx_mod = nullptr, ref_mod = nullptr;
  std::vector<CUdeviceptr> bufs;
  std::vector<CUtexObject> texs;
  std::vector<CUsurfObject> surfs;
  std::vector<CUarray> arrays;
  std::vector<CUmipmappedArray> mipmaps;
};

float texel_value(int x, int y, int z = 0) {
  return static_cast<float>((x * 7 + y * 13 + z * 5) % 23) - 5.0f + 0.25f * x;
}

// Sample points: texel fractions clear of edges, plus points outside the image.
std::vector<float> grid2d(int w, int h, bool normalized) {
  std::vector<float> c;
  for (int y = -2; y < h + 2; ++y)
    for (float fy : {0.375f, 0.8125f})
      for (int x = -2; x < w + 2; ++x)
        for (float fx : {0.25f, 0.625f}) {
          const float u = x + fx, v = y + fy;
          c.push_back(normalized ? u / w : u);
          c.push_back(normalized ? v / h : v);
        }
  return c;
}

TEST_F(TexturePtx, Tex2DEveryAddressModeFilterAndCoordinateMode) {
  const int w = 8, h = 6;
  std::vector<float> img;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) img.push_back(texel_value(x, y));
  CUarray a = make_array(w, h, 0, CU_AD_FORMAT_FLOAT, 1, 0);
  ASSERT_NE(nullptr, a);
  fill(a, img.data(), w * 4, h, 1);
  int cases = 0;
  for (CUfilter_mode f : {CU_TR_FILTER_MODE_POINT, CU_TR_FILTER_MODE_LINEAR})
    for (CUaddress_mode m : {CU_TR_ADDRESS_MODE_WRAP, CU_TR_ADDRESS_MODE_CLAMP,
                             CU_TR_ADDRESS_MODE_MIRROR, CU_TR_ADDRESS_MODE_BORDER})
      for (bool norm : {false, true}) {
        if (!norm && (m == CU_TR_ADDRESS_MODE_WRAP || m == CU_TR_ADDRESS_MODE_MIRROR)) continue;
        const CUtexObject t = tex_of_array(a, m, f, norm ? CU_TRSF_NORMALIZED_COORDINATES : 0);
        const auto c = grid2d(w, h, norm);
        const unsigned n = static_cast<unsigned>(c.size() / 2);
        const auto out = compare("tex2d", t, c, n, 4 * n);
        SCOPED_TRACE(::testing::Message() << "filter " << f << " mode " << m << " norm " << norm);
        // Point sampling inside the image reads the texel itself (CUDA's tex2D, point mode).
        if (f == CU_TR_FILTER_MODE_POINT)
          for (unsigned i = 0; i < n; ++i) {
            const float u = norm ? c[2 * i] * w : c[2 * i],
                        v = norm ? c[2 * i + 1] * h : c[2 * i + 1];
            if (u >= 0 && u < w && v >= 0 && v < h) {
              EXPECT_EQ(texel_value(static_cast<int>(u), static_cast<int>(v)), out[4 * i]) << i;
            }
          }
        (void)compare("tex2d_f", t, c, n, n);
        ++cases;
      }
  EXPECT_EQ(12, cases);
}

TEST_F(TexturePtx, IntegerAndNormalisedFormats) {
  const int w = 5, h = 4;
  std::vector<int> ints;
  std::vector<unsigned char> bytes;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 4; ++c) ints.push_back((x - 2) * 1000 + y * 10 + c);
      for (int c = 0; c < 4; ++c) bytes.push_back(static_cast<unsigned char>(x * 50 + y * 7 + c));
    }
  CUarray ai = make_array(w, h, 0, CU_AD_FORMAT_SIGNED_INT32, 4, 0);
  CUarray ab = make_array(w, h, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0);
  ASSERT_TRUE(ai && ab);
  fill(ai, ints.data(), w * 16, h, 1);
  fill(ab, bytes.data(), w * 4, h, 1);
  const auto c = grid2d(w, h, false);
  const unsigned n = static_cast<unsigned>(c.size() / 2);
  const CUtexObject ti = tex_of_array(ai, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0);
  const auto oi = compare("tex2d_i4", ti, c, n, 4 * n);
  // (x + 0.25, y + 0.375) of texel (1, 1): tex.2d.v4.s32 returns the integers themselves.
  const unsigned at = static_cast<unsigned>(((1 + 2) * 2 + 0) * (w + 4) * 2 + (1 + 2) * 2);
  int got[4];
  std::memcpy(got, &oi[4 * at], 16);
  EXPECT_EQ(-1000 + 10, got[0]);
  EXPECT_EQ(-1000 + 13, got[3]);
  // Bytes read as element type (tex.2d.v4.u32) and as normalised floats (tex.2d.v4.f32).
  const CUtexObject tb =
      tex_of_array(ab, CU_TR_ADDRESS_MODE_BORDER, CU_TR_FILTER_MODE_POINT, CU_TRSF_READ_AS_INTEGER);
  (void)compare("tex2d_u4", tb, c, n, 4 * n);
  const CUtexObject tf = tex_of_array(ab, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_LINEAR, 0);
  const auto of = compare("tex2d", tf, c, n, 4 * n);
  EXPECT_GE(of[4 * at], 0.0f);
  EXPECT_LE(of[4 * at], 1.0f);
}

TEST_F(TexturePtx, OneAndThreeDimensions) {
  const int w = 7, h = 3, d = 4;
  std::vector<float> v1, v3;
  for (int x = 0; x < w; ++x) v1.push_back(texel_value(x, 0));
  for (int z = 0; z < d; ++z)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) v3.push_back(texel_value(x, y, z));
  CUarray a1 = make_array(w, 0, 0, CU_AD_FORMAT_FLOAT, 1, 0);
  CUarray a3 = make_array(w, h, d, CU_AD_FORMAT_FLOAT, 1, 0);
  ASSERT_TRUE(a1 && a3);
  fill(a1, v1.data(), w * 4, 1, 1);
  fill(a3, v3.data(), w * 4, h, d);
  std::vector<float> c1, c3;
  for (float x = -1.3f; x < w + 1; x += 0.37f) c1.push_back(x);
  for (float z = -0.6f; z < d + 0.5f; z += 0.7f)
    for (float y = -0.4f; y < h + 0.5f; y += 0.55f)
      for (float x = -0.7f; x < w + 0.5f; x += 0.9f) c3.insert(c3.end(), {x, y, z});
  for (CUfilter_mode f : {CU_TR_FILTER_MODE_POINT, CU_TR_FILTER_MODE_LINEAR}) {
    const CUtexObject t1 = tex_of_array(a1, CU_TR_ADDRESS_MODE_CLAMP, f, 0);
    const CUtexObject t3 = tex_of_array(a3, CU_TR_ADDRESS_MODE_BORDER, f, 0);
    const auto o1 = compare("tex1d", t1, c1, static_cast<unsigned>(c1.size()), 4 * c1.size());
    const auto o3 =
        compare("tex3d", t3, c3, static_cast<unsigned>(c3.size() / 3), 4 * c3.size() / 3);
    if (f == CU_TR_FILTER_MODE_POINT) {
      EXPECT_EQ(texel_value(0, 0), o1[0]);  // x = -1.3 clamps to texel 0
      EXPECT_EQ(0.75f, o3[0]);              // outside: the border colour
    }
  }
}

TEST_F(TexturePtx, LayeredAndCubemap) {
  const int w = 6, h = 4, layers = 3;
  std::vector<float> l1, l2, cube, cubel;
  for (int l = 0; l < layers; ++l)
    for (int x = 0; x < w; ++x) l1.push_back(texel_value(x, l) + 100.0f * l);
  for (int l = 0; l < layers; ++l)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) l2.push_back(texel_value(x, y) + 100.0f * l);
  for (int f = 0; f < 12; ++f)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 4; ++x) {
        if (f < 6) cube.push_back(f * 100.0f + y * 4 + x);
        cubel.push_back(f * 100.0f + y * 4 + x + 0.5f);
      }
  CUarray a1 = make_array(w, 0, layers, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED);
  CUarray a2 = make_array(w, h, layers, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED);
  CUarray ac = make_array(4, 4, 6, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP);
  CUarray acl =
      make_array(4, 4, 12, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_LAYERED);
  ASSERT_TRUE(a1 && a2 && ac && acl);
  fill(a1, l1.data(), w * 4, 1, layers);
  fill(a2, l2.data(), w * 4, h, layers);
  fill(ac, cube.data(), 16, 4, 6);
  fill(acl, cubel.data(), 16, 4, 12);
  const auto c2 = grid2d(w, h, false);
  std::vector<float> c1;
  for (size_t i = 0; i < c2.size(); i += 2) c1.push_back(c2[i]);
  std::vector<float> dirs;
  for (float z : {-1.0f, -0.3f, 0.2f, 1.0f})
    for (float y : {-1.0f, -0.45f, 0.1f, 0.7f, 1.0f})
      for (float x : {-1.0f, -0.6f, 0.05f, 0.55f, 1.0f}) dirs.insert(dirs.end(), {x, y, z});
  for (CUfilter_mode f : {CU_TR_FILTER_MODE_POINT, CU_TR_FILTER_MODE_LINEAR}) {
    const CUtexObject t1 = tex_of_array(a1, CU_TR_ADDRESS_MODE_CLAMP, f, 0);
    const CUtexObject t2 = tex_of_array(a2, CU_TR_ADDRESS_MODE_CLAMP, f, 0);
    const CUtexObject tc = tex_of_array(ac, CU_TR_ADDRESS_MODE_CLAMP, f, 0);
    const CUtexObject tcl = tex_of_array(acl, CU_TR_ADDRESS_MODE_CLAMP, f, 0);
    for (int layer = 0; layer < layers; ++layer) {
      const auto o1 =
          compare("tex1d_layered", t1, c1, static_cast<unsigned>(c1.size()), 4 * c1.size(), &layer);
      const auto o2 = compare("tex2d_layered", t2, c2, static_cast<unsigned>(c2.size() / 2),
                              2 * c2.size(), &layer);
      if (f == CU_TR_FILTER_MODE_POINT) {
        // Texel (2, 1) of `layer`: grid2d's point (2.25, 1.375).
        const size_t at = ((1 + 2) * 2) * (w + 4) * 2 + (2 + 2) * 2;
        EXPECT_EQ(texel_value(2, 1) + 100.0f * layer, o2[4 * at]);
        EXPECT_EQ(texel_value(2, layer) + 100.0f * layer, o1[4 * at]);
      }
    }
    const unsigned nd = static_cast<unsigned>(dirs.size() / 3);
    const auto oc = compare("cube", tc, dirs, nd, 4 * nd);
    for (int layer = 0; layer < 2; ++layer)
      (void)compare("cube_layered", tcl, dirs, nd, 4 * nd, &layer);
    // (1, 0.1, -0.3): the +x face (0).
    if (f == CU_TR_FILTER_MODE_POINT) {
      const size_t at = 1 * 25 + 2 * 5 + 4;
      EXPECT_GE(oc[4 * at], 0.0f);
      EXPECT_LT(oc[4 * at], 16.0f);
    }
  }
}

TEST_F(TexturePtx, MipmapLevelsAndGradients) {
  CUDA_ARRAY3D_DESCRIPTOR d{};
  d.Width = 16;
  d.Height = 16;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 1;
  CUmipmappedArray m = nullptr;
  ASSERT_CU(cuMipmappedArrayCreate(&m, &d, 4));
  mipmaps.push_back(m);
  for (unsigned l = 0; l < 4; ++l) {
    CUarray level = nullptr;
    ASSERT_CU(cuMipmappedArrayGetLevel(&level, m, l));
    const int s = 16 >> l;
    std::vector<float> v;
    for (int y = 0; y < s; ++y)
      for (int x = 0; x < s; ++x) v.push_back(100.0f * l + texel_value(x, y));
    fill(level, v.data(), s * 4, s, 1);
  }
  CUDA_RESOURCE_DESC r{};
  r.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
  r.res.mipmap.hMipmappedArray = m;
  CUDA_TEXTURE_DESC t{};
  t.addressMode[0] = t.addressMode[1] = CU_TR_ADDRESS_MODE_WRAP;
  t.filterMode = CU_TR_FILTER_MODE_LINEAR;
  t.mipmapFilterMode = CU_TR_FILTER_MODE_LINEAR;
  t.maxMipmapLevelClamp = 3.0f;
  t.flags = CU_TRSF_NORMALIZED_COORDINATES;
  CUtexObject o = 0;
  ASSERT_CU(cuTexObjectCreate(&o, &r, &t, nullptr));
  texs.push_back(o);
  const auto c = grid2d(16, 16, true);
  const unsigned n = static_cast<unsigned>(c.size() / 2);
  for (float lod : {0.0f, 0.5f, 1.0f, 2.25f, 3.0f}) {
    const auto out = compare("tex2d_lod", o, c, n, 4 * n, &lod);
    EXPECT_GE(out[4 * 40], 100.0f * std::floor(lod) - 6.0f) << lod;  // from the chosen levels
  }
  for (float g : {1.0f / 16, 1.0f / 8, 0.3f, 0.5f}) (void)compare("tex2d_grad", o, c, n, 4 * n, &g);
}

TEST_F(TexturePtx, Tex1DFetchOfLinearMemory) {
  std::vector<float> v(4 * 50);
  std::vector<int> vi(4 * 50);
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = 0.5f * static_cast<float>(i) - 7.0f;
    vi[i] = static_cast<int>(i * 3) - 40;
  }
  const CUdeviceptr p = upload(v), pi = upload(vi);
  auto linear = [&](CUdeviceptr ptr, CUarray_format f) {
    CUDA_RESOURCE_DESC r{};
    r.resType = CU_RESOURCE_TYPE_LINEAR;
    r.res.linear.devPtr = ptr;
    r.res.linear.format = f;
    r.res.linear.numChannels = 4;
    r.res.linear.sizeInBytes = v.size() * 4;
    CUDA_TEXTURE_DESC t{};
    CUtexObject o = 0;
    EXPECT_CU(cuTexObjectCreate(&o, &r, &t, nullptr));
    texs.push_back(o);
    return o;
  };
  CUtexObject t = linear(p, CU_AD_FORMAT_FLOAT), ti = linear(pi, CU_AD_FORMAT_SIGNED_INT32);
  unsigned n = 60;
  int offset = -5;
  CUdeviceptr out = 0;
  auto [a, b] = both("fetch_f4", n, n * 16, {&t, (void*)&out, &n, &offset}, &out);
  EXPECT_EQ(a, b);
  std::vector<float> f(4 * n);
  std::memcpy(f.data(), a.data(), a.size());
  for (unsigned i = 0; i < n; ++i) {
    const int e = static_cast<int>(i) + offset;
    for (int c = 0; c < 4; ++c)  // outside [0, 50): zero (tex1Dfetch of linear memory)
      EXPECT_EQ(e >= 0 && e < 50 ? v[4 * e + c] : 0.0f, f[4 * i + c]) << i;
  }
  auto [ai, bi] = both("fetch_i4", n, n * 16, {&ti, (void*)&out, &n, &offset}, &out);
  EXPECT_EQ(ai, bi);
  std::vector<int> g(4 * n);
  std::memcpy(g.data(), ai.data(), ai.size());
  EXPECT_EQ(vi[4 * 10 + 2], g[4 * 15 + 2]);
  EXPECT_EQ(0, g[0]);
}

TEST_F(TexturePtx, GatherEachComponent) {
  const int w = 6, h = 5;
  std::vector<float> img;
  std::vector<int> ints;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 4; ++c) {
        img.push_back(texel_value(x, y) + 0.125f * c);
        ints.push_back(x * 100 + y * 10 + c);
      }
  CUarray a = make_array(w, h, 0, CU_AD_FORMAT_FLOAT, 4, CUDA_ARRAY3D_TEXTURE_GATHER);
  CUarray ai = make_array(w, h, 0, CU_AD_FORMAT_SIGNED_INT32, 4, CUDA_ARRAY3D_TEXTURE_GATHER);
  ASSERT_TRUE(a && ai);
  fill(a, img.data(), w * 16, h, 1);
  fill(ai, ints.data(), w * 16, h, 1);
  const auto c = grid2d(w, h, false);
  const unsigned n = static_cast<unsigned>(c.size() / 2);
  const CUtexObject t = tex_of_array(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0);
  const auto out = compare("gather", t, c, n, 16 * n);
  // Point (2.625, 1.8125): footprint texels (2..3, 1..2); component k of (i, j+1) first.
  const size_t at = ((1 + 2) * 2 + 1) * (w + 4) * 2 + (2 + 2) * 2 + 1;
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(texel_value(2, 2) + 0.125f * k, out[16 * at + 4 * k + 0]) << k;
    EXPECT_EQ(texel_value(3, 2) + 0.125f * k, out[16 * at + 4 * k + 1]) << k;
    EXPECT_EQ(texel_value(3, 1) + 0.125f * k, out[16 * at + 4 * k + 2]) << k;
    EXPECT_EQ(texel_value(2, 1) + 0.125f * k, out[16 * at + 4 * k + 3]) << k;
  }
  const CUtexObject ti = tex_of_array(ai, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0);
  (void)compare("gather_i", ti, c, n, 4 * n);
}

// Surfaces: each kernel transforms its array in place; the result is computed here.
TEST_F(TexturePtx, SurfaceReadWriteRoundTrips) {
  const int w = 9, h = 4;
  auto run2d = [&](const char* name, CUarray a) {
    CUsurfObject s = surf_of(a);
    int ww = w, hh = h;
    void* args[] = {&s, &ww, &hh};
    CUfunction f = nullptr;
    ASSERT_CU(cuModuleGetFunction(&f, ptx_mod, name));
    ASSERT_CU(cuLaunchKernel(f, 1, h, 1, 64, 1, 1, 0, nullptr, args, nullptr));
    ASSERT_CU(cuCtxSynchronize());
  };
  {
    std::vector<float> v(w * h), got(w * h);
    for (int i = 0; i < w * h; ++i) v[i] = 0.5f * i - 3.0f;
    CUarray a = make_array(w, h, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SURFACE_LDST);
    fill(a, v.data(), w * 4, h, 1);
    run2d("surf2d_f", a);
    read_back(a, got.data(), w * 4, h, 1);
    for (int i = 0; i < w * h; ++i) EXPECT_EQ(v[i] * 2.0f + 1.0f, got[i]) << i;
  }
  {
    std::vector<unsigned char> v(4 * w * h), got(v.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<unsigned char>(i * 7 + 3);
    CUarray a = make_array(w, h, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, CUDA_ARRAY3D_SURFACE_LDST);
    fill(a, v.data(), w * 4, h, 1);
    run2d("surf2d_uc4", a);
    read_back(a, got.data(), w * 4, h, 1);
    for (int i = 0; i < w * h; ++i) {
      EXPECT_EQ(static_cast<unsigned char>(v[4 * i + 3] + 1), got[4 * i]) << i;
      EXPECT_EQ(v[4 * i + 2], got[4 * i + 1]) << i;
      EXPECT_EQ(v[4 * i + 0], got[4 * i + 3]) << i;
    }
  }
  {
    std::vector<short> v(2 * w * h), got(v.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<short>(i * 31 - 500);
    CUarray a = make_array(w, h, 0, CU_AD_FORMAT_SIGNED_INT16, 2, CUDA_ARRAY3D_SURFACE_LDST);
    fill(a, v.data(), w * 4, h, 1);
    run2d("surf2d_s2", a);
    read_back(a, got.data(), w * 4, h, 1);
    for (int i = 0; i < w * h; ++i) {
      EXPECT_EQ(v[2 * i + 1], got[2 * i]) << i;
      EXPECT_EQ(static_cast<short>(v[2 * i] - 3), got[2 * i + 1]) << i;
    }
  }
  {
    std::vector<float> v(4 * w * h), got(v.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.25f * i;
    CUarray a = make_array(w, h, 0, CU_AD_FORMAT_FLOAT, 4, CUDA_ARRAY3D_SURFACE_LDST);
    fill(a, v.data(), w * 16, h, 1);
    run2d("surf2d_f4", a);
    read_back(a, got.data(), w * 16, h, 1);
    for (int i = 0; i < w * h; ++i) {
      EXPECT_EQ(v[4 * i + 3], got[4 * i]) << i;
      EXPECT_EQ(v[4 * i] + 0.5f, got[4 * i + 3]) << i;
    }
  }
  {
    std::vector<long long> v(w * h), got(v.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = (1LL << 40) + static_cast<long long>(i) * 77;
    CUarray a = make_array(w, h, 0, CU_AD_FORMAT_UNSIGNED_INT32, 2, CUDA_ARRAY3D_SURFACE_LDST);
    fill(a, v.data(), w * 8, h, 1);
    run2d("surf2d_ll", a);
    read_back(a, got.data(), w * 8, h, 1);
    for (int i = 0; i < w * h; ++i) EXPECT_EQ(v[i] * 3 - 1, got[i]) << i;
  }
}

TEST_F(TexturePtx, Surface1D3DLayeredAndBoundaryModes) {
  const int w = 5, h = 3, d = 2;
  std::vector<float> v(w * h * d), got(v.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) - 4.0f;
  CUarray a1 = make_array(w, 0, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SURFACE_LDST);
  CUarray a3 = make_array(w, h, d, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SURFACE_LDST);
  CUarray al =
      make_array(w, h, d, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_LAYERED);
  ASSERT_TRUE(a1 && a3 && al);
  fill(a1, v.data(), w * 4, 1, 1);
  fill(a3, v.data(), w * 4, h, d);
  fill(al, v.data(), w * 4, h, d);
  CUsurfObject s1 = surf_of(a1), s3 = surf_of(a3), sl = surf_of(al);
  int ww = w, hh = h, dd = d, layer = 1;
  CUfunction f = nullptr;
  void* a1args[] = {&s1, &ww};
  ASSERT_CU(cuModuleGetFunction(&f, ptx_mod, "surf1d_f"));
  ASSERT_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, a1args, nullptr));
  void* a3args[] = {&s3, &ww, &hh, &dd};
  ASSERT_CU(cuModuleGetFunction(&f, ptx_mod, "surf3d_f"));
  ASSERT_CU(cuLaunchKernel(f, 1, h, d, 32, 1, 1, 0, nullptr, a3args, nullptr));
  void* alargs[] = {&sl, &ww, &hh, &layer};
  ASSERT_CU(cuModuleGetFunction(&f, ptx_mod, "surf2d_layered_f"));
  ASSERT_CU(cuLaunchKernel(f, 1, h, 1, 32, 1, 1, 0, nullptr, alargs, nullptr));
  ASSERT_CU(cuCtxSynchronize());
  read_back(a1, got.data(), w * 4, 1, 1);
  for (int x = 0; x < w; ++x) EXPECT_EQ(v[x] + 10.0f, got[x]) << x;
  read_back(a3, got.data(), w * 4, h, d);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i] - 1.0f, got[i]) << i;
  read_back(al, got.data(), w * 4, h, d);
  for (size_t i = 0; i < v.size(); ++i)
    EXPECT_EQ(i >= static_cast<size_t>(w * h) ? v[i] * 4.0f : v[i], got[i]) << i;

  // .zero reads 0 and drops the write; .clamp reads and writes the nearest element.
  std::vector<float> e(w * h);
  for (size_t i = 0; i < e.size(); ++i) e[i] = 1.5f + static_cast<float>(i);
  CUarray ae = make_array(w, h, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SURFACE_LDST);
  fill(ae, e.data(), w * 4, h, 1);
  CUsurfObject se = surf_of(ae);
  const CUdeviceptr out = alloc(16);
  void* eargs[] = {&se, (void*)&out, &ww};
  ASSERT_CU(cuModuleGetFunction(&f, ptx_mod, "surf_edges"));
  ASSERT_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, eargs, nullptr));
  ASSERT_CU(cuCtxSynchronize());
  const auto o = download<float>(out, 3);
  EXPECT_EQ(0.0f, o[0]);
  EXPECT_EQ(e[w - 1], o[1]);
  EXPECT_EQ(e[w], o[2]);
  read_back(ae, got.data(), w * 4, h, 1);
  EXPECT_EQ(e[w - 1], got[w - 1]);   // the .zero write went nowhere
  EXPECT_EQ(77.0f, got[2 * w - 1]);  // the .clamp write landed on the last element of row 1
}

TEST_F(TexturePtx, QueriesAndSurfaceReduction) {
  CUarray a = make_array(12, 7, 3, CU_AD_FORMAT_UNSIGNED_INT16, 2,
                         CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_LAYERED);
  ASSERT_NE(nullptr, a);
  const CUtexObject t = tex_of_array(a, CU_TR_ADDRESS_MODE_MIRROR, CU_TR_FILTER_MODE_LINEAR,
                                     CU_TRSF_NORMALIZED_COORDINATES);
  const CUsurfObject s = surf_of(a);
  const CUdeviceptr out = alloc(16 * 4);
  void* args[] = {(void*)&t, (void*)&s, (void*)&out};
  CUfunction f = nullptr;
  ASSERT_CU(cuModuleGetFunction(&f, ptx_mod, "queries"));
  ASSERT_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_CU(cuCtxSynchronize());
  const auto q = download<int>(out, 16);
  EXPECT_EQ(12, q[0]);  // width
  EXPECT_EQ(7, q[1]);   // height
  EXPECT_EQ(0, q[2]);   // depth: a layered 2D texture has none
  EXPECT_EQ(1, q[3]);   // mip levels
  EXPECT_EQ(1, q[4]);   // normalized_coords
  EXPECT_EQ(1, q[5]);   // filter_mode: linear
  EXPECT_EQ(1, q[6]);   // addr_mode_0: mirror (PTX ISA order: wrap, mirror, clamp_ogl, ...)
  EXPECT_EQ(1, q[7]);
  EXPECT_EQ(0x10D3, q[8]);  // channel_data_type: CL_UNORM_INT16 (read as normalised floats)
  EXPECT_EQ(0x10B2, q[9]);  // channel_order: CL_RG
  EXPECT_EQ(0, q[10]);      // txq.level.width of level 1: this texture has no level 1
  EXPECT_EQ(12, q[11]);     // suq.width
  EXPECT_EQ(7, q[12]);
  EXPECT_EQ(0, q[13]);
  EXPECT_EQ(0x10DB, q[14]);  // CL_UNSIGNED_INT16
  EXPECT_EQ(3, q[15]);       // suq.array_size: layers

  // sured.b.add: 256 threads onto 8 u32 elements of row 0.
  const int w = 8;
  std::vector<unsigned> init(w * 2, 5u), got(w * 2);
  CUarray ar = make_array(w, 2, 0, CU_AD_FORMAT_UNSIGNED_INT32, 1, CUDA_ARRAY3D_SURFACE_LDST);
  fill(ar, init.data(), w * 4, 2, 1);
  CUsurfObject sr = surf_of(ar);
  int ww = w;
  void* rargs[] = {&sr, &ww};
  ASSERT_CU(cuModuleGetFunction(&f, ptx_mod, "sured_add"));
  ASSERT_CU(cuLaunchKernel(f, 4, 1, 1, 64, 1, 1, 0, nullptr, rargs, nullptr));
  ASSERT_CU(cuCtxSynchronize());
  read_back(ar, got.data(), w * 4, 2, 1);
  for (int x = 0; x < w; ++x) {
    EXPECT_EQ(5u + 32u, got[x]) << x;
    EXPECT_EQ(5u, got[w + x]) << x;
  }
}

// Last: a trap poisons the context.
TEST_F(TexturePtx, SurfaceTrapFailsTheLaunch) {
  CUarray a = make_array(4, 2, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SURFACE_LDST);
  ASSERT_NE(nullptr, a);
  CUsurfObject s = surf_of(a);
  const CUdeviceptr out = alloc(16);
  int w = 4;
  void* args[] = {&s, (void*)&out, &w};
  CUfunction f = nullptr;
  ASSERT_CU(cuModuleGetFunction(&f, ptx_mod, "surf_trap"));
  CUresult r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr);
  if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
  EXPECT_NE(CUDA_SUCCESS, r);
  // The primary context is reset so later tests in this process start clean.
  for (CUsurfObject o : surfs) (void)cuSurfObjectDestroy(o);
  for (CUarray x : arrays) (void)cuArrayDestroy(x);
  for (CUdeviceptr p : bufs) (void)cuMemFree(p);
  surfs.clear();
  arrays.clear();
  bufs.clear();
  (void)cuModuleUnload(ptx_mod);
  (void)cuModuleUnload(ref_mod);
  ptx_mod = ref_mod = nullptr;
  EXPECT_CU(cuDevicePrimaryCtxReset(dev));
}

// Forms the mock cannot run are diagnosed at load (and trap if reached), never miscompiled.
TEST(TexturePtxEmit, UnsupportedFormsAreDiagnosed) {
  const char* text = R"(.version 8.5
.target sm_75
.address_size 64
.global .texref legacy;
.visible .entry k(.param .u64 t, .param .u64 o) {
  .reg .b64 %rd<3>;
  .reg .f32 %f<9>;
  .reg .b32 %r<6>;
  ld.param.u64 %rd1, [t];
  tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [legacy, {%f5, %f6}];
  tex.2dms.v4.f32.s32 {%f1, %f2, %f3, %f4}, [%rd1, {%r1, %r2, %r3, %r4}];
  tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}], {%r1, %r2};
  txq.width.b32 %r5, [legacy];
  suld.b.2d.b32.trap {%r1}, [%rd1, {%r2, %r3}];
  ret;
}
)";
  std::vector<cudamux::ptx::Diagnostic> d;
  auto m = cudamux::ptx::parse(text, d);
  ASSERT_TRUE(m.has_value()) << (d.empty() ? "" : d[0].message);
  const auto r = cudamux::ptx::emit_cpp(*m);
  std::string all;
  for (const auto& u : r.unsupported) all += u.message + "\n";
  EXPECT_NE(std::string::npos, all.find("line 10 (texture/surface references")) << all;
  EXPECT_NE(std::string::npos, all.find("line 11 (multisample")) << all;
  EXPECT_NE(std::string::npos, all.find("line 12 (texel offsets")) << all;
  EXPECT_NE(std::string::npos, all.find("line 13 (texture/surface references")) << all;
  EXPECT_EQ(std::string::npos, all.find("line 14")) << all;  // suld.b of an object: supported
  EXPECT_NE(std::string::npos, r.source.find("::cudamux::ptx::texops::surf_load(")) << r.source;
}

}  // namespace
