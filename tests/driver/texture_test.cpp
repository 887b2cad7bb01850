// Texture and surface objects (issue 17): cuTexObject* / cuSurfObject* with CUDA's validation,
// and sampling by kernels compiled through NVRTC, compared with values computed here from the
// CUDA programming guide's "Texture Fetching" formulas (point sampling exactly; linear
// filtering, whose weights are 9-bit fixed point, within a 1/256-based bound). Linear and
// pitch2D resources need no arrays; the array-backed cases skip while cuArray3DCreate answers
// CUDA_ERROR_NOT_SUPPORTED.
#include <nvrtc.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "conformance.hpp"
#include "nvrtc_compile.hpp"

namespace {

using conformance::Driver;

// The hip backend makes HIP's texture and surface objects (docs/backends/hip.md), but the fake
// HIP runtime of the tests runs no kernels: what kernels read and write is unchecked there.
constexpr char kNoImages[] = "the fake HIP runtime runs no kernels that sample or write images";

constexpr char kKernels[] = R"(
extern "C" __global__ void fetch_f(cudaTextureObject_t t, float* out, int n, int offset) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float>(t, i + offset);
}
extern "C" __global__ void fetch_f4(cudaTextureObject_t t, float4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float4>(t, i);
}
extern "C" __global__ void fetch_uc4(cudaTextureObject_t t, uchar4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) tex1Dfetch(&out[i], t, i);
}
extern "C" __global__ void fetch_s2(cudaTextureObject_t t, short2* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<short2>(t, i);
}
extern "C" __global__ void fetch_f2(cudaTextureObject_t t, float2* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float2>(t, i);
}
extern "C" __global__ void tex1d(cudaTextureObject_t t, const float* c, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1D<float>(t, c[i]);
}
extern "C" __global__ void tex2d(cudaTextureObject_t t, const float* c, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2D<float>(t, c[2 * i], c[2 * i + 1]);
}
extern "C" __global__ void tex2d_f4(cudaTextureObject_t t, const float* c, float4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) tex2D(&out[i], t, c[2 * i], c[2 * i + 1]);
}
extern "C" __global__ void tex2d_layered(cudaTextureObject_t t, const float* c, float* out,
                                         int n, int layer) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2DLayered<float>(t, c[2 * i], c[2 * i + 1], layer);
}
extern "C" __global__ void tex2d_lod(cudaTextureObject_t t, const float* c, float* out, int n,
                                     float lod) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2DLod<float>(t, c[2 * i], c[2 * i + 1], lod);
}
extern "C" __global__ void tex3d(cudaTextureObject_t t, const float* c, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex3D<float>(t, c[3 * i], c[3 * i + 1], c[3 * i + 2]);
}
extern "C" __global__ void cube(cudaTextureObject_t t, const float* c, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = texCubemap<float>(t, c[3 * i], c[3 * i + 1], c[3 * i + 2]);
}
extern "C" __global__ void gather(cudaTextureObject_t t, const float* c, float4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2Dgather<float4>(t, c[2 * i], c[2 * i + 1], 1);
}
extern "C" __global__ void surf_scale(cudaSurfaceObject_t s, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y;
  if (x < w && y < h) {
    float v = surf2Dread<float>(s, x * 4, y);
    surf2Dwrite(v * 2.0f + 1.0f, s, x * 4, y);
  }
}
extern "C" __global__ void surf_edges(cudaSurfaceObject_t s, float* out, int w) {
  out[0] = surf2Dread<float>(s, -4, 0, cudaBoundaryModeZero);
  out[1] = surf2Dread<float>(s, w * 4, 0, cudaBoundaryModeClamp);
  out[2] = surf2Dread<float>(s, -4, 0, cudaBoundaryModeClamp);
  surf2Dwrite(99.0f, s, w * 4, 0, cudaBoundaryModeZero);
}
extern "C" __global__ void surf_trap(cudaSurfaceObject_t s, float* out, int w) {
  out[0] = surf2Dread<float>(s, w * 4, 0, cudaBoundaryModeTrap);
}
)";

// Reference texel addressing (the programming guide): clamp, border (-1: border), and wrap /
// mirror with normalised coordinates.
long long address(long long i, long long n, CUaddress_mode m) {
  switch (m) {
    case CU_TR_ADDRESS_MODE_WRAP:
      return ((i % n) + n) % n;
    case CU_TR_ADDRESS_MODE_MIRROR: {
      const long long k = ((i % (2 * n)) + 2 * n) % (2 * n);
      return k < n ? k : 2 * n - 1 - k;
    }
    case CU_TR_ADDRESS_MODE_BORDER:
      return i >= 0 && i < n ? i : -1;
    default:
      return std::clamp(i, 0LL, n - 1);
  }
}

// A 2D single-channel float image on the host, sampled as CUDA specifies.
struct Image2D {
  int w = 0, h = 0;
  std::vector<float> v;
  float at(long long x, long long y, CUaddress_mode mx, CUaddress_mode my, float border) const {
    x = address(x, w, mx);
    y = address(y, h, my);
    if (x < 0 || y < 0) return border;
    return v[static_cast<size_t>(y * w + x)];
  }
  float point(float x, float y, bool norm, CUaddress_mode m, float border = 0) const {
    if (norm) {
      x *= static_cast<float>(w);
      y *= static_cast<float>(h);
    }
    return at(static_cast<long long>(std::floor(x)), static_cast<long long>(std::floor(y)), m, m,
              border);
  }
  // Exact bilinear weights, and the largest difference in the footprint for the error bound.
  float linear(float x, float y, bool norm, CUaddress_mode m, float& spread) const {
    if (norm) {
      x *= static_cast<float>(w);
      y *= static_cast<float>(h);
    }
    const float xb = x - 0.5f, yb = y - 0.5f;
    const auto i = static_cast<long long>(std::floor(xb)),
               j = static_cast<long long>(std::floor(yb));
    const float a = xb - std::floor(xb), b = yb - std::floor(yb);
    const float t00 = at(i, j, m, m, 0), t10 = at(i + 1, j, m, m, 0), t01 = at(i, j + 1, m, m, 0),
                t11 = at(i + 1, j + 1, m, m, 0);
    const float lo = std::min({t00, t10, t01, t11}), hi = std::max({t00, t10, t01, t11});
    spread = hi - lo;
    return (1 - a) * (1 - b) * t00 + a * (1 - b) * t10 + (1 - a) * b * t01 + a * b * t11;
  }
};

class Texture : public Driver {
 protected:
  // The kernels, compiled once per process (NVRTC is the slow part); loaded per test.
  static const std::string& image() {
    static const std::string img = [] {
      std::string out, log;
      if (!conformance::compile_ptx(kKernels, "texture.cu", out, log)) {
        ADD_FAILURE() << log;
        out.clear();
      }
      return out;
    }();
    return img;
  }
  void SetUp() override {
    Driver::SetUp();
    if (::testing::Test::IsSkipped() || conformance::backend() == "hip") return;
    ASSERT_FALSE(image().empty()) << "the test kernels did not compile";
    ASSERT_OK(cuModuleLoadData(&module, image().data()));
  }
  void TearDown() override {
    for (CUtexObject t : texs) {
      EXPECT_OK(cuTexObjectDestroy(t));
    }
    for (CUsurfObject s : surfs) {
      EXPECT_OK(cuSurfObjectDestroy(s));
    }
    for (CUarray a : arrays) {
      EXPECT_OK(cuArrayDestroy(a));
    }
    for (CUmipmappedArray m : mipmaps) {
      EXPECT_OK(cuMipmappedArrayDestroy(m));
    }
    for (CUdeviceptr p : bufs) {
      EXPECT_OK(cuMemFree_v2(p));
    }
    if (module) {
      EXPECT_OK(cuModuleUnload(module));
    }
    Driver::TearDown();
  }

