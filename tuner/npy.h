// Reading and writing NumPy .npy files (format versions 1, 2 and 3): float32 in and out, float64
// out for debugging. C order and little-endian only, which is what NumPy writes by default on the
// machines we run on. Every error is a NpyError whose message starts with the file name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace flashtune::npy {

class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What the header of a .npy file says.
struct Header {
  std::string descr;  // e.g. "<f4"
  bool fortran_order = false;
  std::vector<std::size_t> shape;
  std::size_t data_offset = 0;  // bytes from the start of the file to the first element
};

struct ArrayF32 {
  std::vector<std::size_t> shape;
  std::vector<float> data;
};

// "(2, 77, 64)", the way NumPy prints a shape ("(5,)" for one dimension).
std::string shape_string(const std::vector<std::size_t>& shape);

std::size_t element_count(const std::vector<std::size_t>& shape);
// element_bytes x the product of the shape, or nullopt when it does not fit in size_t.
std::optional<std::size_t> checked_byte_count(const std::vector<std::size_t>& shape, std::size_t element_bytes);

// Parses the header of `path`; throws NpyError ("missing file x.npy", "x.npy: bad magic", ...).
Header read_header(const std::string& path);

// Reads a C-order little-endian float32 array; throws NpyError on any other dtype, Fortran order
// or a file shorter than its shape says.
ArrayF32 read_f32(const std::string& path);

// The same from a stream holding a whole file of `file_size` bytes (`path` names it in messages):
// every length in the header and the shape's byte count are checked against `file_size` before
// anything is allocated. The fuzz targets read through these.
Header read_header(std::istream& in, std::uint64_t file_size, const std::string& path);
ArrayF32 read_f32(std::istream& in, std::uint64_t file_size, const std::string& path);

// As read_f32, and also requires the shape: "k.npy: shape (2, 77, 32), expected (2, 77, 64)".
ArrayF32 read_f32(const std::string& path, const std::vector<std::size_t>& expected_shape);

// Writes `data` (element_count(shape) values) as a version 1 file (version 2 when the header is
// too long for version 1). Throws NpyError when the file cannot be written.
void write_f32(const std::string& path, const std::vector<std::size_t>& shape, const float* data);
void write_f64(const std::string& path, const std::vector<std::size_t>& shape, const double* data);

}  // namespace flashtune::npy
