// PixelStore: one image-level kernel per dtype and layout, each cloned per x86-64 level.
#include "workers/pixel_store.h"

#include <algorithm>

// GCC's function multiversioning: one clone per target, chosen once by an ifunc resolver.
// The row helpers below are always inlined, so each clone holds its own vector code.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FORKFEED_VECTOR_CLONES \
  __attribute__((target_clones("default", "arch=x86-64-v2", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define FORKFEED_VECTOR_CLONES
#endif
#define FORKFEED_INLINE [[gnu::always_inline]] inline

namespace forkfeed {

Normalisation Normalisation::of(const float (&mean)[3], const float (&std)[3]) {
  Normalisation n{};
  for (int c = 0; c < 3; ++c) {
    n.scale[c] = static_cast<float>(1.0 / (255.0 * std[c]));
    n.shift[c] = static_cast<float>(-mean[c] / std[c]);
  }
  return n;
}

namespace {

// Three rows of one channel each: an NCHW sample's rows, or a mirrored row's scratch.
template <typename T>
struct Planes {
  T* c[3];
  Planes at(std::size_t offset) const { return {c[0] + offset, c[1] + offset, c[2] + offset}; }
};

// Every loop below reads and writes through __restrict pointers, with the constants in
// locals, so that GCC proves nothing aliases and vectorises each one (-fopt-info-vec:
// "loop vectorized using 64 byte vectors" in the v4 clones).

// n pixels of an interleaved RGB row to three channel rows of T: uint8 copied, float32
// normalised.
template <typename T>
FORKFEED_INLINE void deinterleave(const std::uint8_t* __restrict in, std::size_t n, const Normalisation& k,
                                  T* __restrict r, T* __restrict g, T* __restrict b) {
  if constexpr (sizeof(T) == 1) {
    for (std::size_t x = 0; x < n; ++x) {
      r[x] = in[3 * x];
      g[x] = in[3 * x + 1];
      b[x] = in[3 * x + 2];
    }
  } else {
    const float s0 = k.scale[0], s1 = k.scale[1], s2 = k.scale[2];
    const float t0 = k.shift[0], t1 = k.shift[1], t2 = k.shift[2];
    for (std::size_t x = 0; x < n; ++x) {
      r[x] = static_cast<float>(in[3 * x]) * s0 + t0;
      g[x] = static_cast<float>(in[3 * x + 1]) * s1 + t1;
      b[x] = static_cast<float>(in[3 * x + 2]) * s2 + t2;
    }
  }
}

// n pixels of an interleaved RGB row, normalised, to an interleaved float row.
FORKFEED_INLINE void normalise_interleaved(const std::uint8_t* __restrict in, std::size_t n,
                                           const Normalisation& k, float* __restrict out) {
  const float s0 = k.scale[0], s1 = k.scale[1], s2 = k.scale[2];
  const float t0 = k.shift[0], t1 = k.shift[1], t2 = k.shift[2];
  for (std::size_t x = 0; x < n; ++x) {
    out[3 * x] = static_cast<float>(in[3 * x]) * s0 + t0;
    out[3 * x + 1] = static_cast<float>(in[3 * x + 1]) * s1 + t1;
    out[3 * x + 2] = static_cast<float>(in[3 * x + 2]) * s2 + t2;
  }
}

// out[x] = in[n - 1 - x]
template <typename T>
FORKFEED_INLINE void reverse(const T* __restrict in, std::size_t n, T* __restrict out) {
  for (std::size_t x = 0; x < n; ++x) out[x] = in[n - 1 - x];
}

// Three channel rows, read from the end, to one interleaved row.
template <typename T>
FORKFEED_INLINE void interleave_reversed(const T* __restrict r, const T* __restrict g, const T* __restrict b,
                                         std::size_t n, T* __restrict out) {
  for (std::size_t x = 0; x < n; ++x) {
    out[3 * x] = r[n - 1 - x];
    out[3 * x + 1] = g[n - 1 - x];
    out[3 * x + 2] = b[n - 1 - x];
  }
}

// A height x width image, rows `step` bytes apart.
struct Image {
  const std::uint8_t* rgb;
  std::size_t step;
  std::size_t height, width;
  const std::uint8_t* row(std::size_t y) const { return rgb + step * y; }
};

// The whole sample. `scratch` holds 3 x width values of T.
template <typename T>
FORKFEED_INLINE void store_planes(Image image, bool mirror, const Normalisation& k, T* out, T* scratch) {
  const std::size_t width = image.width;
  const std::size_t plane = image.height * width;
  const Planes<T> planes{{out, out + plane, out + 2 * plane}};
  const Planes<T> row_scratch{{scratch, scratch + width, scratch + 2 * width}};
  for (std::size_t y = 0; y < image.height; ++y) {
    const std::uint8_t* in = image.row(y);
    const Planes<T> row = planes.at(width * y);
    if (!mirror) {
      deinterleave(in, width, k, row.c[0], row.c[1], row.c[2]);
      continue;
    }
    deinterleave(in, width, k, row_scratch.c[0], row_scratch.c[1], row_scratch.c[2]);
    for (int c = 0; c < 3; ++c) reverse(row_scratch.c[c], width, row.c[c]);
  }
}

template <typename T>
FORKFEED_INLINE void store_interleaved(Image image, bool mirror, const Normalisation& k, T* out, T* scratch) {
  const std::size_t width = image.width;
  const Planes<T> row_scratch{{scratch, scratch + width, scratch + 2 * width}};
  for (std::size_t y = 0; y < image.height; ++y) {
    const std::uint8_t* in = image.row(y);
    T* row = out + 3 * width * y;
    if (mirror) {
      deinterleave(in, width, k, row_scratch.c[0], row_scratch.c[1], row_scratch.c[2]);
      interleave_reversed<T>(row_scratch.c[0], row_scratch.c[1], row_scratch.c[2], width, row);
    } else if constexpr (sizeof(T) == 1) {
      std::copy_n(in, 3 * width, row);
    } else {
      normalise_interleaved(in, width, k, row);
    }
  }
}

FORKFEED_VECTOR_CLONES
void u8_nchw(Image image, bool mirror, std::uint8_t* out, std::uint8_t* scratch) {
  store_planes(image, mirror, Normalisation{}, out, scratch);
}

FORKFEED_VECTOR_CLONES
void u8_nhwc(Image image, bool mirror, std::uint8_t* out, std::uint8_t* scratch) {
  store_interleaved(image, mirror, Normalisation{}, out, scratch);
}

FORKFEED_VECTOR_CLONES
void f32_nchw(Image image, bool mirror, const Normalisation& k, float* out, float* scratch) {
  store_planes(image, mirror, k, out, scratch);
}

FORKFEED_VECTOR_CLONES
void f32_nhwc(Image image, bool mirror, const Normalisation& k, float* out, float* scratch) {
  store_interleaved(image, mirror, k, out, scratch);
}

}  // namespace

PixelStore::PixelStore(DType dtype, Layout layout, const Normalisation& normalisation)
    : dtype_(dtype), layout_(layout), normalisation_(normalisation) {}

void PixelStore::write(const cv::Mat& sample, bool mirror, std::byte* out) {
  const Image image{sample.ptr<std::uint8_t>(), sample.step, static_cast<std::size_t>(sample.rows),
                    static_cast<std::size_t>(sample.cols)};
  scratch_.resize(3 * image.width);  // floats: room for the uint8 rows too
  if (dtype_ == DType::kUint8) {
    auto* bytes = reinterpret_cast<std::uint8_t*>(out);
    auto* scratch = reinterpret_cast<std::uint8_t*>(scratch_.data());
    (layout_ == Layout::kNchw ? u8_nchw : u8_nhwc)(image, mirror, bytes, scratch);
    return;
  }
  auto* floats = reinterpret_cast<float*>(out);
  (layout_ == Layout::kNchw ? f32_nchw : f32_nhwc)(image, mirror, normalisation_, floats, scratch_.data());
}

}  // namespace forkfeed
