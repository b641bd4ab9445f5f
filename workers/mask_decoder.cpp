// decode_mask: libpng's classic API with no colour transformation (the one way to keep a
// palette PNG's indices: OpenCV and libpng's simplified API both expand them to colours),
// with its pixels inflated by libdeflate and unfiltered here where they are a byte each
// and not interlaced (most masks: twice zlib's speed); and .npy through its header parser.
#include "workers/mask_decoder.h"

#include <libdeflate.h>
#include <png.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <csetjmp>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/printable.h"
#include "formats/npy_header.h"

namespace forkfeed {
namespace {

constexpr std::string_view kWhatMaskIs =
    "a mask holds one class id per pixel: a PNG of grey or palette indices, or a 2-D uint8 or uint16 .npy";

std::uint32_t big_endian_u32(const std::byte* p) {
  return std::uint32_t{static_cast<std::uint8_t>(p[0])} << 24 |
         std::uint32_t{static_cast<std::uint8_t>(p[1])} << 16 |
         std::uint32_t{static_cast<std::uint8_t>(p[2])} << 8 | std::uint32_t{static_cast<std::uint8_t>(p[3])};
}

// Every chunk's CRC, over the whole file, up to its IEND: what lets libpng stop at the last
// row a sample reads and skip zlib's Adler-32 without a corrupt or truncated byte ever
// becoming a class id (PNG's CRCs cover every byte of the compressed data). `idat` gets the
// data of the IDAT chunks, in order.
Status check_chunks(FileBytes bytes, std::vector<FileBytes>& idat) {
  idat.clear();
  constexpr std::size_t kSignature = 8, kFraming = 12;  // length, type, CRC
  for (std::size_t at = kSignature; at + kFraming <= bytes.size();) {
    const std::uint32_t length = big_endian_u32(bytes.data() + at);
    const std::string type(reinterpret_cast<const char*>(bytes.data() + at + 4), 4);
    const std::string where = "chunk '" + printable(type) + "' at byte " + std::to_string(at);
    if (length > bytes.size() - at - kFraming)
      return Status::BadData("is a broken PNG: its " + where + " runs past the end");
    const auto* covered = reinterpret_cast<const Bytef*>(bytes.data() + at + 4);
    if (crc32_z(crc32_z(0, nullptr, 0), covered, length + 4) !=
        big_endian_u32(bytes.data() + at + 8 + length))
      return Status::BadData("is a broken PNG: its " + where + " fails its CRC");
    if (type == "IEND") return Status::Ok();
    if (type == "IDAT") idat.push_back(bytes.subspan(at + 8, length));
    at += kFraming + length;
  }
  return Status::BadData("is a broken PNG: it ends before its IEND chunk (truncated?)");
}

struct PngInput {
  FileBytes bytes;
  std::size_t at = 0;
  char error[200] = {};
};

void read_bytes(png_structp png, png_bytep to, png_size_t n) {
  auto* in = static_cast<PngInput*>(png_get_io_ptr(png));
  if (n > in->bytes.size() - in->at) png_error(png, "the file ends early");
  std::memcpy(to, in->bytes.data() + in->at, n);
  in->at += n;
}

[[noreturn]] void on_error(png_structp png, png_const_charp message) {
  auto* in = static_cast<PngInput*>(png_get_error_ptr(png));
  std::strncpy(in->error, message, sizeof in->error - 1);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}

// Owns libpng's read and info structs.
class PngReader {
 public:
  explicit PngReader(PngInput& input)
      : png_(png_create_read_struct(PNG_LIBPNG_VER_STRING, &input, on_error, on_warning)),
        info_(png_ != nullptr ? png_create_info_struct(png_) : nullptr) {
    if (png_ == nullptr) return;
    png_set_read_fn(png_, &input, read_bytes);
    // check_chunks() checked every CRC, over every byte.
    png_set_crc_action(png_, PNG_CRC_QUIET_USE, PNG_CRC_QUIET_USE);
    png_set_option(png_, PNG_IGNORE_ADLER32, PNG_OPTION_ON);
  }
  ~PngReader() { png_destroy_read_struct(&png_, info_ != nullptr ? &info_ : nullptr, nullptr); }
  PngReader(const PngReader&) = delete;
  PngReader& operator=(const PngReader&) = delete;
  png_structp png() const { return png_; }
  png_infop info() const { return info_; }

