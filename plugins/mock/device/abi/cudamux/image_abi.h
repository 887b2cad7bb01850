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

#ifdef __cplusplus
}
#endif
#endif
