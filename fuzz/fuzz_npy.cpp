// .npy files (run --q/--k/--v): any bytes either read or fail with an NpyError, without
// allocating more than the input holds (ASan's -rss_limit_mb and -malloc_limit_mb catch a header
// that makes the reader allocate gigabytes); an array that reads has exactly its shape's elements.
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "tuner/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::istringstream in(bytes);
  flashtune::npy::ArrayF32 a;
  try {
    a = flashtune::npy::read_f32(in, size, "fuzz.npy");
  } catch (const flashtune::npy::NpyError&) {
    return 0;
  }
  if (a.data.size() != flashtune::npy::element_count(a.shape)) std::abort();
  if (a.data.size() * sizeof(float) > size) std::abort();
  return 0;
}