  CUdeviceptr alloc(size_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_OK(cuMemAlloc_v2(&p, bytes));
    bufs.push_back(p);
    return p;
  }
  template <class T>
  CUdeviceptr upload(const std::vector<T>& v) {
    const CUdeviceptr p = alloc(v.size() * sizeof(T) + 1);
    EXPECT_OK(cuMemcpyHtoD_v2(p, v.data(), v.size() * sizeof(T)));
    return p;
  }
  template <class T>
  std::vector<T> download(CUdeviceptr p, size_t n) {
    std::vector<T> v(n);
    EXPECT_OK(cuMemcpyDtoH_v2(v.data(), p, n * sizeof(T)));
    return v;
  }
  CUtexObject make_tex(const CUDA_RESOURCE_DESC& r, const CUDA_TEXTURE_DESC& t,
                       const CUDA_RESOURCE_VIEW_DESC* view = nullptr) {
    CUtexObject o = 0;
    EXPECT_OK(cuTexObjectCreate(&o, &r, &t, view));
    if (o) texs.push_back(o);
    return o;
  }
  // Launches `name` over n threads with the given argument pointers.
  CUresult launch(const char* name, unsigned n, std::vector<void*> args, unsigned grid_y = 1) {
    CUfunction f = nullptr;
    if (CUresult r = cuModuleGetFunction(&f, module, name)) return r;
    const unsigned block = 64;
    if (CUresult r = cuLaunchKernel(f, (n + block - 1) / block, grid_y, 1, block, 1, 1, 0, nullptr,
                                    args.data(), nullptr))
      return r;
    return cuCtxSynchronize();
  }
  // A pitch2D float texture over `img` (pitch: a multiple of the pitch alignment).
  CUDA_RESOURCE_DESC pitch2d(const Image2D& img, CUarray_format format = CU_AD_FORMAT_FLOAT,
                             const void* data = nullptr, size_t elem = 4) {
    int align = 32;
    EXPECT_OK(cuDeviceGetAttribute(&align, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, dev));
    const size_t pitch = (img.w * elem + align - 1) / align * align;
    const CUdeviceptr p = alloc(pitch * img.h);
    CUDA_MEMCPY2D c{};
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = data ? data : img.v.data();
    c.srcPitch = img.w * elem;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = p;
    c.dstPitch = pitch;
    c.WidthInBytes = img.w * elem;
    c.Height = img.h;
    EXPECT_OK(cuMemcpy2D_v2(&c));
    CUDA_RESOURCE_DESC r{};
    r.resType = CU_RESOURCE_TYPE_PITCH2D;
    r.res.pitch2D.devPtr = p;
    r.res.pitch2D.format = format;
    r.res.pitch2D.numChannels = 1;
    r.res.pitch2D.width = img.w;
    r.res.pitch2D.height = img.h;
    r.res.pitch2D.pitchInBytes = pitch;
    return r;
  }
  // An array, or null after GTEST_SKIP while the backend has none.
  CUarray make_array(const CUDA_ARRAY3D_DESCRIPTOR& d) {
    CUarray a = nullptr;
    const CUresult r = cuArray3DCreate_v2(&a, &d);
    if (r == CUDA_ERROR_NOT_SUPPORTED) return nullptr;
    EXPECT_OK(r);
    if (a) arrays.push_back(a);
    return a;
  }
  // Copies host rows into slice z of array a (w * elem bytes per row, h rows, d slices).
  void fill_array(CUarray a, const void* src, size_t row_bytes, size_t h, size_t d) {
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
    EXPECT_OK(cuMemcpy3D_v2(&c));
  }

  CUmodule module = nullptr;
  std::vector<CUdeviceptr> bufs;
  std::vector<CUtexObject> texs;
  std::vector<CUsurfObject> surfs;
  std::vector<CUarray> arrays;
  std::vector<CUmipmappedArray> mipmaps;
};

#define SKIP_WITHOUT_ARRAYS(a) \
  if (!(a)) GTEST_SKIP() << "the backend has no CUDA arrays yet (cuArray3DCreate: NOT_SUPPORTED)"

CUDA_RESOURCE_DESC linear(CUdeviceptr p, CUarray_format f, unsigned ch, size_t bytes) {
  CUDA_RESOURCE_DESC r{};
  r.resType = CU_RESOURCE_TYPE_LINEAR;
  r.res.linear.devPtr = p;
  r.res.linear.format = f;
  r.res.linear.numChannels = ch;
  r.res.linear.sizeInBytes = bytes;
  return r;
}

// Sample points (x, y) pairs at fixed fractions of texels [x0, x1) x [y0, y1): exact binary
// fractions, clear of texel edges (where a GPU's fixed-point coordinates may round either way).
std::vector<float> grid(int x0, int x1, int y0, int y1) {
  std::vector<float> c;
  for (int y = y0; y < y1; ++y)
    for (float fy : {0.375f, 0.8125f})
      for (int x = x0; x < x1; ++x)
        for (float fx : {0.25f, 0.625f}) c.insert(c.end(), {x + fx, y + fy});
  return c;
}

Image2D ramp(int w, int h) {
  Image2D img{w, h, {}};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      img.v.push_back(static_cast<float>((x * 7 + y * 13) % 23) - 5.0f + 0.25f * x);
  return img;
}

