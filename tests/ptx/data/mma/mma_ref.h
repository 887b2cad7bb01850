// Host side of the warp-matrix kernels of mma_kernels.cu: the cases, their inputs and a plain
// reference matmul (double precision; inputs chosen so every result is exact unless a case is
// run with random data). Plain C++17, shared by tests/nvcc/tensor_cores.cu (nvcc) and
// tests/ptx/mma_test.cpp (g++).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace mma_ref {

inline float h2f(uint16_t h) {
  const uint32_t s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0    ? std::ldexp(static_cast<float>(m), -24)
            : e == 31 ? (m ? NAN : INFINITY)
                      : std::ldexp(static_cast<float>(m | 1024), static_cast<int>(e) - 25);
  return s ? -v : v;
}
// float -> half, round to nearest even (finite values; overflow gives infinity).
inline uint16_t f2h(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const float a = std::fabs(f);
  if (a >= 65520.0f) return static_cast<uint16_t>(sign | 0x7c00);
  // Scale so the half's last place is 1, round to an integer (the FPU rounds to nearest even).
  int e;
  std::frexp(a, &e);                                  // a = m * 2^e, m in [0.5, 1)
  const int q = e - 11 < -24 ? -24 : e - 11;          // exponent of the last place
  const float m = std::nearbyint(std::ldexp(a, -q));  // exact integer <= 2048
  const uint32_t mi = static_cast<uint32_t>(m);
  if (mi == 0) return sign;
  // Re-encode mi * 2^q.
  int e2;
  std::frexp(static_cast<float>(mi), &e2);
  const int exp = q + e2 - 1;                              // unbiased exponent of the value
  if (exp < -14) return static_cast<uint16_t>(sign | mi);  // subnormal: mi * 2^-24
  // mi may have rounded up to 2048 (e2 == 12): then it is a power of two and the fraction 0.
  const uint32_t frac = (e2 <= 11 ? mi << (11 - e2) : mi >> (e2 - 11)) & 0x3ffu;
  return static_cast<uint16_t>(sign | static_cast<uint32_t>(exp + 15) << 10 | frac);
}
inline float bf2f(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t f2bf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

enum Elem { H, BF, F, TF, D, S8, U8, I32 };
inline unsigned size_of(Elem e) {
  return e == H || e == BF ? 2 : e == D ? 8 : e == S8 || e == U8 ? 1 : 4;
}
inline double get(Elem e, const std::vector<uint8_t>& v, size_t i) {
  const uint8_t* p = v.data() + i * size_of(e);
  uint16_t h;
  float f;
  double d;
  int32_t s;
  switch (e) {
    case H:
      std::memcpy(&h, p, 2);
      return h2f(h);
    case BF:
      std::memcpy(&h, p, 2);
      return bf2f(h);
    case F:
    case TF:
      std::memcpy(&f, p, 4);
      return f;
    case D:
      std::memcpy(&d, p, 8);
      return d;
    case S8:
      return static_cast<int8_t>(*p);
    case U8:
      return *p;
    default:
      std::memcpy(&s, p, 4);
      return s;
  }
}
inline void put(Elem e, std::vector<uint8_t>& v, size_t i, double x) {
  uint8_t* p = v.data() + i * size_of(e);
  if (e == H) {
    const uint16_t h = f2h(static_cast<float>(x));
    std::memcpy(p, &h, 2);
  } else if (e == BF) {
    const uint16_t h = f2bf(static_cast<float>(x));
    std::memcpy(p, &h, 2);
  } else if (e == F || e == TF) {
    const float f = static_cast<float>(x);
    std::memcpy(p, &f, 4);
  } else if (e == D) {
    std::memcpy(p, &x, 8);
  } else if (e == S8 || e == U8) {
    *p = static_cast<uint8_t>(static_cast<int>(x));
  } else {
    const int32_t s = static_cast<int32_t>(static_cast<int64_t>(x));
    std::memcpy(p, &s, 4);
  }
}

// One kernel of mma_kernels.cu: D (M x N) = A (M x K) * B (K x N) + c_scale * C per tile.
struct Case {
  const char* kernel;
  Elem a, b, c, d;
  unsigned M, N, K;
  bool a_col, b_col, cd_col;  // column-major storage
  double c_scale;
  bool satfinite;
  bool raw;  // ldmatrix_raw / movmatrix_raw: no matmul (see raw_reference)
};
constexpr unsigned kTiles = 4;  // every kernel runs as 2 blocks of 64 threads: 4 warps, 4 tiles
constexpr unsigned kBlocks = 2, kThreads = 64;

inline const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"mma_f16_f32_k16", H, H, F, F, 16, 8, 16, false, false, false, 1, false, false},
      {"mma_f16_f16_k16", H, H, H, H, 16, 8, 16, false, false, false, 1, false, false},
      {"mma_f16_f32_k8", H, H, F, F, 16, 8, 8, false, false, false, 1, false, false},
      {"mma_bf16_f32_k16", BF, BF, F, F, 16, 8, 16, false, false, false, 1, false, false},
      {"mma_tf32_k8", TF, TF, F, F, 16, 8, 8, false, false, false, 1, false, false},
      {"mma_tf32_k4", TF, TF, F, F, 16, 8, 4, false, false, false, 1, false, false},
      {"mma_f64", D, D, D, D, 8, 8, 4, false, false, false, 1, false, false},
      {"mma_s8_k32_satfinite", S8, S8, I32, I32, 16, 8, 32, false, false, false, 1, true, false},
      {"mma_u8_k16", U8, U8, I32, I32, 16, 8, 16, false, false, false, 1, false, false},
      {"ldmatrix_mma", H, H, F, F, 16, 8, 16, false, false, false, 1, false, false},
      {"wmma_f16_f32_rowcol", H, H, F, F, 16, 16, 16, false, true, false, 2, false, false},
      {"wmma_f16_f16_colrow", H, H, H, H, 16, 16, 16, true, false, true, 2, false, false},
      {"wmma_bf16_f32_rowrow", BF, BF, F, F, 16, 16, 16, false, false, false, 2, false, false},
      {"wmma_tf32_f32_rowrow", TF, TF, F, F, 16, 16, 8, false, false, false, 2, false, false},
      {"ldmatrix_raw", U8, U8, U8, I32, 0, 0, 0, false, false, false, 0, false, true},
      {"movmatrix_raw", U8, U8, U8, I32, 0, 0, 0, false, false, false, 0, false, true},
  };
  return c;
}

