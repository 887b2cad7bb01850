// Texture sampling and surface access of mock kernels (issue 17), as the CUDA programming
// guide's "Texture Fetching" appendix specifies: unnormalised or normalised coordinates, the
// address modes wrap / clamp / mirror / border (wrap and mirror with normalised coordinates
// only, clamp otherwise), point sampling, and linear filtering whose weights are 9-bit fixed
// point with 8 fractional bits. Compiled once into libcudamux-device.so; the built-in headers
// hold only thin templates over the C functions of cudamux/image_abi.h.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "cudamux/image_abi.h"
#include "kernel_thread.hpp"

#define CUDAMUX_DEVICE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// CUDA's enumerations (cuda.h), which this library does not include.
enum : unsigned {
  kU8 = 0x01,
  kU16 = 0x02,
  kU32 = 0x03,
  kS8 = 0x08,
  kS16 = 0x09,
  kS32 = 0x0a,
  kHalf = 0x10,
  kFloat = 0x20,
  kUnorm8x1 = 0xc0,
  kUnorm8x4 = 0xc2,
  kUnorm16x1 = 0xc3,
  kUnorm16x4 = 0xc5,
  kSnorm8x1 = 0xc6,
  kSnorm8x4 = 0xc8,
  kSnorm16x1 = 0xc9,
  kSnorm16x4 = 0xcb,
};
enum : unsigned { kWrap = 0, kClamp = 1, kMirror = 2, kBorder = 3 };
enum : unsigned { kPoint = 0, kLinear = 1 };
enum : unsigned { kReadAsInteger = 0x01, kNormalizedCoordinates = 0x02, kSrgb = 0x10 };
constexpr int kIllegalAddress = 700;  // CUDA_ERROR_ILLEGAL_ADDRESS
constexpr int kLaunchFailed = 719;    // CUDA_ERROR_LAUNCH_FAILED

// The integer format under the CU_AD_FORMAT_UNORM/SNORM_* ones (always read normalised).
unsigned base_format(unsigned f) {
  if (f >= kUnorm8x1 && f < kUnorm8x1 + 3) return kU8;
  if (f >= kUnorm16x1 && f < kUnorm16x1 + 3) return kU16;
  if (f >= kSnorm8x1 && f < kSnorm8x1 + 3) return kS8;
  if (f >= kSnorm16x1 && f < kSnorm16x1 + 3) return kS16;
  return f;
}
bool forced_normalized(unsigned f) { return f >= kUnorm8x1 && f <= kSnorm16x4; }

