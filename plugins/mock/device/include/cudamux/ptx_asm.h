// Operand passing of inline PTX statements in the mock's NVRTC programs (issue 15): each
// operand travels in an 8-byte slot as the bits of its PTX register type (h: 16, r: 32,
// l: 64 bits, f: float, d: double). The value is converted as nvcc does for a register
// operand: same-size values keep their bits (an int in "r", a pointer in "l"), others convert.
#pragma once
#pragma GCC system_header

namespace cudamux::ptx {

template <class T>
struct asm_is_pointer {
  static constexpr bool value = false;
};
template <class T>
struct asm_is_pointer<T*> {
  static constexpr bool value = true;
};

template <class R, class T>
__attribute__((always_inline)) inline void asm_in(unsigned long long* slot, const T& v) {
  R r;
  if constexpr (asm_is_pointer<T>::value) {
    r = static_cast<R>(reinterpret_cast<unsigned long long>(v));
  } else if constexpr (sizeof(T) == sizeof(R) && __is_trivially_copyable(T)) {
    __builtin_memcpy(&r, &v, sizeof r);
  } else {
    r = static_cast<R>(v);
  }
  __builtin_memcpy(slot, &r, sizeof r);
}

template <class R, class T>
__attribute__((always_inline)) inline void asm_out(T& out, const unsigned long long* slot) {
  R r;
  __builtin_memcpy(&r, slot, sizeof r);
  if constexpr (asm_is_pointer<T>::value) {
    out = reinterpret_cast<T>(static_cast<unsigned long long>(r));
  } else if constexpr (sizeof(T) == sizeof(R) && __is_trivially_copyable(T)) {
    __builtin_memcpy(&out, &r, sizeof r);
  } else {
    out = static_cast<T>(r);
  }
}

}  // namespace cudamux::ptx