TEST_F(Texture, ObjectValidationAndDescriptors) {
  const CUdeviceptr p = alloc(4096);
  CUDA_RESOURCE_DESC r = linear(p, CU_AD_FORMAT_FLOAT, 1, 4096);
  CUDA_TEXTURE_DESC t{};
  t.flags = CU_TRSF_READ_AS_INTEGER;
  t.borderColor[0] = 0.5f;
  CUtexObject o = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuTexObjectCreate(nullptr, &r, &t, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuTexObjectCreate(&o, nullptr, &t, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuTexObjectCreate(&o, &r, nullptr, nullptr));
  // devPtr aligned below the texture alignment.
  CUDA_RESOURCE_DESC bad = linear(p + 4, CU_AD_FORMAT_FLOAT, 1, 1024);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuTexObjectCreate(&o, &bad, &t, nullptr));
  bad = linear(p, CU_AD_FORMAT_FLOAT, 3, 1024);  // 3 channels
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuTexObjectCreate(&o, &bad, &t, nullptr));
  bad = r;
  bad.resType = static_cast<CUresourcetype>(0x7f);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuTexObjectCreate(&o, &bad, &t, nullptr));
  // A resource view is for arrays only.
  CUDA_RESOURCE_VIEW_DESC view{};
  view.format = CU_RES_VIEW_FORMAT_FLOAT_1X32;
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_VALUE,
                    cuTexObjectCreate(&o, &r, &t, &view));  // NVIDIA 580 accepts it
  // pitch2D: the pitch must be a multiple of CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT.
  int pitch_align = 0;
  ASSERT_OK(cuDeviceGetAttribute(&pitch_align, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, dev));
  CUDA_RESOURCE_DESC p2{};
  p2.resType = CU_RESOURCE_TYPE_PITCH2D;
  p2.res.pitch2D.devPtr = p;
  p2.res.pitch2D.format = CU_AD_FORMAT_FLOAT;
  p2.res.pitch2D.numChannels = 1;
  p2.res.pitch2D.width = 4;
  p2.res.pitch2D.height = 4;
  p2.res.pitch2D.pitchInBytes = static_cast<size_t>(pitch_align) + 4;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuTexObjectCreate(&o, &p2, &t, nullptr));
  p2.res.pitch2D.pitchInBytes = static_cast<size_t>(pitch_align) * 2;
  p2.res.pitch2D.width = pitch_align;  // 4 * width bytes exceed the pitch
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_VALUE,
                    cuTexObjectCreate(&o, &p2, &t, nullptr));  // NVIDIA 580 accepts it

  ASSERT_OK(cuTexObjectCreate(&o, &r, &t, nullptr));
  CUDA_RESOURCE_DESC got_r{};
  ASSERT_OK(cuTexObjectGetResourceDesc(&got_r, o));
  EXPECT_EQ(CU_RESOURCE_TYPE_LINEAR, got_r.resType);
  EXPECT_EQ(p, got_r.res.linear.devPtr);
  EXPECT_EQ(CU_AD_FORMAT_FLOAT, got_r.res.linear.format);
  EXPECT_EQ(1u, got_r.res.linear.numChannels);
  EXPECT_EQ(4096u, got_r.res.linear.sizeInBytes);
  CUDA_TEXTURE_DESC got_t{};
  ASSERT_OK(cuTexObjectGetTextureDesc(&got_t, o));
  EXPECT_EQ(CU_TR_FILTER_MODE_POINT, got_t.filterMode);
  EXPECT_TRUE(got_t.flags & CU_TRSF_READ_AS_INTEGER);
  // No view was given.
  CUDA_RESOURCE_VIEW_DESC got_v{};
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_VALUE,
                    cuTexObjectGetResourceViewDesc(&got_v, o));  // NVIDIA 580 accepts it
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuTexObjectGetResourceDesc(nullptr, o));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuTexObjectGetTextureDesc(nullptr, o));
  EXPECT_OK(cuTexObjectDestroy(o));
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_VALUE, cuTexObjectGetResourceDesc(&got_r, o));

  // Surfaces need arrays.
  CUsurfObject s = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuSurfObjectCreate(&s, &r));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuSurfObjectCreate(nullptr, &r));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuSurfObjectCreate(&s, nullptr));
  CUDA_RESOURCE_DESC got_s{};
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuSurfObjectGetResourceDesc(nullptr, s));
  (void)got_s;

  size_t max_width = 0;
  EXPECT_OK(cuDeviceGetTexture1DLinearMaxWidth(&max_width, CU_AD_FORMAT_FLOAT, 4, dev));
  EXPECT_GT(max_width, 1u << 20);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuDeviceGetTexture1DLinearMaxWidth(nullptr, CU_AD_FORMAT_FLOAT, 4, dev));
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE,
            cuDeviceGetTexture1DLinearMaxWidth(&max_width, CU_AD_FORMAT_FLOAT, 4, -1));
}

TEST_F(Texture, Fetch1DFromLinearMemory) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kNoImages);
  std::vector<float> v(100);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.5f * static_cast<float>(i) - 7.0f;
  const CUdeviceptr p = upload(v);
  CUDA_TEXTURE_DESC t{};
  const CUtexObject o = make_tex(linear(p, CU_AD_FORMAT_FLOAT, 1, v.size() * 4), t);
  ASSERT_NE(0u, o);
  const CUdeviceptr out = alloc(110 * 4);
  int n = 110, offset = -5;
  ASSERT_OK(launch("fetch_f", n, {(void*)&o, (void*)&out, &n, &offset}));
  const auto got = download<float>(out, n);
  for (int i = 0; i < n; ++i) {
    const int x = i + offset;
    // Outside the resource tex1Dfetch returns zero.
    const float want = x >= 0 && x < 100 ? v[x] : 0.0f;
    EXPECT_EQ(want, got[i]) << "x=" << x;
  }
}

TEST_F(Texture, ReadModesOfIntegerFormats) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kNoImages);
  constexpr int n = 64;
  std::vector<unsigned char> u8(n * 4);
  for (size_t i = 0; i < u8.size(); ++i) u8[i] = static_cast<unsigned char>(i * 37 + 3);
  std::vector<short> s16(n * 2);
  for (size_t i = 0; i < s16.size(); ++i)
    s16[i] = static_cast<short>(i % 5 == 0 ? -32768 : static_cast<int>(i * 1031) - 30000);
  const CUdeviceptr pu = upload(u8), ps = upload(s16);
  CUDA_TEXTURE_DESC as_int{};
  as_int.flags = CU_TRSF_READ_AS_INTEGER;
  CUDA_TEXTURE_DESC as_float{};
  const CUtexObject tu_int = make_tex(linear(pu, CU_AD_FORMAT_UNSIGNED_INT8, 4, u8.size()), as_int);
  const CUtexObject tu_f = make_tex(linear(pu, CU_AD_FORMAT_UNSIGNED_INT8, 4, u8.size()), as_float);
  const CUtexObject ts_int =
      make_tex(linear(ps, CU_AD_FORMAT_SIGNED_INT16, 2, s16.size() * 2), as_int);
  const CUtexObject ts_f =
      make_tex(linear(ps, CU_AD_FORMAT_SIGNED_INT16, 2, s16.size() * 2), as_float);
  const CUdeviceptr out = alloc(n * 16);
  int count = n;
  ASSERT_OK(launch("fetch_uc4", n, {(void*)&tu_int, (void*)&out, &count}));
  EXPECT_EQ(u8, download<unsigned char>(out, n * 4));
  ASSERT_OK(launch("fetch_f4", n, {(void*)&tu_f, (void*)&out, &count}));
  auto f = download<float>(out, n * 4);
  for (int i = 0; i < n * 4; ++i) EXPECT_FLOAT_EQ(u8[i] / 255.0f, f[i]) << i;
  ASSERT_OK(launch("fetch_s2", n, {(void*)&ts_int, (void*)&out, &count}));
  EXPECT_EQ(s16, download<short>(out, n * 2));
  ASSERT_OK(launch("fetch_f2", n, {(void*)&ts_f, (void*)&out, &count}));
  f = download<float>(out, n * 2);
  for (int i = 0; i < n * 2; ++i) EXPECT_FLOAT_EQ(std::max(s16[i] / 32767.0f, -1.0f), f[i]) << i;
}