float half_to_float(std::uint16_t h) {
  const unsigned sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

float srgb_to_linear(float c) {
  return c <= 0.04045f ? c / 12.92f : std::pow((c + 0.055f) / 1.055f, 2.4f);
}

// How a texture returns its texels.
struct Reader {
  const cudamux_texture* t;
  unsigned format;  // the base format
  unsigned channels;
  unsigned channel_bytes;
  bool int_out;    // integers (element type), else floats
  bool normalize;  // 8/16-bit integers to [0,1] / [-1,1]
  bool srgb;
};

unsigned size_of(unsigned f) {
  switch (f) {
    case kU8:
    case kS8:
      return 1;
    case kU16:
    case kS16:
    case kHalf:
      return 2;
    default:
      return 4;
  }
}

Reader reader_of(const cudamux_texture* t) {
  Reader r{};
  r.t = t;
  r.format = base_format(t->image.format);
  r.channels = t->image.channels;
  r.channel_bytes = size_of(r.format);
  const bool integer = r.format != kHalf && r.format != kFloat;
  const bool small = integer && r.format != kU32 && r.format != kS32;
  r.normalize = small && (forced_normalized(t->image.format) || !(t->flags & kReadAsInteger));
  r.int_out = integer && !r.normalize;
  r.srgb = r.normalize && (t->flags & kSrgb) && r.format == kU8;
  return r;
}

std::int64_t raw_int(unsigned format, const unsigned char* p) {
  switch (format) {
    case kU8:
      return *p;
    case kS8:
      return static_cast<signed char>(*p);
    case kU16: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case kS16: {
      std::int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case kU32: {
      std::uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      std::int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
  }
}

float channel_float(const Reader& r, const unsigned char* p, unsigned c) {
  switch (r.format) {
    case kFloat: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case kHalf: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return half_to_float(v);
    }
    default: {
      const float v = static_cast<float>(raw_int(r.format, p));
      float n;
      switch (r.format) {
        case kU8:
          n = v / 255.0f;
          break;
        case kS8:
          n = std::max(v / 127.0f, -1.0f);
          break;
        case kU16:
          n = v / 65535.0f;
          break;
        case kS16:
          n = std::max(v / 32767.0f, -1.0f);
          break;
        default:
          n = v;
      }
      return r.srgb && c < 3 ? srgb_to_linear(n) : n;
    }
  }
}

// A texel's four components as floats; border: the border colour.
struct Texel {
  float f[4];
};

// Applies the address mode to integer texel index i of an axis of n texels; false: border.
bool address(long long& i, long long n, unsigned mode, bool normalized) {
  if (!normalized && (mode == kWrap || mode == kMirror)) mode = kClamp;
  switch (mode) {
    case kWrap:
      i = ((i % n) + n) % n;
      return true;
    case kMirror: {
      const long long m = ((i % (2 * n)) + 2 * n) % (2 * n);
      i = m < n ? m : 2 * n - 1 - m;
      return true;
    }
    case kBorder:
      return i >= 0 && i < n;
    default:
      i = std::clamp(i, 0LL, n - 1);
      return true;
  }
}

// Float coordinate to a texel index, safe for NaN and huge values.
long long floor_index(float u) {
  if (!(u == u)) return 0;
  return static_cast<long long>(std::floor(std::clamp(u, -1e15f, 1e15f)));
}

// The 8-bit fraction of linear filtering (weights in 1/256 steps).
float weight(float frac) { return std::nearbyint(frac * 256.0f) / 256.0f; }

const unsigned char* texel_ptr(const cudamux_image_level& l, unsigned elem, long long i,
                               long long j, long long k) {
  return static_cast<const unsigned char*>(l.data) +
         static_cast<unsigned long long>(k) * l.slice_pitch +
         static_cast<unsigned long long>(j) * l.row_pitch +
         static_cast<unsigned long long>(i) * elem;
}

// Texel (i, j, k) of level `lv` in slice `slice` (layer or face; -1: none), addressed.
Texel texel_f(const Reader& r, const cudamux_image_level& lv, unsigned dims, long long i,
              long long j, long long k, long long slice) {
  Texel t{};
  const bool norm = r.t->flags & kNormalizedCoordinates;
  bool in = address(i, static_cast<long long>(lv.width), r.t->address_mode[0], norm);
  if (dims >= 2)
    in = address(j, static_cast<long long>(lv.height), r.t->address_mode[1], norm) && in;
  else
    j = 0;
  if (dims >= 3)
    in = address(k, static_cast<long long>(lv.depth), r.t->address_mode[2], norm) && in;
  else
    k = slice < 0 ? 0 : slice;
  if (!in) {
    for (int c = 0; c < 4; ++c) t.f[c] = r.t->border_color[c];
    return t;
  }
  const unsigned char* p = texel_ptr(lv, r.t->image.element_bytes, i, j, k);
  for (unsigned c = 0; c < r.channels && c < 4; ++c)
    t.f[c] = channel_float(r, p + c * r.channel_bytes, c);
  return t;
}

void texel_int(const Reader& r, const cudamux_image_level& lv, unsigned dims, long long i,
               long long j, long long k, long long slice, unsigned* out) {
  const bool norm = r.t->flags & kNormalizedCoordinates;
  bool in = address(i, static_cast<long long>(lv.width), r.t->address_mode[0], norm);
  if (dims >= 2)
    in = address(j, static_cast<long long>(lv.height), r.t->address_mode[1], norm) && in;
  else
    j = 0;
  if (dims >= 3)
    in = address(k, static_cast<long long>(lv.depth), r.t->address_mode[2], norm) && in;
  else
    k = slice < 0 ? 0 : slice;
  for (int c = 0; c < 4; ++c) out[c] = 0;
  if (!in) {
    for (int c = 0; c < 4; ++c)
      out[c] = static_cast<unsigned>(static_cast<int>(r.t->border_color[c]));
    return;
  }
  const unsigned char* p = texel_ptr(lv, r.t->image.element_bytes, i, j, k);
  for (unsigned c = 0; c < r.channels && c < 4; ++c)
    out[c] = static_cast<unsigned>(raw_int(r.format, p + c * r.channel_bytes));
}

const cudamux_texture* texture_of(unsigned long long tex) {
  const auto* t = reinterpret_cast<const cudamux_texture*>(static_cast<std::uintptr_t>(tex));
  if (t == nullptr || t->magic != CUDAMUX_TEXTURE_MAGIC)
    cudamux::device::abort_block(kIllegalAddress,
                                 "texture fetch through an invalid texture object");
  return t;
}

// Samples level `level` at texel-space-ready coordinates (normalised or not, as the texture
// says); float path.
Texel sample_level(const Reader& r, unsigned dims, float x, float y, float z, long long slice,
                   unsigned level) {
  const cudamux_image& img = r.t->image;
  const cudamux_image_level& lv = img.levels[level];
  const cudamux_image_level& base = img.levels[0];
  const bool norm = r.t->flags & kNormalizedCoordinates;
  float u = x, v = y, w = z;
  if (norm) {
    u = x * static_cast<float>(lv.width);
    v = y * static_cast<float>(lv.height);
    w = z * static_cast<float>(lv.depth);
  } else if (level != 0) {
    u = x * static_cast<float>(lv.width) / static_cast<float>(base.width);
    v = y * static_cast<float>(lv.height) / static_cast<float>(base.height);
    w = z * static_cast<float>(lv.depth) / static_cast<float>(base.depth);
  }
  if (r.t->filter_mode != kLinear)
    return texel_f(r, lv, dims, floor_index(u), floor_index(v), floor_index(w), slice);
  const float ub = u - 0.5f, vb = v - 0.5f, wb = w - 0.5f;
  const long long i = floor_index(ub), j = floor_index(vb), k = floor_index(wb);
  const float a = weight(ub - std::floor(ub));
  const float b = dims >= 2 ? weight(vb - std::floor(vb)) : 0.0f;
  const float g = dims >= 3 ? weight(wb - std::floor(wb)) : 0.0f;
  Texel out{};
  for (int dk = 0; dk < (dims >= 3 ? 2 : 1); ++dk)
    for (int dj = 0; dj < (dims >= 2 ? 2 : 1); ++dj)
      for (int di = 0; di < 2; ++di) {
        const float wt = (di ? a : 1.0f - a) * (dims >= 2 ? (dj ? b : 1.0f - b) : 1.0f) *
                         (dims >= 3 ? (dk ? g : 1.0f - g) : 1.0f);
        if (wt == 0.0f) continue;
        const Texel t = texel_f(r, lv, dims, i + di, j + dj, k + dk, slice);
        for (int c = 0; c < 4; ++c) out.f[c] += wt * t.f[c];
      }
  return out;
}

// Cubemap direction to face and normalised face coordinates (the programming guide's table).
void cube_face(float x, float y, float z, int& face, float& s, float& t) {
  const float ax = std::fabs(x), ay = std::fabs(y), az = std::fabs(z);
  float m, sc, tc;
  if (ax >= ay && ax >= az) {
    m = ax;
    face = x >= 0 ? 0 : 1;
    sc = x >= 0 ? -z : z;
    tc = -y;
  } else if (ay >= az) {
    m = ay;
    face = y >= 0 ? 2 : 3;
    sc = x;
    tc = y >= 0 ? z : -z;
  } else {
    m = az;
    face = z >= 0 ? 4 : 5;
    sc = z >= 0 ? x : -x;
    tc = -y;
  }
  if (m == 0.0f) m = 1.0f;
  s = (sc / m + 1.0f) * 0.5f;
  t = (tc / m + 1.0f) * 0.5f;
}

}  // namespace

CUDAMUX_DEVICE_EXPORT void cudamux_tex_sample(unsigned long long tex, unsigned dims, float x,
                                              float y, float z, int layer, unsigned lod_mode,
                                              float level, const float* grad, unsigned* out) {
  const cudamux_texture* t = texture_of(tex);
  const Reader r = reader_of(t);
  long long slice = layer < 0 ? -1 : layer;
  unsigned sdims = dims;
  Reader rr = r;
  cudamux_texture cube_tex;
  if (dims == CUDAMUX_TEX_CUBE) {
    int face;
    float s, tc;
    cube_face(x, y, z, face, s, tc);
    slice = (layer < 0 ? 0 : 6LL * layer) + face;
    x = s;
    y = tc;
    sdims = 2;
    // Face coordinates are normalised and clamped to the face, whatever the texture says.
    cube_tex = *t;
    cube_tex.flags |= kNormalizedCoordinates;
    cube_tex.address_mode[0] = cube_tex.address_mode[1] = kClamp;
    rr.t = &cube_tex;
  }
  const unsigned levels = std::max(1u, t->image.num_levels);
  if (slice >= 0) {
    const long long n = static_cast<long long>(t->image.levels[0].depth);
    slice = std::clamp(slice, 0LL, n - 1);
  }
  if (r.int_out) {
    // Integer textures: point sampling of level 0 (CUDA filters only float returns).
    const cudamux_image_level& lv = t->image.levels[0];
    const bool norm = rr.t->flags & kNormalizedCoordinates;
    const float u = norm ? x * static_cast<float>(lv.width) : x;
    const float v = norm ? y * static_cast<float>(lv.height) : y;
    const float w = norm ? z * static_cast<float>(lv.depth) : z;
    texel_int(rr, lv, sdims, floor_index(u), floor_index(v), floor_index(w), slice, out);
    return;
  }
  float lod = 0.0f;
  if (levels > 1) {
    if (lod_mode == CUDAMUX_LOD_LEVEL) {
      lod = level;
    } else if (lod_mode == CUDAMUX_LOD_GRAD && grad != nullptr) {
      const cudamux_image_level& b = t->image.levels[0];
      const float size[3] = {static_cast<float>(b.width), static_cast<float>(b.height),
                             static_cast<float>(b.depth)};
      float lx = 0, ly = 0;
      for (unsigned d = 0; d < std::min(sdims, 3u); ++d) {
        const float sx = (t->flags & kNormalizedCoordinates) ? grad[d] * size[d] : grad[d];
        const float sy = (t->flags & kNormalizedCoordinates) ? grad[3 + d] * size[d] : grad[3 + d];
        lx += sx * sx;
        ly += sy * sy;
      }
      const float rho = std::sqrt(std::max(lx, ly));
      lod = rho > 0 ? std::log2(rho) : -1e30f;
    }
    lod += t->mipmap_level_bias;
    lod = std::clamp(lod, t->min_mipmap_level_clamp, t->max_mipmap_level_clamp);
    lod = std::clamp(lod, 0.0f, static_cast<float>(levels - 1));
  }
  Texel res;
  if (levels <= 1) {
    res = sample_level(rr, sdims, x, y, z, slice, 0);
  } else if (t->mipmap_filter_mode != kLinear) {
    const unsigned l = std::min(levels - 1, static_cast<unsigned>(std::floor(lod + 0.5f)));
    res = sample_level(rr, sdims, x, y, z, slice, l);
  } else {
    const unsigned l0 = static_cast<unsigned>(std::floor(lod));
    const unsigned l1 = std::min(levels - 1, l0 + 1);
    const float f = weight(lod - static_cast<float>(l0));
    const Texel a = sample_level(rr, sdims, x, y, z, slice, l0);
    if (f == 0.0f || l1 == l0) {
      res = a;
    } else {
      const Texel b = sample_level(rr, sdims, x, y, z, slice, l1);
      for (int c = 0; c < 4; ++c) res.f[c] = (1.0f - f) * a.f[c] + f * b.f[c];
    }
  }
  std::memcpy(out, res.f, sizeof res.f);
}

CUDAMUX_DEVICE_EXPORT void cudamux_tex_fetch(unsigned long long tex, int x, unsigned* out) {
  const cudamux_texture* t = texture_of(tex);
  const Reader r = reader_of(t);
  const cudamux_image_level& lv = t->image.levels[0];
  for (int c = 0; c < 4; ++c) out[c] = 0;
  // Out of range: zero (CUDA's rule for tex1Dfetch of linear memory).
  if (x < 0 || static_cast<unsigned long long>(x) >= lv.width) return;
  const unsigned char* p = texel_ptr(lv, t->image.element_bytes, x, 0, 0);
  for (unsigned c = 0; c < r.channels && c < 4; ++c) {
    if (r.int_out) {
      out[c] = static_cast<unsigned>(raw_int(r.format, p + c * r.channel_bytes));
    } else {
      const float f = channel_float(r, p + c * r.channel_bytes, c);
      std::memcpy(&out[c], &f, 4);
    }
  }
}

CUDAMUX_DEVICE_EXPORT void cudamux_tex_gather(unsigned long long tex, float x, float y, int layer,
                                              int comp, unsigned* out) {
  const cudamux_texture* t = texture_of(tex);
  const Reader r = reader_of(t);
  const cudamux_image_level& lv = t->image.levels[0];
  const bool norm = t->flags & kNormalizedCoordinates;
  const float u = (norm ? x * static_cast<float>(lv.width) : x) - 0.5f;
  const float v = (norm ? y * static_cast<float>(lv.height) : y) - 0.5f;
  const long long i = floor_index(u), j = floor_index(v);
  long long slice =
      layer < 0 ? -1 : std::clamp<long long>(layer, 0, static_cast<long long>(lv.depth) - 1);
  const int c = std::clamp(comp, 0, 3);
  // Counter-clockwise from the lower left: (i, j+1), (i+1, j+1), (i+1, j), (i, j).
  const long long di[4] = {0, 1, 1, 0}, dj[4] = {1, 1, 0, 0};
  for (int n = 0; n < 4; ++n) {
    if (r.int_out) {
      unsigned texel[4];
      texel_int(r, lv, 2, i + di[n], j + dj[n], 0, slice, texel);
      out[n] = texel[c];
    } else {
      const Texel texel = texel_f(r, lv, 2, i + di[n], j + dj[n], 0, slice);
      std::memcpy(&out[n], &texel.f[c], 4);
    }
  }
}

CUDAMUX_DEVICE_EXPORT void cudamux_surf_access(unsigned long long surf, void* data, unsigned bytes,
                                               int x_bytes, int y, int z, int boundary, int write) {
  const auto* s = reinterpret_cast<const cudamux_surface*>(static_cast<std::uintptr_t>(surf));
  if (s == nullptr || s->magic != CUDAMUX_SURFACE_MAGIC)
    cudamux::device::abort_block(kIllegalAddress,
                                 "surface access through an invalid surface object");
  const cudamux_image_level& lv = s->image.levels[0];
  const long long row_bytes = static_cast<long long>(lv.width) * s->image.element_bytes;
  long long xb = x_bytes, yy = y, zz = z;
  const bool in = xb >= 0 && xb + bytes <= row_bytes && yy >= 0 &&
                  yy < static_cast<long long>(lv.height) && zz >= 0 &&
                  zz < static_cast<long long>(lv.depth);
  if (!in) {
    if (boundary == CUDAMUX_BOUNDARY_TRAP)
      cudamux::device::abort_block(kLaunchFailed,
                                   "surface access out of range (cudaBoundaryModeTrap)");
    if (boundary == CUDAMUX_BOUNDARY_ZERO) {
      if (!write) std::memset(data, 0, bytes);
      return;
    }
    xb = std::clamp(xb, 0LL, std::max(0LL, row_bytes - static_cast<long long>(bytes)));
    yy = std::clamp(yy, 0LL, static_cast<long long>(lv.height) - 1);
    zz = std::clamp(zz, 0LL, static_cast<long long>(lv.depth) - 1);
  }
  unsigned char* p =
      static_cast<unsigned char*>(lv.data) + static_cast<unsigned long long>(zz) * lv.slice_pitch +
      static_cast<unsigned long long>(yy) * lv.row_pitch + static_cast<unsigned long long>(xb);
  if (write)
    std::memcpy(p, data, bytes);
  else
    std::memcpy(data, p, bytes);
}
