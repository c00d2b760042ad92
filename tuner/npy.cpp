#include "tuner/npy.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "profile/output_file.h"

namespace flashtune::npy {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;
// NumPy pads the header so that the data starts on a 64-byte boundary; we do the same.
constexpr std::size_t kAlignment = 64;

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw NpyError(path + ": " + what); }

// Position just after `key` ('descr', ...) and the colon that follows it, or npos.
std::size_t value_start(const std::string& dict, const std::string& key) {
  for (const char quote : {'\'', '"'}) {
    const std::string quoted = std::string(1, quote) + key + quote;
    std::size_t at = dict.find(quoted);
    if (at == std::string::npos) continue;
    at = dict.find(':', at + quoted.size());
    if (at == std::string::npos) return std::string::npos;
    ++at;
    while (at < dict.size() && std::isspace(static_cast<unsigned char>(dict[at]))) ++at;
    return at;
  }
  return std::string::npos;
}

Header parse_dict(const std::string& path, const std::string& dict) {
  Header h;
  std::size_t at = value_start(dict, "descr");
  if (at == std::string::npos || at >= dict.size() || (dict[at] != '\'' && dict[at] != '"'))
    fail(path, "header has no 'descr' string");
  const std::size_t end = dict.find(dict[at], at + 1);
  if (end == std::string::npos) fail(path, "unterminated 'descr' in header");
  h.descr = dict.substr(at + 1, end - at - 1);

  at = value_start(dict, "fortran_order");
  if (at == std::string::npos) fail(path, "header has no 'fortran_order'");
  if (dict.compare(at, 4, "True") == 0)
    h.fortran_order = true;
  else if (dict.compare(at, 5, "False") == 0)
    h.fortran_order = false;
  else
    fail(path, "'fortran_order' is neither True nor False");

  at = value_start(dict, "shape");
  if (at == std::string::npos || at >= dict.size() || dict[at] != '(') fail(path, "header has no 'shape' tuple");
  const std::size_t close = dict.find(')', at);
  if (close == std::string::npos) fail(path, "unterminated 'shape' tuple in header");
  std::string dims = dict.substr(at + 1, close - at - 1);
  std::size_t pos = 0;
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  while (pos < dims.size()) {
    while (pos < dims.size() && (std::isspace(static_cast<unsigned char>(dims[pos])) || dims[pos] == ',')) ++pos;
    if (pos >= dims.size()) break;
    if (!std::isdigit(static_cast<unsigned char>(dims[pos]))) fail(path, "bad 'shape' " + dict.substr(at, close - at + 1));
    std::size_t value = 0;
    while (pos < dims.size() && std::isdigit(static_cast<unsigned char>(dims[pos]))) {
      const auto digit = static_cast<std::size_t>(dims[pos] - '0');
      // Checked: (18446744073709551618, 64, 64) must not wrap around to (2, 64, 64).
      if (value > (kMax - digit) / 10) fail(path, "'shape' " + dict.substr(at, close - at + 1) + " has a dimension above 2^64-1");
      value = value * 10 + digit;
      ++pos;
    }
    // Python 2 wrote long integers with an L suffix.
    if (pos < dims.size() && dims[pos] == 'L') ++pos;
    h.shape.push_back(value);
  }
  return h;
}

// Opens a regular file and reports its size: a FIFO would block the read forever, and every
// length in the header is checked against the size before it is trusted.
std::ifstream open_for_reading(const std::string& path, std::uint64_t& size) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) throw NpyError("missing file " + path);
  if (st.type() == fs::file_type::directory) fail(path, "is a folder, not a .npy file");
  if (ec || st.type() != fs::file_type::regular) fail(path, "not a regular file");
  size = fs::file_size(path, ec);
  if (ec) fail(path, "cannot read its size: " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open for reading");
  return in;
}

void write_array(const std::string& path, const std::vector<std::size_t>& shape, const char* descr,
                 const void* data, std::size_t element_bytes) {
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " +
                     shape_string(shape) + ", }";
  // Version 1 stores the header length in 2 bytes; longer headers need version 2 (4 bytes).
  int version = 1;
  std::size_t preamble = kMagicLen + 2 + 2;
  std::size_t total = preamble + dict.size() + 1;
  if (((total + kAlignment - 1) / kAlignment) * kAlignment - preamble > std::numeric_limits<std::uint16_t>::max()) {
    version = 2;
    preamble = kMagicLen + 2 + 4;
    total = preamble + dict.size() + 1;
  }
  const std::size_t padded = ((total + kAlignment - 1) / kAlignment) * kAlignment;
  dict.append(padded - total, ' ');
  dict.push_back('\n');
  const std::size_t header_len = dict.size();

  // Written beside the target and renamed over it when complete (profile/output_file.h): a failed
  // write (full disk, ulimit -f) leaves the previous file as it was, a link is followed, the mode
  // kept, a read-only file refused.
  const auto write_to = [&](const std::string& temp) {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw NpyError(path + ": cannot open for writing");
    out.write(kMagic, kMagicLen);
    out.put(static_cast<char>(version));
    out.put(0);
    if (version == 1) {
      const unsigned char len[2] = {static_cast<unsigned char>(header_len & 0xFF),
                                    static_cast<unsigned char>((header_len >> 8) & 0xFF)};
      out.write(reinterpret_cast<const char*>(len), 2);
    } else {
      unsigned char len[4];
      for (int i = 0; i < 4; ++i) len[i] = static_cast<unsigned char>((header_len >> (8 * i)) & 0xFF);
      out.write(reinterpret_cast<const char*>(len), 4);
    }
    out.write(dict.data(), static_cast<std::streamsize>(dict.size()));
    const std::size_t bytes = element_count(shape) * element_bytes;
    if (bytes > 0) out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
    out.close();
    if (!out) throw NpyError(path + ": write failed (the previous file, if any, is unchanged)");
  };
  try {
    StagedOutput::written_by(path, write_to).commit();
  } catch (const OutputError& e) {
    throw NpyError(std::string(e.what()) + " (the previous file, if any, is unchanged)");
  }
}

}  // namespace

