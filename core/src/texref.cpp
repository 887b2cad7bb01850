// Legacy texture and surface references (issue 17): cuTexRefCreate / cuTexRefDestroy and the
// cuTexRefSet* / cuTexRefGet* calls as core objects whose getters answer what the setters
// stored, with CUDA's argument checks. No kernel can read one: texture references left the
// CUDA language in CUDA 12 (nvcc no longer emits them), so cuModuleGetTexRef and
// cuModuleGetSurfRef find none (CUDA_ERROR_NOT_FOUND) and cuParamSetTexRef, which bound one to
// the launch API of CUDA 3, stays CUDA_ERROR_NOT_SUPPORTED.
#include <spdlog/spdlog.h>

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "array.hpp"
#include "core.hpp"
#include "cudamux/driver_impl.hpp"

namespace cudamux::core {
namespace {

struct TexRef {
  enum class Bound { none, linear, pitch2d, array, mipmapped } bound = Bound::none;
  CUdeviceptr address = 0;
  CUarray array = nullptr;
  CUmipmappedArray mipmapped = nullptr;
  CUarray_format format = CU_AD_FORMAT_FLOAT;
  int channels = 1;
  CUaddress_mode address_mode[3] = {CU_TR_ADDRESS_MODE_WRAP, CU_TR_ADDRESS_MODE_WRAP,
                                    CU_TR_ADDRESS_MODE_WRAP};
  CUfilter_mode filter = CU_TR_FILTER_MODE_POINT;
  CUfilter_mode mipmap_filter = CU_TR_FILTER_MODE_POINT;
  float bias = 0, min_clamp = 0, max_clamp = 0;
  unsigned max_aniso = 0;
  float border[4] = {0, 0, 0, 0};
  unsigned flags = 0;
};

std::mutex g_mu;
std::unordered_map<CUtexref, TexRef*>& refs() {
  static auto* m = new std::unordered_map<CUtexref, TexRef*>;
  return *m;
}

// Runs f on the live reference `h` under the lock; CUDA_ERROR_INVALID_VALUE for anything else.
template <class F>
CUresult with_ref(CUtexref h, const char* fn, F&& f) {
  std::lock_guard lock(g_mu);
  auto it = refs().find(h);
  if (it == refs().end())
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a texture reference of cuTexRefCreate");
  return f(*it->second);
}

bool valid_format(CUarray_format f) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_HALF:
    case CU_AD_FORMAT_FLOAT:
      return true;
    default:
      return false;
  }
}
bool valid_filter(CUfilter_mode m) {
  return m == CU_TR_FILTER_MODE_POINT || m == CU_TR_FILTER_MODE_LINEAR;
}