TEST_F(Texture, HalfFormatReadsAsFloat) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kNoImages);
  // Binary16 values exactly representable: 1.5, -2.25, 0.099975586 (0x2e66), 65504.
  const std::vector<unsigned short> h = {0x3e00, 0xc080, 0x2e66, 0x7bff};
  const std::vector<float> want = {1.5f, -2.25f, 0.0999755859375f, 65504.0f};
  const CUdeviceptr p = upload(h);
  CUDA_TEXTURE_DESC t{};
  const CUtexObject o = make_tex(linear(p, CU_AD_FORMAT_HALF, 1, h.size() * 2), t);
  const CUdeviceptr out = alloc(16);
  int n = 4, offset = 0;
  ASSERT_OK(launch("fetch_f", n, {(void*)&o, (void*)&out, &n, &offset}));
  EXPECT_EQ(want, download<float>(out, 4));
}

// Point sampling of a pitch2D texture: unnormalised coordinates with clamp and border,
// normalised ones with wrap and mirror. Coordinates stay clear of texel edges.
TEST_F(Texture, Pitch2DPointSamplingAndAddressModes) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kNoImages);
  const Image2D img = ramp(16, 8);
  const CUDA_RESOURCE_DESC r = pitch2d(img);
  const std::vector<float> coords = grid(-4, 20, -3, 11);
  const int n = static_cast<int>(coords.size() / 2);
  const CUdeviceptr c = upload(coords);
  const CUdeviceptr out = alloc(n * 4);
  int count = n;
  for (CUaddress_mode m : {CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_BORDER}) {
    CUDA_TEXTURE_DESC t{};
    t.addressMode[0] = t.addressMode[1] = m;
    const CUtexObject o = make_tex(r, t);
    ASSERT_OK(launch("tex2d", n, {(void*)&o, (void*)&c, (void*)&out, &count}));
    const auto got = download<float>(out, n);
    for (int i = 0; i < n; ++i)
      EXPECT_EQ(img.point(coords[2 * i], coords[2 * i + 1], false, m), got[i])
          << "mode " << m << " at (" << coords[2 * i] << ", " << coords[2 * i + 1] << ")";
  }
  // Normalised coordinates: the same points divided by the size.
  std::vector<float> ncoords(coords.size());
  for (size_t i = 0; i < coords.size(); i += 2) {
    ncoords[i] = coords[i] / 16.0f;
    ncoords[i + 1] = coords[i + 1] / 8.0f;
  }
  const CUdeviceptr nc = upload(ncoords);
  for (CUaddress_mode m :
       {CU_TR_ADDRESS_MODE_WRAP, CU_TR_ADDRESS_MODE_MIRROR, CU_TR_ADDRESS_MODE_CLAMP}) {
    CUDA_TEXTURE_DESC t{};
    t.addressMode[0] = t.addressMode[1] = m;
    t.flags = CU_TRSF_NORMALIZED_COORDINATES;
    const CUtexObject o = make_tex(r, t);
    ASSERT_OK(launch("tex2d", n, {(void*)&o, (void*)&nc, (void*)&out, &count}));
    const auto got = download<float>(out, n);
    for (int i = 0; i < n; ++i)
      EXPECT_EQ(img.point(ncoords[2 * i], ncoords[2 * i + 1], true, m), got[i])
          << "mode " << m << " at (" << coords[2 * i] << ", " << coords[2 * i + 1] << ")";
  }
}

// Border colour: what point sampling outside the resource returns in border mode.
TEST_F(Texture, BorderColour) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kNoImages);
  const Image2D img = ramp(8, 8);
  const CUDA_RESOURCE_DESC r = pitch2d(img);
  CUDA_TEXTURE_DESC t{};
  t.addressMode[0] = t.addressMode[1] = CU_TR_ADDRESS_MODE_BORDER;
  t.borderColor[0] = 3.5f;
  const CUtexObject o = make_tex(r, t);
  const std::vector<float> coords = {-0.5f, 2.5f, 8.5f, 2.5f, 2.5f, 2.5f};
  const CUdeviceptr c = upload(coords);
  const CUdeviceptr out = alloc(12);
  int n = 3;
  ASSERT_OK(launch("tex2d", n, {(void*)&o, (void*)&c, (void*)&out, &n}));
  const auto got = download<float>(out, 3);
  EXPECT_EQ(3.5f, got[0]);
  EXPECT_EQ(3.5f, got[1]);
  EXPECT_EQ(img.point(2.5f, 2.5f, false, CU_TR_ADDRESS_MODE_BORDER), got[2]);
}

// Linear filtering: within the error of 8-bit fractional weights.
TEST_F(Texture, Pitch2DLinearFiltering) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kNoImages);
  const Image2D img = ramp(12, 10);
  const CUDA_RESOURCE_DESC r = pitch2d(img);
  std::vector<float> coords;
  for (float y = -1.1f; y < 11.5f; y += 0.37f)
    for (float x = -1.3f; x < 13.5f; x += 0.41f) coords.insert(coords.end(), {x, y});
  const int n = static_cast<int>(coords.size() / 2);
  const CUdeviceptr c = upload(coords);
  const CUdeviceptr out = alloc(n * 4);
  int count = n;
  for (CUaddress_mode m : {CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_BORDER}) {
    CUDA_TEXTURE_DESC t{};
    t.addressMode[0] = t.addressMode[1] = m;
    t.filterMode = CU_TR_FILTER_MODE_LINEAR;
    const CUtexObject o = make_tex(r, t);
    ASSERT_OK(launch("tex2d", n, {(void*)&o, (void*)&c, (void*)&out, &count}));
    const auto got = download<float>(out, n);
    for (int i = 0; i < n; ++i) {
      float spread = 0;
      const float want = img.linear(coords[2 * i], coords[2 * i + 1], false, m, spread);
      // Each of the two weights is off by at most 1/256.
      EXPECT_NEAR(want, got[i], 2.0f * spread / 256.0f + 1e-5f)
          << "mode " << m << " at (" << coords[2 * i] << ", " << coords[2 * i + 1] << ")";
    }
  }
}