std::string shape_string(const std::vector<std::size_t>& shape) {
  std::ostringstream s;
  s << '(';
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s << ", ";
    s << shape[i];
  }
  if (shape.size() == 1) s << ',';
  s << ')';
  return s.str();
}

std::size_t element_count(const std::vector<std::size_t>& shape) {
  std::size_t n = 1;
  for (std::size_t s : shape) n *= s;
  return n;
}

std::optional<std::size_t> checked_byte_count(const std::vector<std::size_t>& shape, std::size_t element_bytes) {
  std::size_t n = element_bytes;
  for (std::size_t s : shape) {
    if (s != 0 && n > std::numeric_limits<std::size_t>::max() / s) return std::nullopt;
    n *= s;
  }
  return n;
}

Header read_header(std::istream& in, std::uint64_t file_size, const std::string& path) {
  char magic[kMagicLen + 2] = {};
  in.read(magic, sizeof magic);
  if (in.gcount() != static_cast<std::streamsize>(sizeof magic) || std::memcmp(magic, kMagic, kMagicLen) != 0)
    fail(path, "bad magic (not a .npy file)");
  const int major = static_cast<unsigned char>(magic[kMagicLen]);
  if (major < 1 || major > 3) fail(path, "unsupported .npy format version " + std::to_string(major));
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  unsigned char len_raw[4] = {};
  in.read(reinterpret_cast<char*>(len_raw), static_cast<std::streamsize>(len_bytes));
  if (in.gcount() != static_cast<std::streamsize>(len_bytes)) fail(path, "truncated header");
  std::size_t header_len = 0;
  for (std::size_t i = 0; i < len_bytes; ++i) header_len |= static_cast<std::size_t>(len_raw[i]) << (8 * i);
  const std::uint64_t preamble = kMagicLen + 2 + len_bytes;
  // Against the file's size before allocating: a 14-byte file may claim a 4 GB header.
  if (header_len > file_size - std::min<std::uint64_t>(preamble, file_size))
    fail(path, "truncated header (it claims " + std::to_string(header_len) + " bytes, the file has " +
                   std::to_string(file_size) + ")");
  std::string dict(header_len, '\0');
  in.read(dict.data(), static_cast<std::streamsize>(header_len));
  if (static_cast<std::size_t>(in.gcount()) != header_len) fail(path, "truncated header");
  Header h = parse_dict(path, dict);
  h.data_offset = preamble + header_len;
  return h;
}

Header read_header(const std::string& path) {
  std::uint64_t size = 0;
  std::ifstream in = open_for_reading(path, size);
  return read_header(in, size, path);
}

ArrayF32 read_f32(std::istream& in, std::uint64_t file_size, const std::string& path) {
  const Header h = read_header(in, file_size, path);
  if (h.descr != "<f4") {
    if (h.descr == ">f4") fail(path, "dtype '>f4' is big-endian, expected '<f4'");
    fail(path, "dtype '" + h.descr + "', expected '<f4'");
  }
  if (h.fortran_order) fail(path, "Fortran order, expected C order (use numpy.ascontiguousarray)");
  // The shape against the bytes present, before anything is allocated.
  const auto bytes = checked_byte_count(h.shape, sizeof(float));
  if (!bytes) fail(path, "shape " + shape_string(h.shape) + " needs more than 2^64 bytes");
  const std::uint64_t present = file_size - std::min<std::uint64_t>(h.data_offset, file_size);
  if (present < *bytes)
    fail(path, "data has " + std::to_string(present) + " bytes, shape " + shape_string(h.shape) + " needs " +
                   std::to_string(*bytes));
  ArrayF32 a;
  a.shape = h.shape;
  a.data.resize(*bytes / sizeof(float));
  in.read(reinterpret_cast<char*>(a.data.data()), static_cast<std::streamsize>(*bytes));
  const auto got = static_cast<std::size_t>(in.gcount());
  if (got != *bytes)
    fail(path, "data has " + std::to_string(got) + " bytes, shape " + shape_string(h.shape) + " needs " +
                   std::to_string(*bytes));
  return a;
}

ArrayF32 read_f32(const std::string& path) {
  std::uint64_t size = 0;
  std::ifstream in = open_for_reading(path, size);
  return read_f32(in, size, path);
}

ArrayF32 read_f32(const std::string& path, const std::vector<std::size_t>& expected_shape) {
  // Check the header first so a wrong shape is reported without reading a large file.
  const Header h = read_header(path);
  if (h.descr == "<f4" && !h.fortran_order && h.shape != expected_shape)
    fail(path, "shape " + shape_string(h.shape) + ", expected " + shape_string(expected_shape));
  ArrayF32 a = read_f32(path);
  if (a.shape != expected_shape)
    fail(path, "shape " + shape_string(a.shape) + ", expected " + shape_string(expected_shape));
  return a;
}

void write_f32(const std::string& path, const std::vector<std::size_t>& shape, const float* data) {
  write_array(path, shape, "<f4", data, sizeof(float));
}

void write_f64(const std::string& path, const std::vector<std::size_t>& shape, const double* data) {
  write_array(path, shape, "<f8", data, sizeof(double));
}

}  // namespace flashtune::npy