struct Buffers {
  std::vector<uint8_t> a, b, c, d;
};

inline uint32_t lcg(uint64_t& s) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<uint32_t>(s >> 33);
}

// Inputs of a case. random = false: small integers and halves (every product and sum exact in
// every type involved, so any accumulation order gives the same bits); true: uniform in [-1, 1).
inline Buffers inputs(const Case& k, bool random, uint64_t seed) {
  Buffers b;
  if (k.raw) {
    const size_t words = k.kernel[0] == 'l' ? 128 : 32;  // ldmatrix: 256 halves per tile
    b.a.resize(kTiles * words * 4);
    for (auto& x : b.a) x = static_cast<uint8_t>(lcg(seed));
    b.b.resize(4);
    b.c.resize(4);
    b.d.assign(kTiles * 32 * (k.kernel[0] == 'l' ? 11 : 1) * 4, 0);
    return b;
  }
  const size_t na = kTiles * k.M * k.K, nb = kTiles * k.K * k.N, nc = kTiles * k.M * k.N;
  b.a.resize(na * size_of(k.a));
  b.b.resize(nb * size_of(k.b));
  b.c.resize(nc * size_of(k.c));
  b.d.assign(nc * size_of(k.d), 0);
  auto val = [&](Elem e, size_t i, bool isc) -> double {
    if (e == S8) return static_cast<int>(lcg(seed) % 256) - 128;
    if (e == U8) return lcg(seed) % 256;
    if (e == I32) {
      // Near the ends of the range on some elements: .satfinite clamps, u8 wraps.
      const int64_t small = static_cast<int64_t>(lcg(seed) % 2001) - 1000;
      return i % 3 == 0   ? 2147483647.0 - 1000 + small
             : i % 3 == 1 ? -2147483648.0 + 1000 + small
                          : static_cast<double>(small);
    }
    if (random) return (static_cast<double>(lcg(seed) % 65536) / 32768.0) - 1.0;
    const double q = static_cast<double>(static_cast<int>(lcg(seed) % 17) - 8) / 2;  // -4 .. 4
    return isc ? q * 8 : q;
  };
  for (size_t i = 0; i < na; ++i) put(k.a, b.a, i, val(k.a, i, false));
  for (size_t i = 0; i < nb; ++i) put(k.b, b.b, i, val(k.b, i, false));
  for (size_t i = 0; i < nc; ++i) put(k.c, b.c, i, val(k.c, i, true));
  return b;
}