 private:
  png_structp png_;
  png_infop info_;
};

struct PngHeader {
  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0, interlace = 0;
};

// The header, with the transformations a mask takes: fewer than 8 bits unpacked to a byte
// each (values unchanged: no scaling of grey), interlacing undone. Returns false after a
// libpng error (in input.error). No object with a destructor lives across the setjmp.
bool read_png_header(const PngReader& r, PngHeader& h) {
  if (setjmp(png_jmpbuf(r.png())) != 0) return false;
  png_read_info(r.png(), r.info());
  png_get_IHDR(r.png(), r.info(), &h.width, &h.height, &h.bit_depth, &h.color_type, &h.interlace, nullptr,
               nullptr);
  if (h.bit_depth < 8) png_set_packing(r.png());
  if (h.bit_depth == 16) png_set_swap(r.png());  // the host's order: little-endian (below)
  png_set_interlace_handling(r.png());
  png_read_update_info(r.png(), r.info());
  return true;
}

// Reads the first `count` rows (all of an interlaced image, whose passes span every row).
bool read_png_rows(const PngReader& r, png_bytepp rows, png_uint_32 count, bool interlaced) {
  if (setjmp(png_jmpbuf(r.png())) != 0) return false;
  if (interlaced) {
    png_read_image(r.png(), rows);
  } else {
    for (png_uint_32 y = 0; y < count; ++y) png_read_row(r.png(), rows[y], nullptr);
  }
  return true;
}

std::string_view colour_type_name(int type) {
  switch (type) {
    case PNG_COLOR_TYPE_GRAY_ALPHA: return "grey with alpha";
    case PNG_COLOR_TYPE_RGB: return "RGB";
    case PNG_COLOR_TYPE_RGB_ALPHA: return "RGBA";
    default: return "of an unknown colour type";
  }
}

// Unless a `width` x `height` mask is its image's `size`, the error that says so.
Status check_size(std::uint64_t width, std::uint64_t height, cv::Size size) {
  if (width == static_cast<std::uint64_t>(size.width) && height == static_cast<std::uint64_t>(size.height))
    return Status::Ok();
  return Status::BadData("the mask is " + std::to_string(width) + "x" + std::to_string(height) +
                         ", its image " + std::to_string(size.width) + "x" + std::to_string(size.height) +
                         "; a mask has its image's size");
}

// The IDAT stream of an 8- or 16-bit, non-interlaced `out.cols` x `out.rows` PNG inflated
// whole (libdeflate has no partial inflate) and its rows unfiltered into `out` down to row
// `rows` - 1; 16-bit samples turned from PNG's big-endian into the host's order.
Status inflate_rows(const std::vector<FileBytes>& idat, int rows, cv::Mat& out) {
  thread_local std::vector<std::uint8_t> joined, raw;  // reused across masks
  FileBytes stream = idat.empty() ? FileBytes{} : idat.front();
  if (idat.size() > 1) {
    joined.clear();
    for (FileBytes chunk : idat) {
      const auto* p = reinterpret_cast<const std::uint8_t*>(chunk.data());
      joined.insert(joined.end(), p, p + chunk.size());
    }
    stream = std::as_bytes(std::span(joined));
  }
  const int pixel = static_cast<int>(out.elemSize());   // bytes a pixel: the filters' left neighbour
  const int n = out.cols * pixel;                       // bytes a row
  const auto stride = static_cast<std::size_t>(n) + 1;  // a filter byte, then the row
  raw.resize(stride * static_cast<std::size_t>(out.rows));
  struct Free {
    void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
  };
  thread_local std::unique_ptr<libdeflate_decompressor, Free> inflater(libdeflate_alloc_decompressor());
  if (inflater == nullptr) return Status::ResourceExhausted("cannot start libdeflate: out of memory");
  const libdeflate_result inflated = libdeflate_zlib_decompress(inflater.get(), stream.data(), stream.size(),
                                                                raw.data(), raw.size(), nullptr);
  if (inflated != LIBDEFLATE_SUCCESS) {
    return Status::BadData(inflated == LIBDEFLATE_SHORT_OUTPUT || inflated == LIBDEFLATE_INSUFFICIENT_SPACE
                               ? "is a broken PNG: its pixel data does not hold its rows"
                               : "is a broken PNG: its pixel data does not inflate");
  }
  const std::vector<std::uint8_t> zeros(stride, 0);
  const std::uint8_t* prior = zeros.data() + 1;  // the row above the first is zeros
  for (int y = 0; y < rows; ++y) {
    const std::uint8_t* in = raw.data() + y * stride;
    std::uint8_t* row = out.ptr<std::uint8_t>(y);
    // PNG's five filters, byte by byte: a the byte a pixel to the left, b the one above, c
    // above-left.
    const auto left = [&](int x) { return x >= pixel ? row[x - pixel] : 0; };
    const auto above_left = [&](int x) { return x >= pixel ? prior[x - pixel] : 0; };
    switch (in[0]) {
      case 0: std::memcpy(row, in + 1, static_cast<std::size_t>(n)); break;
      case 1:
        for (int x = 0; x < n; ++x) row[x] = static_cast<std::uint8_t>(in[1 + x] + left(x));
        break;
      case 2:
        for (int x = 0; x < n; ++x) row[x] = static_cast<std::uint8_t>(in[1 + x] + prior[x]);
        break;
      case 3:
        for (int x = 0; x < n; ++x)
          row[x] = static_cast<std::uint8_t>(in[1 + x] + ((left(x) + prior[x]) >> 1));
        break;
      case 4:
        for (int x = 0; x < n; ++x) {
          const int a = left(x), b = prior[x], c = above_left(x);
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          row[x] = static_cast<std::uint8_t>(in[1 + x] + (pa <= pb && pa <= pc ? a : pb <= pc ? b : c));
        }
        break;
      default: return Status::BadData("is a broken PNG: row " + std::to_string(y) + " has an unknown filter");
    }
    prior = row;
  }
  static_assert(std::endian::native == std::endian::little, "16-bit masks are swapped from big-endian");
  if (pixel == 2) {  // after every row is unfiltered: each one is the next one's prior
    for (int y = 0; y < rows; ++y) {
      auto* row = out.ptr<std::uint16_t>(y);
      for (int x = 0; x < out.cols; ++x) row[x] = static_cast<std::uint16_t>(row[x] << 8 | row[x] >> 8);
    }
  }
  return Status::Ok();
}

Status decode_png(FileBytes bytes, cv::Size size, cv::Mat& storage, cv::Mat& out, int last_row) {
  thread_local std::vector<FileBytes> idat;
  if (Status s = check_chunks(bytes, idat); !s.ok()) return s;
  PngInput input{bytes};
  const PngReader reader(input);
  if (reader.info() == nullptr) return Status::ResourceExhausted("cannot start libpng: out of memory");
  PngHeader h;
  if (!read_png_header(reader, h)) return Status::BadData("is a broken PNG: " + std::string(input.error));
  if (h.color_type != PNG_COLOR_TYPE_GRAY && h.color_type != PNG_COLOR_TYPE_PALETTE) {
    return Status::BadData("is a PNG " + std::string(colour_type_name(h.color_type)) +
                           ", colours, not class ids; " + std::string(kWhatMaskIs));
  }
  if (Status s = check_size(h.width, h.height, size); !s.ok()) return s;
  out = reuse_pixels(storage, size.height, size.width, h.bit_depth == 16 ? CV_16UC1 : CV_8UC1);
  const auto count =
      static_cast<png_uint_32>(std::clamp<std::int64_t>(std::int64_t{last_row} + 1, 0, h.height));
  if (h.bit_depth >= 8 && h.interlace == PNG_INTERLACE_NONE)
    return inflate_rows(idat, static_cast<int>(count), out);
  std::vector<png_bytep> rows(h.height);
  for (png_uint_32 y = 0; y < h.height; ++y) rows[y] = out.ptr<png_byte>(static_cast<int>(y));
  if (!read_png_rows(reader, rows.data(), count, h.interlace != PNG_INTERLACE_NONE))
    return Status::BadData("is a broken PNG: " + std::string(input.error));
  return Status::Ok();
}

Status decode_npy(FileBytes bytes, cv::Size size, cv::Mat& storage, cv::Mat& out) {
  const std::string_view member(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  auto header = parse_npy_header(member, member.size());
  if (!header.ok()) return header.status();
  const bool wide = header->dtype == ElementType::kUint16;
  if ((header->dtype != ElementType::kUint8 && !wide) || header->shape.size() != 2) {
    return Status::BadData("is a .npy of " + std::string(to_string(header->dtype)) + " " +
                           npy_shape_text(header->shape) + "; " + std::string(kWhatMaskIs));
  }
  const auto height = static_cast<std::uint64_t>(header->shape[0]);
  const auto width = static_cast<std::uint64_t>(header->shape[1]);
  if (Status s = check_size(width, height, size); !s.ok()) return s;
  out = reuse_pixels(storage, size.height, size.width, wide ? CV_16UC1 : CV_8UC1);
  if (!out.empty()) std::memcpy(out.data, bytes.data() + header->data_offset, header->data_bytes);
  return Status::Ok();
}

}  // namespace

Status decode_mask(FileBytes bytes, cv::Size size, int type, cv::Mat& storage, cv::Mat& mask, int last_row) {
  const auto starts = [&](std::string_view magic) {
    return bytes.size() >= magic.size() && std::memcmp(bytes.data(), magic.data(), magic.size()) == 0;
  };
  cv::Mat decoded;
  Status s = starts("\x89PNG\r\n\x1a\n") ? decode_png(bytes, size, storage, decoded, last_row)
             : starts("\x93NUMPY")
                 ? decode_npy(bytes, size, storage, decoded)
                 : Status::BadData("is neither a PNG nor a .npy; " + std::string(kWhatMaskIs));
  if (!s.ok() || decoded.type() == type) {
    mask = decoded;
    return s;
  }
  if (type == CV_8UC1) {
    return Status::BadData("holds 16-bit ids and the field uint8 ones: declare it \"mask(dtype=uint16)\"");
  }
  // 8-bit ids in a uint16 field: widened, the rows decoded.
  thread_local cv::Mat wide_storage;
  mask = reuse_pixels(wide_storage, size.height, size.width, CV_16UC1);
  const auto rows = static_cast<int>(std::clamp<std::int64_t>(std::int64_t{last_row} + 1, 0, size.height));
  decoded.rowRange(0, rows).convertTo(mask.rowRange(0, rows), CV_16U);
  return Status::Ok();
}

}  // namespace forkfeed
