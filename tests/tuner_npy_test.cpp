// .npy reading and writing: round trips, files as NumPy writes them, and every error message.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "tuner/npy.h"

namespace flashtune::npy {
namespace {

std::string temp_path(const std::string& name) { return testing::TempDir() + "flashtune_npy_" + std::to_string(::getpid()) + "_" + name; }

// A file byte by byte: magic, version, header length, the header dict padded with spaces and a
// newline to `align`, then the payload. Lets the tests build files NumPy would write (or worse).
std::string make_file(const std::string& path, const std::string& dict, const std::string& payload, int version = 1,
                      std::size_t align = 64, const std::string& magic = "\x93NUMPY") {
  const std::size_t preamble = 6 + 2 + (version == 1 ? 2 : 4);
  std::string header = dict;
  std::size_t total = preamble + header.size() + 1;
  header.append((align - total % align) % align, ' ');
  header.push_back('\n');
  std::string bytes = magic;
  bytes.push_back(static_cast<char>(version));
  bytes.push_back(0);
  const std::size_t len = header.size();
  for (int i = 0; i < (version == 1 ? 2 : 4); ++i) bytes.push_back(static_cast<char>((len >> (8 * i)) & 0xFF));
  bytes += header + payload;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string floats_payload(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const NpyError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Npy, RoundTripFloat32) {
  const std::vector<std::size_t> shape = {2, 3, 4};
  std::vector<float> data(24);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = 0.5f * float(i) - 3.25f;
  const std::string path = temp_path("rt.npy");
  write_f32(path, shape, data.data());
  const ArrayF32 a = read_f32(path, shape);
  EXPECT_EQ(a.shape, shape);
  EXPECT_EQ(a.data, data);
  // Data starts on a 64-byte boundary, as NumPy writes it.
  EXPECT_EQ(read_header(path).data_offset % 64, 0u);
}

TEST(Npy, WritesTheHeaderNumpyWrites) {
  const std::string path = temp_path("hdr.npy");
  const float x[3] = {1, 2, 3};
  write_f32(path, {3}, x);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // np.save(np.arange(1, 4, dtype='<f4')) writes a 128-byte preamble + header, then 12 data bytes.
  ASSERT_EQ(bytes.size(), 128u + 12u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8), 118);
  EXPECT_EQ(bytes.substr(10, 57), "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }");
  EXPECT_EQ(bytes.substr(67, 60), std::string(60, ' '));
  EXPECT_EQ(bytes[127], '\n');
  float back[3] = {};
  std::memcpy(back, bytes.data() + 128, sizeof back);
  EXPECT_EQ(back[2], 3.0f);
}

TEST(Npy, WritesFloat64ForDebugging) {
  const std::string path = temp_path("f8.npy");
  const double x[2] = {1.5, -2.25};
  write_f64(path, {2}, x);
  const Header h = read_header(path);
  EXPECT_EQ(h.descr, "<f8");
  EXPECT_EQ(h.shape, std::vector<std::size_t>{2});
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(h.data_offset));
  double back[2] = {};
  in.read(reinterpret_cast<char*>(back), sizeof back);
  EXPECT_EQ(back[0], 1.5);
  EXPECT_EQ(back[1], -2.25);
}

TEST(Npy, ReadsVersion2AndOldPaddingAndDoubleQuotes) {
  const std::vector<float> v = {1, 2, 3, 4, 5, 6};
  const std::string p2 = make_file(temp_path("v2.npy"), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                   floats_payload(v), 2);
  EXPECT_EQ(read_f32(p2).data, v);
  // Older NumPy aligned to 16 bytes; some writers use double quotes and no trailing comma.
  const std::string p16 = make_file(temp_path("a16.npy"), "{\"descr\": \"<f4\", \"shape\": (6,), \"fortran_order\": False}",
                                    floats_payload(v), 1, 16);
  const ArrayF32 a = read_f32(p16);
  EXPECT_EQ(a.shape, std::vector<std::size_t>{6});
  EXPECT_EQ(a.data, v);
}

TEST(Npy, ScalarAndEmptyShapes) {
  const std::string scalar = make_file(temp_path("scalar.npy"), "{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
                                       floats_payload({7}));
  const ArrayF32 a = read_f32(scalar);
  EXPECT_TRUE(a.shape.empty());
  ASSERT_EQ(a.data.size(), 1u);
  EXPECT_EQ(a.data[0], 7.0f);
  const std::string empty = temp_path("empty.npy");
  write_f32(empty, {0, 4}, nullptr);
  EXPECT_EQ(read_f32(empty).data.size(), 0u);
}

TEST(Npy, MissingFile) {
  const std::string path = temp_path("does_not_exist.npy");
  std::remove(path.c_str());
  EXPECT_EQ(error_of([&] { read_f32(path); }), "missing file " + path);
}

TEST(Npy, BadMagic) {
  const std::string path = temp_path("text.npy");
  std::ofstream(path) << "this is not numpy data\n";
  EXPECT_EQ(error_of([&] { read_f32(path); }), path + ": bad magic (not a .npy file)");
  const std::string tiny = temp_path("tiny.npy");
  std::ofstream(tiny) << "ab";
  EXPECT_EQ(error_of([&] { read_f32(tiny); }), tiny + ": bad magic (not a .npy file)");
}

TEST(Npy, WrongDtypeNamesBoth) {
  const std::string path = temp_path("q.npy");
  const double x[4] = {};
  write_f64(path, {1, 2, 2}, x);
  EXPECT_EQ(error_of([&] { read_f32(path, {1, 2, 2}); }), path + ": dtype '<f8', expected '<f4'");
  const std::string be = make_file(temp_path("be.npy"), "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
                                   std::string(4, '\0'));
  EXPECT_EQ(error_of([&] { read_f32(be); }), be + ": dtype '>f4' is big-endian, expected '<f4'");
}

TEST(Npy, WrongShapeNamesBoth) {
  const std::string path = temp_path("k.npy");
  std::vector<float> data(2 * 77 * 32);
  write_f32(path, {2, 77, 32}, data.data());
  EXPECT_EQ(error_of([&] { read_f32(path, {2, 77, 64}); }), path + ": shape (2, 77, 32), expected (2, 77, 64)");
}

TEST(Npy, FortranOrderRefused) {
  const std::string path = make_file(temp_path("f.npy"), "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                                     floats_payload({1, 2, 3, 4}));
  EXPECT_EQ(error_of([&] { read_f32(path); }),
            path + ": Fortran order, expected C order (use numpy.ascontiguousarray)");
}

TEST(Npy, TruncatedData) {
  const std::string path = make_file(temp_path("short.npy"), "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
                                     floats_payload({1, 2}));
  EXPECT_EQ(error_of([&] { read_f32(path); }), path + ": data has 8 bytes, shape (4,) needs 16");
}

TEST(Npy, MalformedHeaders) {
  const std::string no_shape = make_file(temp_path("ns.npy"), "{'descr': '<f4', 'fortran_order': False, }", "");
  EXPECT_EQ(error_of([&] { read_f32(no_shape); }), no_shape + ": header has no 'shape' tuple");
  const std::string bad_shape =
      make_file(temp_path("bs.npy"), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", "");
  EXPECT_EQ(error_of([&] { read_f32(bad_shape); }), bad_shape + ": bad 'shape' (2, x)");
  const std::string version9 = make_file(temp_path("v9.npy"), "{}", "", 9);
  EXPECT_EQ(error_of([&] { read_f32(version9); }), version9 + ": unsupported .npy format version 9");
}

TEST(Npy, UnwritablePath) {
  const std::string path = temp_path("no_such_dir/o.npy");
  const float x = 1;
  // The output policy (profile/output_file.h): no writer creates a missing folder, and says so.
  EXPECT_EQ(error_of([&] { write_f32(path, {1}, &x); }),
            path + ": folder " + temp_path("no_such_dir") +
                " does not exist (nothing written); create it first (the previous file, if any, is unchanged)");
}

TEST(Npy, ShapeString) {
  EXPECT_EQ(shape_string({}), "()");
  EXPECT_EQ(shape_string({5}), "(5,)");
  EXPECT_EQ(shape_string({2, 77, 64}), "(2, 77, 64)");
  EXPECT_EQ(element_count({2, 77, 64}), 2u * 77u * 64u);
}

}  // namespace
}  // namespace flashtune::npy