// Linear filtering of 8-bit data read as normalised floats, and sRGB conversion.
TEST_F(Texture, NormalizedFloatLinearAndSrgb) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kNoImages);
  Image2D img{8, 4, {}};
  std::vector<unsigned char> bytes;
  for (int i = 0; i < 32; ++i) {
    bytes.push_back(static_cast<unsigned char>((i * 53 + 11) % 256));
    img.v.push_back(bytes.back() / 255.0f);
  }
  const CUDA_RESOURCE_DESC r = pitch2d(img, CU_AD_FORMAT_UNSIGNED_INT8, bytes.data(), 1);
  const std::vector<float> coords = grid(0, 8, 0, 4);
  const int n = static_cast<int>(coords.size() / 2);
  const CUdeviceptr c = upload(coords);
  const CUdeviceptr out = alloc(n * 4);
  int count = n;
  CUDA_TEXTURE_DESC t{};
  t.addressMode[0] = t.addressMode[1] = CU_TR_ADDRESS_MODE_CLAMP;
  t.filterMode = CU_TR_FILTER_MODE_LINEAR;
  const CUtexObject o = make_tex(r, t);
  ASSERT_OK(launch("tex2d", n, {(void*)&o, (void*)&c, (void*)&out, &count}));
  auto got = download<float>(out, n);
  for (int i = 0; i < n; ++i) {
    float spread = 0;
    const float want =
        img.linear(coords[2 * i], coords[2 * i + 1], false, CU_TR_ADDRESS_MODE_CLAMP, spread);
    EXPECT_NEAR(want, got[i], 2.0f * spread / 256.0f + 1e-5f) << i;
  }
  // sRGB: point samples of the red channel through the sRGB curve.
  CUDA_TEXTURE_DESC ts{};
  ts.flags = CU_TRSF_SRGB;
  const CUtexObject os = make_tex(r, ts);
  ASSERT_OK(launch("tex2d", n, {(void*)&os, (void*)&c, (void*)&out, &count}));
  got = download<float>(out, n);
  for (int i = 0; i < n; ++i) {
    const float v = img.point(coords[2 * i], coords[2 * i + 1], false, CU_TR_ADDRESS_MODE_CLAMP);
    const float want = v <= 0.04045f ? v / 12.92f : std::pow((v + 0.055f) / 1.055f, 2.4f);
    // NVIDIA's hardware converts with 8-bit precision (H200: 0.80859375 = 207/256 where the
    // curve gives 0.80695); the mock computes the curve exactly.
    EXPECT_NEAR(want, got[i], 1.0f / 256.0f) << i;
  }
}

// --- array-backed resources (need helper arrays: skipped while cuArray3DCreate is missing) ---

TEST_F(Texture, LayeredArraySampling) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kNoImages);
  CUDA_ARRAY3D_DESCRIPTOR d{};
  d.Width = 8;
  d.Height = 4;
  d.Depth = 3;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 1;
  d.Flags = CUDA_ARRAY3D_LAYERED;
  const CUarray a = make_array(d);
  SKIP_WITHOUT_ARRAYS(a);
  std::vector<Image2D> layers;
  std::vector<float> all;
  for (int l = 0; l < 3; ++l) {
    Image2D img = ramp(8, 4);
    for (float& v : img.v) v += 100.0f * l;
    all.insert(all.end(), img.v.begin(), img.v.end());
    layers.push_back(img);
  }
  fill_array(a, all.data(), 8 * 4, 4, 3);
  CUDA_RESOURCE_DESC r{};
  r.resType = CU_RESOURCE_TYPE_ARRAY;
  r.res.array.hArray = a;
  CUDA_TEXTURE_DESC t{};
  t.addressMode[0] = t.addressMode[1] = CU_TR_ADDRESS_MODE_CLAMP;
  const CUtexObject o = make_tex(r, t);
  const std::vector<float> coords = grid(-1, 9, -1, 5);
  const int n = static_cast<int>(coords.size() / 2);
  const CUdeviceptr c = upload(coords);
  const CUdeviceptr out = alloc(n * 4);
  int count = n;
  for (int layer = 0; layer < 3; ++layer) {
    ASSERT_OK(launch("tex2d_layered", n, {(void*)&o, (void*)&c, (void*)&out, &count, &layer}));
    const auto got = download<float>(out, n);
    for (int i = 0; i < n; ++i)
      EXPECT_EQ(
          layers[layer].point(coords[2 * i], coords[2 * i + 1], false, CU_TR_ADDRESS_MODE_CLAMP),
          got[i])
          << "layer " << layer << " i " << i;
  }
  // A view of layer 2 alone: its layer 0 is the array's layer 2. NVIDIA's driver (580) refuses
  // this view (CUDA_ERROR_INVALID_VALUE) where the mock accepts it: a known difference
  // (docs/backends/mock.md) until NVIDIA's rule for layer views is established.
  if (::conformance::backend() == "cuda") return;
  CUDA_RESOURCE_VIEW_DESC view{};
  view.format = CU_RES_VIEW_FORMAT_FLOAT_1X32;
  view.width = 8;
  view.height = 4;
  view.depth = 1;
  view.firstLayer = view.lastLayer = 2;
  const CUtexObject ov = make_tex(r, t, &view);
  int zero = 0;
  ASSERT_OK(launch("tex2d_layered", n, {(void*)&ov, (void*)&c, (void*)&out, &count, &zero}));
  const auto got = download<float>(out, n);
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(layers[2].point(coords[2 * i], coords[2 * i + 1], false, CU_TR_ADDRESS_MODE_CLAMP),
              got[i]);
  CUDA_RESOURCE_VIEW_DESC got_v{};
  ASSERT_OK(cuTexObjectGetResourceViewDesc(&got_v, ov));
  EXPECT_EQ(2u, got_v.firstLayer);
  EXPECT_EQ(2u, got_v.lastLayer);
  CUDA_RESOURCE_DESC got_r{};
  ASSERT_OK(cuTexObjectGetResourceDesc(&got_r, ov));
  EXPECT_EQ(a, got_r.res.array.hArray);
  // A view beyond the layers.
  view.firstLayer = view.lastLayer = 3;
  CUtexObject bad = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuTexObjectCreate(&bad, &r, &t, &view));
}

TEST_F(Texture, ThreeDLinearFiltering) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kNoImages);
  CUDA_ARRAY3D_DESCRIPTOR d{};
  d.Width = 4;
  d.Height = 4;
  d.Depth = 4;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 1;
  const CUarray a = make_array(d);
  SKIP_WITHOUT_ARRAYS(a);
  std::vector<float> v(64);
  for (int i = 0; i < 64; ++i) v[i] = static_cast<float>((i * 29) % 17) - 3.0f;
  fill_array(a, v.data(), 16, 4, 4);
  CUDA_RESOURCE_DESC r{};
  r.resType = CU_RESOURCE_TYPE_ARRAY;
  r.res.array.hArray = a;
  CUDA_TEXTURE_DESC t{};
  t.addressMode[0] = t.addressMode[1] = t.addressMode[2] = CU_TR_ADDRESS_MODE_CLAMP;
  t.filterMode = CU_TR_FILTER_MODE_LINEAR;
  const CUtexObject o = make_tex(r, t);
  std::vector<float> coords;
  for (float z = 0.1f; z < 4.2f; z += 0.83f)
    for (float y = 0.2f; y < 4.2f; y += 0.71f)
      for (float x = -0.3f; x < 4.5f; x += 0.67f) coords.insert(coords.end(), {x, y, z});
  const int n = static_cast<int>(coords.size() / 3);
  const CUdeviceptr c = upload(coords);
  const CUdeviceptr out = alloc(n * 4);
  int count = n;
  ASSERT_OK(launch("tex3d", n, {(void*)&o, (void*)&c, (void*)&out, &count}));
  const auto got = download<float>(out, n);
  auto at = [&](long long x, long long y, long long z) {
    x = std::clamp(x, 0LL, 3LL);
    y = std::clamp(y, 0LL, 3LL);
    z = std::clamp(z, 0LL, 3LL);
    return v[static_cast<size_t>(z * 16 + y * 4 + x)];
  };
  for (int i = 0; i < n; ++i) {
    const float xb = coords[3 * i] - 0.5f, yb = coords[3 * i + 1] - 0.5f,
                zb = coords[3 * i + 2] - 0.5f;
    const auto x0 = static_cast<long long>(std::floor(xb)),
               y0 = static_cast<long long>(std::floor(yb)),
               z0 = static_cast<long long>(std::floor(zb));
    const float fa = xb - std::floor(xb), fb = yb - std::floor(yb), fg = zb - std::floor(zb);
    float want = 0, lo = 1e9f, hi = -1e9f;
    for (int dz = 0; dz < 2; ++dz)
      for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx) {
          const float tv = at(x0 + dx, y0 + dy, z0 + dz);
          lo = std::min(lo, tv);
          hi = std::max(hi, tv);
          want += (dx ? fa : 1 - fa) * (dy ? fb : 1 - fb) * (dz ? fg : 1 - fg) * tv;
        }
    EXPECT_NEAR(want, got[i], 3.0f * (hi - lo) / 256.0f + 1e-5f) << i;
  }
}