// The expected D of a matmul case (products and sums in double / int64; exact for the
// non-random inputs), and the largest error a correct result may have (0 when exact).
inline void reference(const Case& k, const Buffers& in, std::vector<uint8_t>& d,
                      std::vector<double>& tol) {
  d.assign(in.d.size(), 0);
  tol.assign(kTiles * k.M * k.N, 0);
  for (unsigned t = 0; t < kTiles; ++t) {
    const size_t oa = t * k.M * k.K, ob = t * k.K * k.N, oc = t * k.M * k.N;
    for (unsigned i = 0; i < k.M; ++i)
      for (unsigned n = 0; n < k.N; ++n) {
        const size_t ci = oc + (k.cd_col ? n * k.M + i : i * k.N + n);
        if (k.d == I32) {
          int64_t s = static_cast<int64_t>(get(k.c, in.c, ci));
          for (unsigned kk = 0; kk < k.K; ++kk)
            s += static_cast<int64_t>(get(k.a, in.a, oa + i * k.K + kk)) *
                 static_cast<int64_t>(get(k.b, in.b, ob + kk * k.N + n));
          if (k.satfinite) s = s > 2147483647 ? 2147483647 : s < -2147483648LL ? -2147483648LL : s;
          const int32_t w = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(s)));
          std::memcpy(d.data() + ci * 4, &w, 4);
          continue;
        }
        double s = k.c_scale * get(k.c, in.c, ci), mag = std::fabs(s);
        for (unsigned kk = 0; kk < k.K; ++kk) {
          const size_t ai = oa + (k.a_col ? kk * k.M + i : i * k.K + kk);
          const size_t bi = ob + (k.b_col ? n * k.K + kk : kk * k.N + n);
          const double p = get(k.a, in.a, ai) * get(k.b, in.b, bi);
          s += p;
          mag += std::fabs(p);
        }
        put(k.d, d, ci, s);
        // Random inputs: a GPU may accumulate in another order and with truncation; allow a
        // few units of f32's (or f16's) last place on the sum of magnitudes.
        tol[ci] = mag * (k.d == H ? 1.0 / 512 : 1.0 / (1 << 20));
      }
  }
}

// ldmatrix_raw / movmatrix_raw: the fragments the PTX ISA defines (g = lane / 4, t = lane % 4).
inline void raw_reference(const Case& k, const Buffers& in, std::vector<uint8_t>& d) {
  d.assign(in.d.size(), 0);
  auto half = [&](size_t i) {
    uint16_t h;
    std::memcpy(&h, in.a.data() + 2 * i, 2);
    return static_cast<uint32_t>(h);
  };
  for (unsigned tile = 0; tile < kTiles; ++tile)
    for (unsigned l = 0; l < 32; ++l) {
      const unsigned g = l / 4, t = l % 4;
      if (k.kernel[0] == 'l') {
        const size_t base = tile * 256;  // row r of the 32 rows: halves base + 8r ...
        uint32_t o[11];
        for (unsigned m = 0; m < 4; ++m) {
          const uint32_t w =
              half(base + (8 * m + g) * 8 + 2 * t) | half(base + (8 * m + g) * 8 + 2 * t + 1) << 16;
          o[m] = w;
          if (m < 2) o[4 + m] = w;
          if (m == 0) o[6] = w;
          o[7 + m] = half(base + (8 * m + 2 * t) * 8 + g) | half(base + (8 * m + 2 * t + 1) * 8 + g)
                                                                << 16;
        }
        std::memcpy(d.data() + (tile * 32 + l) * 44, o, 44);
      } else {
        // Element (r, c) of the 8x8 matrix is half c & 1 of lane r * 4 + c / 2's word.
        auto el = [&](unsigned r, unsigned c) {
          return half(tile * 64 + (r * 4 + c / 2) * 2 + (c & 1));
        };
        const uint32_t w = el(2 * t, g) | el(2 * t + 1, g) << 16;
        std::memcpy(d.data() + (tile * 32 + l) * 4, &w, 4);
      }
    }
}

inline uint64_t fnv1a(const std::vector<uint8_t>& v) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t x : v) h = (h ^ x) * 1099511628211ull;
  return h;
}

}  // namespace mma_ref