CUresult current_device(int& dev, const char* fn) {
  Context* ctx = nullptr;
  if (CUresult r = current_context(ctx)) return reject(r, fn, "no current context");
  dev = ctx->device;
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace cudamux::core

namespace cudamux::impl {
using core::reject;
using core::TexRef;

CUresult cuTexRefCreate(CUtexref* pTexRef) {
  if (!pTexRef) return reject(CUDA_ERROR_INVALID_VALUE, "cuTexRefCreate", "null pTexRef");
  core::Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  auto* ref = new TexRef;
  std::lock_guard lock(core::g_mu);
  *pTexRef = reinterpret_cast<CUtexref>(ref);
  core::refs()[*pTexRef] = ref;
  return CUDA_SUCCESS;
}

CUresult cuTexRefDestroy(CUtexref hTexRef) {
  std::lock_guard lock(core::g_mu);
  auto it = core::refs().find(hTexRef);
  if (it == core::refs().end())
    return reject(CUDA_ERROR_INVALID_VALUE, "cuTexRefDestroy", "not a live texture reference");
  delete it->second;
  core::refs().erase(it);
  return CUDA_SUCCESS;
}

CUresult cuTexRefSetArray(CUtexref hTexRef, CUarray hArray, unsigned int Flags) {
  const char* fn = "cuTexRefSetArray";
  if (Flags != CU_TRSA_OVERRIDE_FORMAT)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "Flags must be CU_TRSA_OVERRIDE_FORMAT");
  core::Array* a = core::array_of(hArray);
  if (!a) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "not a live CUarray");
  const CUDA_ARRAY3D_DESCRIPTOR desc = a->desc;
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    r.bound = TexRef::Bound::array;
    r.array = hArray;
    r.address = 0;
    r.mipmapped = nullptr;
    // CU_TRSA_OVERRIDE_FORMAT: the reference takes the array's format.
    r.format = desc.Format;
    r.channels = static_cast<int>(desc.NumChannels);
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetMipmappedArray(CUtexref hTexRef, CUmipmappedArray hMipmappedArray,
                                   unsigned int Flags) {
  const char* fn = "cuTexRefSetMipmappedArray";
  if (Flags != CU_TRSA_OVERRIDE_FORMAT)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "Flags must be CU_TRSA_OVERRIDE_FORMAT");
  core::MipmappedArray* m = core::mipmapped_array_of(hMipmappedArray);
  if (!m) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "not a live CUmipmappedArray");
  const CUDA_ARRAY3D_DESCRIPTOR desc = m->desc;
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    r.bound = TexRef::Bound::mipmapped;
    r.mipmapped = hMipmappedArray;
    r.array = nullptr;
    r.address = 0;
    r.format = desc.Format;
    r.channels = static_cast<int>(desc.NumChannels);
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetAddress_v2(size_t* ByteOffset, CUtexref hTexRef, CUdeviceptr dptr,
                               size_t bytes) {
  const char* fn = "cuTexRefSetAddress";
  int dev = 0;
  if (CUresult r = core::current_device(dev, fn)) return r;
  const auto align = static_cast<CUdeviceptr>(
      core::device_attribute_or(dev, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512));
  (void)bytes;
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    r.bound = dptr ? TexRef::Bound::linear : TexRef::Bound::none;
    r.address = dptr;
    r.array = nullptr;
    r.mipmapped = nullptr;
    // The hardware needs aligned bases: the offset fetches must add (CUDA's ByteOffset).
    if (ByteOffset) *ByteOffset = align ? static_cast<size_t>(dptr % align) : 0;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetAddress(unsigned int* ByteOffset, CUtexref hTexRef, CUdeviceptr_v1 dptr,
                            unsigned int bytes) {
  size_t off = 0;
  const CUresult r = impl::cuTexRefSetAddress_v2(&off, hTexRef, dptr, bytes);
  if (r == CUDA_SUCCESS && ByteOffset) *ByteOffset = static_cast<unsigned>(off);
  return r;
}

CUresult cuTexRefSetAddress2D_v3(CUtexref hTexRef, const CUDA_ARRAY_DESCRIPTOR* desc,
                                 CUdeviceptr dptr, size_t Pitch) {
  const char* fn = "cuTexRefSetAddress2D";
  if (!desc) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null descriptor");
  int dev = 0;
  if (CUresult r = core::current_device(dev, fn)) return r;
  const auto align = static_cast<CUdeviceptr>(
      core::device_attribute_or(dev, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512));
  const auto pitch_align = static_cast<size_t>(
      core::device_attribute_or(dev, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 32));
  if (align && dptr % align != 0)
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "dptr not aligned to CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT");
  if (pitch_align && Pitch % pitch_align != 0)
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "Pitch not a multiple of CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT");
  if (!core::valid_format(desc->Format) ||
      (desc->NumChannels != 1 && desc->NumChannels != 2 && desc->NumChannels != 4))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid format or channel count");
  const CUDA_ARRAY_DESCRIPTOR d = *desc;
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    r.bound = TexRef::Bound::pitch2d;
    r.address = dptr;
    r.array = nullptr;
    r.mipmapped = nullptr;
    r.format = d.Format;
    r.channels = static_cast<int>(d.NumChannels);
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetAddress2D_v2(CUtexref hTexRef, const CUDA_ARRAY_DESCRIPTOR* desc,
                                 CUdeviceptr dptr, size_t Pitch) {
  return impl::cuTexRefSetAddress2D_v3(hTexRef, desc, dptr, Pitch);
}

CUresult cuTexRefSetAddress2D(CUtexref hTexRef, const CUDA_ARRAY_DESCRIPTOR_v1* desc,
                              CUdeviceptr_v1 dptr, unsigned int Pitch) {
  if (!desc) return reject(CUDA_ERROR_INVALID_VALUE, "cuTexRefSetAddress2D", "null descriptor");
  CUDA_ARRAY_DESCRIPTOR d{};
  d.Width = desc->Width;
  d.Height = desc->Height;
  d.Format = desc->Format;
  d.NumChannels = desc->NumChannels;
  return impl::cuTexRefSetAddress2D_v3(hTexRef, &d, dptr, Pitch);
}

