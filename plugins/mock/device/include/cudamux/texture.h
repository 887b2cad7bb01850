// Texture objects and surface objects in mock kernels (issue 17): CUDA's texture fetch and
// surface functions as thin templates over the device runtime's sampler (cudamux/image_abi.h,
// device/texture.cpp), which is compiled once instead of in every module.
#pragma once
#include "cudamux/image_abi.h"

typedef unsigned long long cudaTextureObject_t;
typedef unsigned long long cudaSurfaceObject_t;
enum cudaSurfaceBoundaryMode {
  cudaBoundaryModeZero = 0,
  cudaBoundaryModeClamp = 1,
  cudaBoundaryModeTrap = 2
};
enum cudaSurfaceFormatMode { cudaFormatModeForced = 0, cudaFormatModeAuto = 1 };

namespace cudamux::tex {
// A fetched texel (four 32-bit components) as T: float components take the bits, integer
// ones the value (the runtime returned what the texture's read mode says).
template <class S>
inline S comp(const unsigned* o, int c) {
  if constexpr (static_cast<S>(0.5) != 0)
    return cudamux::bit_cast<float>(o[c]);
  else
    return static_cast<S>(o[c]);
}
template <class T>
struct conv;
#define CUDAMUX_TEX_CONV(S, V)                                                         \
  template <>                                                                          \
  struct conv<S> {                                                                     \
    static S get(const unsigned* o) { return comp<S>(o, 0); }                          \
  };                                                                                   \
  template <>                                                                          \
  struct conv<V##1> {                                                                  \
    static V##1 get(const unsigned* o) { return V##1 {comp<S>(o, 0)}; }                \
  };                                                                                   \
  template <>                                                                          \
  struct conv<V##2> {                                                                  \
    static V##2 get(const unsigned* o) { return V##2 {comp<S>(o, 0), comp<S>(o, 1)}; } \
  };                                                                                   \
  template <>                                                                          \
  struct conv<V##4> {                                                                  \
    static V##4 get(const unsigned* o) {                                               \
      return V##4 {comp<S>(o, 0), comp<S>(o, 1), comp<S>(o, 2), comp<S>(o, 3)};        \
    }                                                                                  \
  };
CUDAMUX_TEX_CONV(signed char, char)
CUDAMUX_TEX_CONV(unsigned char, uchar)
CUDAMUX_TEX_CONV(short, short)
CUDAMUX_TEX_CONV(unsigned short, ushort)
CUDAMUX_TEX_CONV(int, int)
CUDAMUX_TEX_CONV(unsigned int, uint)
CUDAMUX_TEX_CONV(float, float)
#undef CUDAMUX_TEX_CONV
template <>
struct conv<char> {
  static char get(const unsigned* o) { return static_cast<char>(o[0]); }
};

template <class T>
inline T sample(cudaTextureObject_t t, unsigned dims, float x, float y, float z, int layer,
                unsigned lod_mode = CUDAMUX_LOD_BASE, float level = 0.0f,
                const float* grad = nullptr) {
  unsigned o[4];
  cudamux_tex_sample(t, dims, x, y, z, layer, lod_mode, level, grad, o);
  return conv<T>::get(o);
}
template <class T>
inline T surf(cudaSurfaceObject_t s, int x, int y, int z, int mode) {
  T v;
  cudamux_surf_access(s, &v, sizeof(T), x, y, z, mode, 0);
  return v;
}
}  // namespace cudamux::tex

// Each fetch comes as `T f<T>(obj, ...)` and `void f(T* out, obj, ...)`, as CUDA's headers.
#define CUDAMUX_TEX_FN(NAME, PARAMS, ARGS, CALL)                                    \
  template <class T>                                                                \
  static inline T NAME(cudaTextureObject_t obj CUDAMUX_UNPAREN PARAMS) {            \
    return CALL;                                                                    \
  }                                                                                 \
  template <class T>                                                                \
  static inline void NAME(T* ret, cudaTextureObject_t obj CUDAMUX_UNPAREN PARAMS) { \
    *ret = NAME<T>(obj CUDAMUX_UNPAREN ARGS);                                       \
  }