TEST_F(Texture, CubemapFaceSelection) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kNoImages);
  CUDA_ARRAY3D_DESCRIPTOR d{};
  d.Width = 4;
  d.Height = 4;
  d.Depth = 6;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 1;
  d.Flags = CUDA_ARRAY3D_CUBEMAP;
  const CUarray a = make_array(d);
  SKIP_WITHOUT_ARRAYS(a);
  std::vector<float> v(96);
  for (int i = 0; i < 96; ++i) v[i] = static_cast<float>(i);  // face * 16 + t * 4 + s
  fill_array(a, v.data(), 16, 4, 6);
  CUDA_RESOURCE_DESC r{};
  r.resType = CU_RESOURCE_TYPE_ARRAY;
  r.res.array.hArray = a;
  CUDA_TEXTURE_DESC t{};
  t.flags = CU_TRSF_NORMALIZED_COORDINATES;
  const CUtexObject o = make_tex(r, t);
  // Directions off every face's centre, away from texel edges.
  const std::vector<float> dirs = {1.0f,  0.3f,  -0.6f, -1.0f, -0.3f, 0.6f, 0.1f, 1.0f,  0.55f,
                                   0.35f, -1.0f, -0.2f, -0.4f, 0.15f, 1.0f, 0.6f, -0.3f, -1.0f};
  const int n = 6;
  const CUdeviceptr c = upload(dirs);
  const CUdeviceptr out = alloc(n * 4);
  int count = n;
  ASSERT_OK(launch("cube", n, {(void*)&o, (void*)&c, (void*)&out, &count}));
  const auto got = download<float>(out, n);
  for (int i = 0; i < n; ++i) {
    const float x = dirs[3 * i], y = dirs[3 * i + 1], z = dirs[3 * i + 2];
    const float ax = std::fabs(x), ay = std::fabs(y), az = std::fabs(z);
    int face;
    float sc, tc, m;
    if (ax >= ay && ax >= az) {
      face = x > 0 ? 0 : 1, sc = x > 0 ? -z : z, tc = -y, m = ax;
    } else if (ay >= az) {
      face = y > 0 ? 2 : 3, sc = x, tc = y > 0 ? z : -z, m = ay;
    } else {
      face = z > 0 ? 4 : 5, sc = z > 0 ? x : -x, tc = -y, m = az;
    }
    const int s = std::clamp(static_cast<int>(std::floor((sc / m + 1) / 2 * 4)), 0, 3);
    const int tt = std::clamp(static_cast<int>(std::floor((tc / m + 1) / 2 * 4)), 0, 3);
    EXPECT_EQ(static_cast<float>(face * 16 + tt * 4 + s), got[i]) << "direction " << i;
  }
}

TEST_F(Texture, Gather) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kNoImages);
  CUDA_ARRAY3D_DESCRIPTOR d{};
  d.Width = 6;
  d.Height = 5;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 2;
  d.Flags = CUDA_ARRAY3D_TEXTURE_GATHER;
  const CUarray a = make_array(d);
  SKIP_WITHOUT_ARRAYS(a);
  std::vector<float> v(60);
  for (int i = 0; i < 60; ++i) v[i] = static_cast<float>(i);  // (y * 6 + x) * 2 + channel
  fill_array(a, v.data(), 6 * 8, 5, 1);
  CUDA_RESOURCE_DESC r{};
  r.resType = CU_RESOURCE_TYPE_ARRAY;
  r.res.array.hArray = a;
  CUDA_TEXTURE_DESC t{};
  t.addressMode[0] = t.addressMode[1] = CU_TR_ADDRESS_MODE_CLAMP;
  const CUtexObject o = make_tex(r, t);
  const std::vector<float> coords = {2.3f, 1.8f, 0.2f, 0.1f, 5.9f, 4.7f};
  const int n = 3;
  const CUdeviceptr c = upload(coords);
  const CUdeviceptr out = alloc(n * 16);
  int count = n;
  ASSERT_OK(launch("gather", n, {(void*)&o, (void*)&c, (void*)&out, &count}));
  const auto got = download<float>(out, n * 4);
  auto at = [&](long long x, long long y) {
    x = std::clamp(x, 0LL, 5LL);
    y = std::clamp(y, 0LL, 4LL);
    return v[static_cast<size_t>((y * 6 + x) * 2 + 1)];  // component 1
  };
  for (int i = 0; i < n; ++i) {
    const auto x0 = static_cast<long long>(std::floor(coords[2 * i] - 0.5f));
    const auto y0 = static_cast<long long>(std::floor(coords[2 * i + 1] - 0.5f));
    // Counter-clockwise from the lower left (tld4).
    EXPECT_EQ(at(x0, y0 + 1), got[4 * i + 0]) << i;
    EXPECT_EQ(at(x0 + 1, y0 + 1), got[4 * i + 1]) << i;
    EXPECT_EQ(at(x0 + 1, y0), got[4 * i + 2]) << i;
    EXPECT_EQ(at(x0, y0), got[4 * i + 3]) << i;
  }
}

TEST_F(Texture, MipmapLevelSelection) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kNoImages);
  CUDA_ARRAY3D_DESCRIPTOR d{};
  d.Width = 8;
  d.Height = 8;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 1;
  CUmipmappedArray m = nullptr;
  const CUresult cr = cuMipmappedArrayCreate(&m, &d, 4);
  if (cr == CUDA_ERROR_NOT_SUPPORTED) GTEST_SKIP() << "no mipmapped arrays on this backend yet";
  ASSERT_OK(cr);
  mipmaps.push_back(m);
  // Level l is constant 10 * (l + 1).
  for (unsigned l = 0; l < 4; ++l) {
    CUarray level = nullptr;
    ASSERT_OK(cuMipmappedArrayGetLevel(&level, m, l));
    const unsigned w = 8u >> l;
    std::vector<float> v(w * w, 10.0f * (l + 1));
    fill_array(level, v.data(), w * 4, w, 1);
  }
  CUDA_RESOURCE_DESC r{};
  r.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
  r.res.mipmap.hMipmappedArray = m;
  CUDA_TEXTURE_DESC t{};
  t.flags = CU_TRSF_NORMALIZED_COORDINATES;
  t.filterMode = CU_TR_FILTER_MODE_POINT;
  t.mipmapFilterMode = CU_TR_FILTER_MODE_LINEAR;
  t.maxMipmapLevelClamp = 3.0f;
  const CUtexObject o = make_tex(r, t);
  const std::vector<float> coords = {0.4f, 0.6f};
  const CUdeviceptr c = upload(coords);
  const CUdeviceptr out = alloc(4);
  int count = 1;
  for (float lod : {0.0f, 1.0f, 2.0f, 3.0f, 7.0f, 1.5f, -2.0f}) {
    ASSERT_OK(launch("tex2d_lod", 1, {(void*)&o, (void*)&c, (void*)&out, &count, &lod}));
    const float got = download<float>(out, 1)[0];
    const float l = std::clamp(lod, 0.0f, 3.0f);
    const float want = 10.0f * (1 + l);  // trilinear between the two levels
    EXPECT_NEAR(want, got, 10.0f / 256.0f + 1e-4f) << "lod " << lod;
  }
}

