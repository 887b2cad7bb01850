// What mock kernels see of CUDA arrays, texture objects and surface objects (issue 17).
// On the mock a CUtexObject / CUsurfObject is the address of a cudamux_texture /
// cudamux_surface owned by the plugin; kernels run in this process and read it directly.
// Included by the device runtime, the prelude of every module and the plugin: header-free C.
#ifndef CUDAMUX_IMAGE_ABI_H
#define CUDAMUX_IMAGE_ABI_H

#ifdef __cplusplus
extern "C" {
#endif

// A texture's width of 65536 texels gives 17 mip levels; 32 leaves room for every size.
#define CUDAMUX_MAX_MIP_LEVELS 32

// "TEX0" / "SRF0": a handle that does not point at a live object of its kind traps.
#define CUDAMUX_TEXTURE_MAGIC 0x30584554u
#define CUDAMUX_SURFACE_MAGIC 0x30465253u

// One mip level (or the whole of a plain array or linear / pitched resource).
typedef struct cudamux_image_level {
  void* data;                      // element (0, 0, 0) in device memory of the mock
  unsigned long long width;        // elements per row
  unsigned long long height;       // rows; 1 for 1D
  unsigned long long depth;        // slices; 1 for 1D/2D; layers (x 6 for cubemaps) when layered
  unsigned long long row_pitch;    // bytes between rows
  unsigned long long slice_pitch;  // bytes between slices, layers or cube faces
} cudamux_image_level;

// The storage of a CUDA array, mipmapped array, or a linear / pitch2D resource seen as one.
typedef struct cudamux_image {
  unsigned format;         // CUarray_format
  unsigned channels;       // 1, 2 or 4
  unsigned element_bytes;  // channels x the format's size
  unsigned dims;           // 1, 2 or 3: of one layer (a cubemap face is 2D)
  unsigned flags;          // CUDA_ARRAY3D_* (LAYERED, CUBEMAP, SURFACE_LDST, TEXTURE_GATHER, ...)
  unsigned num_levels;     // 1 unless mipmapped
  cudamux_image_level levels[CUDAMUX_MAX_MIP_LEVELS];
} cudamux_image;

typedef struct cudamux_texture {
  unsigned magic;          // CUDAMUX_TEXTURE_MAGIC while live
  unsigned resource_type;  // CUresourcetype
  cudamux_image image;     // with a resource view applied (format, levels, layers)
  unsigned address_mode[3];     // CUaddress_mode per coordinate
  unsigned filter_mode;         // CUfilter_mode
  unsigned mipmap_filter_mode;  // CUfilter_mode
  unsigned flags;               // CU_TRSF_* (READ_AS_INTEGER, NORMALIZED_COORDINATES, SRGB, ...)
  unsigned max_anisotropy;
  float mipmap_level_bias;
  float min_mipmap_level_clamp;
  float max_mipmap_level_clamp;
  float border_color[4];
} cudamux_texture;

typedef struct cudamux_surface {
  unsigned magic;  // CUDAMUX_SURFACE_MAGIC while live
  cudamux_image image;
} cudamux_surface;


// --- sampling (libcudamux-device.so, device/texture.cpp; the built-in headers' tex* and
// surf* templates call these). `out` receives four 32-bit components: floats when the texture
// returns floats (float and half formats, or 8/16-bit integers read as normalised floats),
// else integers (sign- or zero-extended). Missing channels read as 0.

// Dimensions of a sample: the coordinates' count (1, 2, 3) or a cubemap direction.
enum { CUDAMUX_TEX_1D = 1, CUDAMUX_TEX_2D = 2, CUDAMUX_TEX_3D = 3, CUDAMUX_TEX_CUBE = 4 };
// How the mip level is chosen: level 0 (plus bias), an explicit level, or gradients.
enum { CUDAMUX_LOD_BASE = 0, CUDAMUX_LOD_LEVEL = 1, CUDAMUX_LOD_GRAD = 2 };

// tex1D/2D/3D, their Layered, Cubemap, Lod and Grad forms. layer < 0: not layered.
// grad: dPdx[3] then dPdy[3] (CUDAMUX_LOD_GRAD only).
void cudamux_tex_sample(unsigned long long tex, unsigned dims, float x, float y, float z,
                        int layer, unsigned lod_mode, float level, const float* grad,
                        unsigned* out);
// tex1Dfetch: element x of a linear resource, unfiltered, unnormalised.
void cudamux_tex_fetch(unsigned long long tex, int x, unsigned* out);
// tex2Dgather / tex2DLayered gather (tld4): component `comp` of the bilinear footprint's four
// texels, counter-clockwise from the lower left.
void cudamux_tex_gather(unsigned long long tex, float x, float y, int layer, int comp,
                        unsigned* out);

// surf*read / surf*write: `bytes` bytes at byte x of row y of slice z (a 1D layered surface's
// layer is its z, y being 0; a cubemap's face, or 6 * layer + face, likewise).
// boundary: cudaBoundaryModeZero (0), Clamp (1), Trap (2).
enum { CUDAMUX_BOUNDARY_ZERO = 0, CUDAMUX_BOUNDARY_CLAMP = 1, CUDAMUX_BOUNDARY_TRAP = 2 };
void cudamux_surf_access(unsigned long long surf, void* data, unsigned bytes, int x_bytes, int y,
                         int z, int boundary, int write);

#ifdef __cplusplus
}
#endif
#endif