#define CUDAMUX_UNPAREN(...) __VA_ARGS__

template <class T>
static inline T tex1Dfetch(cudaTextureObject_t obj, int x) {
  unsigned o[4];
  cudamux_tex_fetch(obj, x, o);
  return cudamux::tex::conv<T>::get(o);
}
template <class T>
static inline void tex1Dfetch(T* ret, cudaTextureObject_t obj, int x) {
  *ret = tex1Dfetch<T>(obj, x);
}

CUDAMUX_TEX_FN(tex1D, (, float x), (, x), cudamux::tex::sample<T>(obj, 1, x, 0, 0, -1))
CUDAMUX_TEX_FN(tex2D, (, float x, float y), (, x, y), cudamux::tex::sample<T>(obj, 2, x, y, 0, -1))
CUDAMUX_TEX_FN(tex3D, (, float x, float y, float z), (, x, y, z),
               cudamux::tex::sample<T>(obj, 3, x, y, z, -1))
CUDAMUX_TEX_FN(tex1DLayered, (, float x, int layer), (, x, layer),
               cudamux::tex::sample<T>(obj, 1, x, 0, 0, layer))
CUDAMUX_TEX_FN(tex2DLayered, (, float x, float y, int layer), (, x, y, layer),
               cudamux::tex::sample<T>(obj, 2, x, y, 0, layer))
CUDAMUX_TEX_FN(texCubemap, (, float x, float y, float z), (, x, y, z),
               cudamux::tex::sample<T>(obj, CUDAMUX_TEX_CUBE, x, y, z, -1))
CUDAMUX_TEX_FN(texCubemapLayered, (, float x, float y, float z, int layer), (, x, y, z, layer),
               cudamux::tex::sample<T>(obj, CUDAMUX_TEX_CUBE, x, y, z, layer))
CUDAMUX_TEX_FN(tex1DLod, (, float x, float level), (, x, level),
               cudamux::tex::sample<T>(obj, 1, x, 0, 0, -1, CUDAMUX_LOD_LEVEL, level))
CUDAMUX_TEX_FN(tex2DLod, (, float x, float y, float level), (, x, y, level),
               cudamux::tex::sample<T>(obj, 2, x, y, 0, -1, CUDAMUX_LOD_LEVEL, level))
CUDAMUX_TEX_FN(tex3DLod, (, float x, float y, float z, float level), (, x, y, z, level),
               cudamux::tex::sample<T>(obj, 3, x, y, z, -1, CUDAMUX_LOD_LEVEL, level))
CUDAMUX_TEX_FN(tex1DLayeredLod, (, float x, int layer, float level), (, x, layer, level),
               cudamux::tex::sample<T>(obj, 1, x, 0, 0, layer, CUDAMUX_LOD_LEVEL, level))
CUDAMUX_TEX_FN(tex2DLayeredLod, (, float x, float y, int layer, float level),
               (, x, y, layer, level),
               cudamux::tex::sample<T>(obj, 2, x, y, 0, layer, CUDAMUX_LOD_LEVEL, level))
CUDAMUX_TEX_FN(texCubemapLod, (, float x, float y, float z, float level), (, x, y, z, level),
               cudamux::tex::sample<T>(obj, CUDAMUX_TEX_CUBE, x, y, z, -1, CUDAMUX_LOD_LEVEL,
                                       level))
CUDAMUX_TEX_FN(texCubemapLayeredLod, (, float x, float y, float z, int layer, float level),
               (, x, y, z, layer, level),
               cudamux::tex::sample<T>(obj, CUDAMUX_TEX_CUBE, x, y, z, layer, CUDAMUX_LOD_LEVEL,
                                       level))

namespace cudamux::tex {
template <class T>
inline T grad(cudaTextureObject_t obj, unsigned dims, float x, float y, float z, int layer,
              float dx0, float dx1, float dx2, float dy0, float dy1, float dy2) {
  const float g[6] = {dx0, dx1, dx2, dy0, dy1, dy2};
  return sample<T>(obj, dims, x, y, z, layer, CUDAMUX_LOD_GRAD, 0.0f, g);
}
}  // namespace cudamux::tex
CUDAMUX_TEX_FN(tex1DGrad, (, float x, float dx, float dy), (, x, dx, dy),
               cudamux::tex::grad<T>(obj, 1, x, 0, 0, -1, dx, 0, 0, dy, 0, 0))