TEST_F(Texture, SurfaceReadWriteAndBoundaries) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kNoImages);
  CUDA_ARRAY3D_DESCRIPTOR d{};
  d.Width = 16;
  d.Height = 4;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 1;
  d.Flags = CUDA_ARRAY3D_SURFACE_LDST;
  const CUarray a = make_array(d);
  SKIP_WITHOUT_ARRAYS(a);
  std::vector<float> v(64);
  for (int i = 0; i < 64; ++i) v[i] = static_cast<float>(i) - 10.0f;
  fill_array(a, v.data(), 64, 4, 1);
  CUDA_RESOURCE_DESC r{};
  r.resType = CU_RESOURCE_TYPE_ARRAY;
  r.res.array.hArray = a;
  CUsurfObject s = 0;
  ASSERT_OK(cuSurfObjectCreate(&s, &r));
  surfs.push_back(s);
  CUDA_RESOURCE_DESC got_r{};
  ASSERT_OK(cuSurfObjectGetResourceDesc(&got_r, s));
  EXPECT_EQ(CU_RESOURCE_TYPE_ARRAY, got_r.resType);
  EXPECT_EQ(a, got_r.res.array.hArray);
  int w = 16, h = 4;
  ASSERT_OK(launch("surf_scale", 16, {(void*)&s, &w, &h}, 4));
  std::vector<float> back(64);
  CUDA_MEMCPY3D c{};
  c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  c.srcArray = a;
  c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.dstHost = back.data();
  c.dstPitch = 64;
  c.dstHeight = 4;
  c.WidthInBytes = 64;
  c.Height = 4;
  c.Depth = 1;
  ASSERT_OK(cuMemcpy3D_v2(&c));
  for (int i = 0; i < 64; ++i) EXPECT_EQ(v[i] * 2.0f + 1.0f, back[i]) << i;
  const CUdeviceptr out = alloc(16);
  ASSERT_OK(launch("surf_edges", 1, {(void*)&s, (void*)&out, &w}));
  const auto edges = download<float>(out, 3);
  EXPECT_EQ(0.0f, edges[0]);      // zero mode
  EXPECT_EQ(back[15], edges[1]);  // clamped to the last element of row 0
  EXPECT_EQ(back[0], edges[2]);   // clamped to the first
  // A surface over an array without CUDA_ARRAY3D_SURFACE_LDST.
  d.Flags = 0;
  const CUarray plain = make_array(d);
  r.res.array.hArray = plain;
  CUsurfObject bad = 0;
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_VALUE,
                    cuSurfObjectCreate(&bad, &r));  // NVIDIA 580 accepts it
}

TEST_F(Texture, SurfaceTrapFailsTheLaunch) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kNoImages);
  // On NVIDIA's driver the trap's sticky error spoils every later context of the process, and
  // so every later case of the suite: this one runs where contexts fail alone.
  if (::conformance::backend() == "cuda")
    GTEST_SKIP() << "a trapping launch poisons NVIDIA's whole process";
  CUDA_ARRAY3D_DESCRIPTOR d{};
  d.Width = 16;
  d.Height = 1;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 1;
  d.Flags = CUDA_ARRAY3D_SURFACE_LDST;
  const CUarray a = make_array(d);
  SKIP_WITHOUT_ARRAYS(a);
  CUDA_RESOURCE_DESC r{};
  r.resType = CU_RESOURCE_TYPE_ARRAY;
  r.res.array.hArray = a;
  CUsurfObject s = 0;
  ASSERT_OK(cuSurfObjectCreate(&s, &r));
  const CUdeviceptr out = alloc(16);
  int w = 16;
  // An out-of-range access in trap mode ends the kernel with an error (the context is then
  // unusable, so everything of this test is left to the context's destruction).
  EXPECT_NE(CUDA_SUCCESS, launch("surf_trap", 1, {(void*)&s, (void*)&out, &w}));
  (void)cuSurfObjectDestroy(s);
  bufs.clear();
  arrays.clear();
  (void)cuModuleUnload(module);
  module = nullptr;
}

// Legacy texture references: core records whose getters answer what the setters stored.
class TexRef : public Driver {};