CUresult cuTexRefSetFormat(CUtexref hTexRef, CUarray_format fmt, int NumPackedComponents) {
  const char* fn = "cuTexRefSetFormat";
  if (!core::valid_format(fmt)) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid format");
  if (NumPackedComponents != 1 && NumPackedComponents != 2 && NumPackedComponents != 4)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "NumPackedComponents must be 1, 2 or 4");
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    r.format = fmt;
    r.channels = NumPackedComponents;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetAddressMode(CUtexref hTexRef, int dim, CUaddress_mode am) {
  const char* fn = "cuTexRefSetAddressMode";
  if (dim < 0 || dim > 2) return reject(CUDA_ERROR_INVALID_VALUE, fn, "dim must be 0, 1 or 2");
  if (am != CU_TR_ADDRESS_MODE_WRAP && am != CU_TR_ADDRESS_MODE_CLAMP &&
      am != CU_TR_ADDRESS_MODE_MIRROR && am != CU_TR_ADDRESS_MODE_BORDER)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown address mode");
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    r.address_mode[dim] = am;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetFilterMode(CUtexref hTexRef, CUfilter_mode fm) {
  const char* fn = "cuTexRefSetFilterMode";
  if (!core::valid_filter(fm)) return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown filter mode");
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    r.filter = fm;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetMipmapFilterMode(CUtexref hTexRef, CUfilter_mode fm) {
  const char* fn = "cuTexRefSetMipmapFilterMode";
  if (!core::valid_filter(fm)) return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown filter mode");
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    r.mipmap_filter = fm;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetMipmapLevelBias(CUtexref hTexRef, float bias) {
  return core::with_ref(hTexRef, "cuTexRefSetMipmapLevelBias", [&](TexRef& r) {
    r.bias = bias;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetMipmapLevelClamp(CUtexref hTexRef, float minMipmapLevelClamp,
                                     float maxMipmapLevelClamp) {
  return core::with_ref(hTexRef, "cuTexRefSetMipmapLevelClamp", [&](TexRef& r) {
    r.min_clamp = minMipmapLevelClamp;
    r.max_clamp = maxMipmapLevelClamp;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetMaxAnisotropy(CUtexref hTexRef, unsigned int maxAniso) {
  return core::with_ref(hTexRef, "cuTexRefSetMaxAnisotropy", [&](TexRef& r) {
    r.max_aniso = maxAniso;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetBorderColor(CUtexref hTexRef, float* pBorderColor) {
  const char* fn = "cuTexRefSetBorderColor";
  if (!pBorderColor) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null pBorderColor");
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    std::memcpy(r.border, pBorderColor, sizeof r.border);
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetFlags(CUtexref hTexRef, unsigned int Flags) {
  const char* fn = "cuTexRefSetFlags";
  constexpr unsigned kKnown = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES |
                              CU_TRSF_SRGB | CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION |
                              CU_TRSF_SEAMLESS_CUBEMAP;
  if (Flags & ~kKnown) return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown flags");
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    r.flags = Flags;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetAddress_v2(CUdeviceptr* pdptr, CUtexref hTexRef) {
  const char* fn = "cuTexRefGetAddress";
  if (!pdptr) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null pdptr");
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    if (r.bound != TexRef::Bound::linear && r.bound != TexRef::Bound::pitch2d)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "the reference is not bound to memory");
    *pdptr = r.address;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetAddress(CUdeviceptr_v1* pdptr, CUtexref hTexRef) {
  if (!pdptr) return reject(CUDA_ERROR_INVALID_VALUE, "cuTexRefGetAddress", "null pdptr");
  CUdeviceptr p = 0;
  const CUresult r = impl::cuTexRefGetAddress_v2(&p, hTexRef);
  if (r == CUDA_SUCCESS) *pdptr = static_cast<CUdeviceptr_v1>(p);
  return r;
}

CUresult cuTexRefGetArray(CUarray* phArray, CUtexref hTexRef) {
  const char* fn = "cuTexRefGetArray";
  if (!phArray) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null phArray");
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    if (r.bound != TexRef::Bound::array)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "the reference is not bound to an array");
    *phArray = r.array;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetMipmappedArray(CUmipmappedArray* phMipmappedArray, CUtexref hTexRef) {
  const char* fn = "cuTexRefGetMipmappedArray";
  if (!phMipmappedArray) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null phMipmappedArray");
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    if (r.bound != TexRef::Bound::mipmapped)
      return reject(CUDA_ERROR_INVALID_VALUE, fn,
                    "the reference is not bound to a mipmapped array");
    *phMipmappedArray = r.mipmapped;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetAddressMode(CUaddress_mode* pam, CUtexref hTexRef, int dim) {
  const char* fn = "cuTexRefGetAddressMode";
  if (!pam) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null pam");
  if (dim < 0 || dim > 2) return reject(CUDA_ERROR_INVALID_VALUE, fn, "dim must be 0, 1 or 2");
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    *pam = r.address_mode[dim];
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetFilterMode(CUfilter_mode* pfm, CUtexref hTexRef) {
  const char* fn = "cuTexRefGetFilterMode";
  if (!pfm) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null pfm");
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    *pfm = r.filter;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetFormat(CUarray_format* pFormat, int* pNumChannels, CUtexref hTexRef) {
  const char* fn = "cuTexRefGetFormat";
  if (!pFormat || !pNumChannels) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    *pFormat = r.format;
    *pNumChannels = r.channels;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetMipmapFilterMode(CUfilter_mode* pfm, CUtexref hTexRef) {
  const char* fn = "cuTexRefGetMipmapFilterMode";
  if (!pfm) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null pfm");
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    *pfm = r.mipmap_filter;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetMipmapLevelBias(float* pbias, CUtexref hTexRef) {
  const char* fn = "cuTexRefGetMipmapLevelBias";
  if (!pbias) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null pbias");
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    *pbias = r.bias;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetMipmapLevelClamp(float* pminMipmapLevelClamp, float* pmaxMipmapLevelClamp,
                                     CUtexref hTexRef) {
  const char* fn = "cuTexRefGetMipmapLevelClamp";
  if (!pminMipmapLevelClamp || !pmaxMipmapLevelClamp)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    *pminMipmapLevelClamp = r.min_clamp;
    *pmaxMipmapLevelClamp = r.max_clamp;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetMaxAnisotropy(int* pmaxAniso, CUtexref hTexRef) {
  const char* fn = "cuTexRefGetMaxAnisotropy";
  if (!pmaxAniso) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null pmaxAniso");
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    *pmaxAniso = static_cast<int>(r.max_aniso);
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetBorderColor(float* pBorderColor, CUtexref hTexRef) {
  const char* fn = "cuTexRefGetBorderColor";
  if (!pBorderColor) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null pBorderColor");
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    std::memcpy(pBorderColor, r.border, sizeof r.border);
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetFlags(unsigned int* pFlags, CUtexref hTexRef) {
  const char* fn = "cuTexRefGetFlags";
  if (!pFlags) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null pFlags");
  return core::with_ref(hTexRef, fn, [&](TexRef& r) {
    *pFlags = r.flags;
    return CUDA_SUCCESS;
  });
}

// No CUsurfref can exist (only cuModuleGetSurfRef made them, and no module has any).
CUresult cuSurfRefSetArray(CUsurfref hSurfRef, CUarray hArray, unsigned int Flags) {
  (void)hSurfRef;
  (void)hArray;
  (void)Flags;
  return reject(CUDA_ERROR_INVALID_HANDLE, "cuSurfRefSetArray", "not a surface reference");
}
CUresult cuSurfRefGetArray(CUarray* phArray, CUsurfref hSurfRef) {
  (void)hSurfRef;
  if (!phArray) return reject(CUDA_ERROR_INVALID_VALUE, "cuSurfRefGetArray", "null phArray");
  return reject(CUDA_ERROR_INVALID_HANDLE, "cuSurfRefGetArray", "not a surface reference");
}

CUresult cuModuleGetTexRef(CUtexref* pTexRef, CUmodule hmod, const char* name) {
  const char* fn = "cuModuleGetTexRef";
  if (!pTexRef || !name) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null argument");
  if (!core::Core::get().modules.find(reinterpret_cast<std::uintptr_t>(hmod)))
    return reject(CUDA_ERROR_INVALID_HANDLE, fn, "invalid module");
  return reject(CUDA_ERROR_NOT_FOUND, fn,
                "no texture reference of that name (CUDA 12+ compilers emit none)");
}

CUresult cuModuleGetSurfRef(CUsurfref* pSurfRef, CUmodule hmod, const char* name) {
  const char* fn = "cuModuleGetSurfRef";
  if (!pSurfRef || !name) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null argument");
  if (!core::Core::get().modules.find(reinterpret_cast<std::uintptr_t>(hmod)))
    return reject(CUDA_ERROR_INVALID_HANDLE, fn, "invalid module");
  return reject(CUDA_ERROR_NOT_FOUND, fn,
                "no surface reference of that name (CUDA 12+ compilers emit none)");
}

}  // namespace cudamux::impl