CUDAMUX_TEX_FN(tex2DGrad, (, float x, float y, float2 dx, float2 dy), (, x, y, dx, dy),
               cudamux::tex::grad<T>(obj, 2, x, y, 0, -1, dx.x, dx.y, 0, dy.x, dy.y, 0))
CUDAMUX_TEX_FN(tex3DGrad, (, float x, float y, float z, float4 dx, float4 dy), (, x, y, z, dx, dy),
               cudamux::tex::grad<T>(obj, 3, x, y, z, -1, dx.x, dx.y, dx.z, dy.x, dy.y, dy.z))
CUDAMUX_TEX_FN(tex1DLayeredGrad, (, float x, int layer, float dx, float dy), (, x, layer, dx, dy),
               cudamux::tex::grad<T>(obj, 1, x, 0, 0, layer, dx, 0, 0, dy, 0, 0))
CUDAMUX_TEX_FN(tex2DLayeredGrad, (, float x, float y, int layer, float2 dx, float2 dy),
               (, x, y, layer, dx, dy),
               cudamux::tex::grad<T>(obj, 2, x, y, 0, layer, dx.x, dx.y, 0, dy.x, dy.y, 0))

template <class T>
static inline T tex2Dgather(cudaTextureObject_t obj, float x, float y, int comp = 0) {
  unsigned o[4];
  cudamux_tex_gather(obj, x, y, -1, comp, o);
  return cudamux::tex::conv<T>::get(o);
}
template <class T>
static inline void tex2Dgather(T* ret, cudaTextureObject_t obj, float x, float y, int comp = 0) {
  *ret = tex2Dgather<T>(obj, x, y, comp);
}
#undef CUDAMUX_TEX_FN
#undef CUDAMUX_UNPAREN

// --- surfaces: x in bytes ---
#define CUDAMUX_SURF_FN(NAME, PARAMS, ARGS, Y, Z)                                              \
  template <class T>                                                                           \
  static inline T NAME##read(cudaSurfaceObject_t surf CUDAMUX_SURF_UNPAREN PARAMS,             \
                             cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap) {            \
    return cudamux::tex::surf<T>(surf, x, Y, Z, mode);                                         \
  }                                                                                            \
  template <class T>                                                                           \
  static inline void NAME##read(T* ret, cudaSurfaceObject_t surf CUDAMUX_SURF_UNPAREN PARAMS,  \
                                cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap) {         \
    cudamux_surf_access(surf, ret, sizeof(T), x, Y, Z, mode, 0);                               \
  }                                                                                            \
  template <class T>                                                                           \
  static inline void NAME##write(T data, cudaSurfaceObject_t surf CUDAMUX_SURF_UNPAREN PARAMS, \
                                 cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap) {        \
    cudamux_surf_access(surf, &data, sizeof(T), x, Y, Z, mode, 1);                             \
  }
#define CUDAMUX_SURF_UNPAREN(...) __VA_ARGS__
CUDAMUX_SURF_FN(surf1D, (, int x), (, x), 0, 0)
CUDAMUX_SURF_FN(surf2D, (, int x, int y), (, x, y), y, 0)
CUDAMUX_SURF_FN(surf3D, (, int x, int y, int z), (, x, y, z), y, z)
CUDAMUX_SURF_FN(surf1DLayered, (, int x, int layer), (, x, layer), 0, layer)
CUDAMUX_SURF_FN(surf2DLayered, (, int x, int y, int layer), (, x, y, layer), y, layer)
CUDAMUX_SURF_FN(surfCubemap, (, int x, int y, int face), (, x, y, face), y, face)
CUDAMUX_SURF_FN(surfCubemapLayered, (, int x, int y, int layerFace), (, x, y, layerFace), y,
                layerFace)
#undef CUDAMUX_SURF_FN
#undef CUDAMUX_SURF_UNPAREN