TEST_F(TexRef, GettersAnswerWhatSettersStored) {
  CUtexref t = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuTexRefCreate(nullptr));
  ASSERT_OK(cuTexRefCreate(&t));
  ASSERT_NE(nullptr, t);
  EXPECT_OK(cuTexRefSetFormat(t, CU_AD_FORMAT_SIGNED_INT16, 2));
  CUarray_format f{};
  int ch = 0;
  EXPECT_OK(cuTexRefGetFormat(&f, &ch, t));
  EXPECT_EQ(CU_AD_FORMAT_SIGNED_INT16, f);
  EXPECT_EQ(2, ch);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuTexRefSetFormat(t, CU_AD_FORMAT_FLOAT, 3));
  EXPECT_OK(cuTexRefSetAddressMode(t, 1, CU_TR_ADDRESS_MODE_MIRROR));
  EXPECT_OK(cuTexRefSetAddressMode(t, 2, CU_TR_ADDRESS_MODE_BORDER));
  CUaddress_mode am{};
  EXPECT_OK(cuTexRefGetAddressMode(&am, t, 1));
  EXPECT_EQ(CU_TR_ADDRESS_MODE_MIRROR, am);
  EXPECT_OK(cuTexRefGetAddressMode(&am, t, 2));
  EXPECT_EQ(CU_TR_ADDRESS_MODE_BORDER, am);
  EXPECT_OK(cuTexRefSetFilterMode(t, CU_TR_FILTER_MODE_LINEAR));
  CUfilter_mode fm{};
  EXPECT_OK(cuTexRefGetFilterMode(&fm, t));
  EXPECT_EQ(CU_TR_FILTER_MODE_LINEAR, fm);
  EXPECT_OK(cuTexRefSetMipmapFilterMode(t, CU_TR_FILTER_MODE_LINEAR));
  EXPECT_OK(cuTexRefGetMipmapFilterMode(&fm, t));
  EXPECT_EQ(CU_TR_FILTER_MODE_LINEAR, fm);
  EXPECT_OK(cuTexRefSetMipmapLevelBias(t, 0.75f));
  float bias = 0, lo = 0, hi = 0;
  EXPECT_OK(cuTexRefGetMipmapLevelBias(&bias, t));
  EXPECT_EQ(0.75f, bias);
  EXPECT_OK(cuTexRefSetMipmapLevelClamp(t, 1.0f, 5.5f));
  EXPECT_OK(cuTexRefGetMipmapLevelClamp(&lo, &hi, t));
  EXPECT_EQ(1.0f, lo);
  EXPECT_EQ(5.5f, hi);
  EXPECT_OK(cuTexRefSetMaxAnisotropy(t, 4));
  int aniso = 0;
  EXPECT_OK(cuTexRefGetMaxAnisotropy(&aniso, t));
  EXPECT_EQ(4, aniso);
  float border[4] = {0.25f, 0.5f, 0.75f, 1.0f}, got_border[4] = {};
  EXPECT_OK(cuTexRefSetBorderColor(t, border));
  EXPECT_OK(cuTexRefGetBorderColor(got_border, t));
  EXPECT_EQ(0, std::memcmp(border, got_border, sizeof border));
  EXPECT_OK(cuTexRefSetFlags(t, CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_READ_AS_INTEGER));
  unsigned flags = 0;
  EXPECT_OK(cuTexRefGetFlags(&flags, t));
  EXPECT_EQ(unsigned{CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_READ_AS_INTEGER}, flags);

  // Linear memory: the byte offset is the address modulo the texture alignment.
  int align = 0;
  ASSERT_OK(cuDeviceGetAttribute(&align, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, dev));
  CUdeviceptr p = 0;
  ASSERT_OK(cuMemAlloc_v2(&p, 4096));
  size_t offset = 99;
  EXPECT_OK(cuTexRefSetAddress_v2(&offset, t, p + 16, 1024));
  EXPECT_EQ((p + 16) % static_cast<CUdeviceptr>(align), offset);
  CUdeviceptr got = 0;
  EXPECT_OK(cuTexRefGetAddress_v2(&got, t));
  if (::conformance::backend() != "cuda") {
    EXPECT_EQ(p + 16, got);  // NVIDIA 580 aligns it down
  }
  CUarray arr = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuTexRefGetArray(&arr, t));  // bound to memory
  CUmipmappedArray mip = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuTexRefGetMipmappedArray(&mip, t));
  CUDA_ARRAY_DESCRIPTOR d{};
  d.Width = 16;
  d.Height = 4;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 1;
  EXPECT_OK(cuTexRefSetAddress2D_v3(t, &d, p, 256));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuTexRefSetAddress2D_v3(t, &d, p + 4, 256));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuTexRefSetAddress2D_v3(t, nullptr, p, 256));
  EXPECT_OK(cuTexRefSetAddress2D_v2(t, &d, p, 256));
  EXPECT_OK(cuTexRefGetFormat(&f, &ch, t));
  EXPECT_EQ(CU_AD_FORMAT_FLOAT, f);
  EXPECT_EQ(1, ch);
  if (sizeof(CUdeviceptr_v1) == sizeof(CUdeviceptr) || p <= 0xffffffffu) {
    // The 32-bit entry points of CUDA 3 take addresses that fit them only.
    unsigned off32 = 0;
    EXPECT_OK(cuTexRefSetAddress(&off32, t, static_cast<CUdeviceptr_v1>(p), 1024));
    CUdeviceptr_v1 got32 = 0;
    EXPECT_OK(cuTexRefGetAddress(&got32, t));
    CUDA_ARRAY_DESCRIPTOR_v1 d1{};
    d1.Width = 16;
    d1.Height = 4;
    d1.Format = CU_AD_FORMAT_FLOAT;
    d1.NumChannels = 1;
    EXPECT_OK(cuTexRefSetAddress2D(t, &d1, static_cast<CUdeviceptr_v1>(p), 256));
  } else {
    // A 64-bit address fits none of them; a dead reference is refused by each.
    unsigned off32 = 0;
    CUdeviceptr_v1 got32 = 0;
    CUDA_ARRAY_DESCRIPTOR_v1 d1{};
    EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_VALUE, cuTexRefSetAddress(&off32, nullptr, 0, 0));
    EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_VALUE, cuTexRefGetAddress(&got32, nullptr));
    EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_VALUE, cuTexRefSetAddress2D(nullptr, &d1, 0, 0));
  }
  EXPECT_OK(cuMemFree_v2(p));

  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuTexRefSetAddressMode(t, 3, CU_TR_ADDRESS_MODE_CLAMP));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuTexRefGetAddressMode(&am, t, 3));
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_VALUE,
                    cuTexRefGetFormat(nullptr, &ch, t));  // NVIDIA 580 accepts it
  EXPECT_OK(cuTexRefDestroy(t));

  // Arrays (skipped while the backend has none).
  CUDA_ARRAY3D_DESCRIPTOR ad{};
  ad.Width = 8;
  ad.Height = 8;
  ad.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  ad.NumChannels = 4;
  CUarray a = nullptr;
  const CUresult cr = cuArray3DCreate_v2(&a, &ad);
  if (cr == CUDA_ERROR_NOT_SUPPORTED) return;
  ASSERT_OK(cr);
  ASSERT_OK(cuTexRefCreate(&t));
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_VALUE, cuTexRefSetArray(t, a, 0));  // NVIDIA 580 accepts it
  EXPECT_OK(cuTexRefSetArray(t, a, CU_TRSA_OVERRIDE_FORMAT));
  EXPECT_OK(cuTexRefGetArray(&arr, t));
  EXPECT_EQ(a, arr);
  EXPECT_OK(cuTexRefGetFormat(&f, &ch, t));
  EXPECT_EQ(CU_AD_FORMAT_UNSIGNED_INT8, f);
  EXPECT_EQ(4, ch);
  CUmipmappedArray m = nullptr;
  if (cuMipmappedArrayCreate(&m, &ad, 2) == CUDA_SUCCESS) {
    EXPECT_OK(cuTexRefSetMipmappedArray(t, m, CU_TRSA_OVERRIDE_FORMAT));
    EXPECT_OK(cuTexRefGetMipmappedArray(&mip, t));
    EXPECT_EQ(m, mip);
    EXPECT_OK(cuMipmappedArrayDestroy(m));
  }
  EXPECT_OK(cuTexRefDestroy(t));
  EXPECT_OK(cuArrayDestroy(a));
}

TEST_F(TexRef, ModulesHaveNoReferences) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", "the fake HIP of the tests loads no modules");
  // A module of CUDA 12+ (here a trivial one) has no texture or surface references.
  static const char kSrc[] = "extern \"C\" __global__ void k() {}";
  std::string img, log;
  ASSERT_TRUE(conformance::compile_ptx(kSrc, "k.cu", img, log)) << log;
  CUmodule mod = nullptr;
  ASSERT_OK(cuModuleLoadData(&mod, img.data()));
  CUtexref t = nullptr;
  CUsurfref s = nullptr;
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuModuleGetTexRef(&t, mod, "tex"));
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuModuleGetSurfRef(&s, mod, "surf"));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleGetTexRef(nullptr, mod, "tex"));
  EXPECT_OK(cuModuleUnload(mod));
  // No surface reference can exist, so none is valid to these.
  CUarray a = nullptr;
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_HANDLE, cuSurfRefSetArray(s, a, 0));
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_HANDLE, cuSurfRefGetArray(&a, s));
}

}  // namespace
