#include "kernels/persistent_tile_counter.h"

#include <map>
#include <mutex>
#include <utility>

namespace flashtune::kernels {

cudaError_t persistent_tile_counter(cudaStream_t stream, unsigned int** word) {
  static std::mutex mu;
  static std::map<std::pair<int, cudaStream_t>, unsigned int*> words;  // never freed: 4 bytes a stream
  int device = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  std::lock_guard<std::mutex> lock(mu);
  auto it = words.find({device, stream});
  if (it != words.end()) {
    *word = it->second;
    return cudaSuccess;
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (const cudaError_t e = cudaStreamIsCapturing(stream, &capture); e != cudaSuccess) return e;
  if (capture != cudaStreamCaptureStatusNone) return cudaErrorStreamCaptureUnsupported;
  unsigned int* w = nullptr;
  if (const cudaError_t e = cudaMalloc(&w, sizeof(unsigned int)); e != cudaSuccess) return e;
  // On the stream itself: ordered before the launch that asked, whatever kind of stream it is.
  if (const cudaError_t e = cudaMemsetAsync(w, 0, sizeof(unsigned int), stream); e != cudaSuccess) {
    cudaFree(w);
    return e;
  }
  words.emplace(std::make_pair(device, stream), w);
  *word = w;
  return cudaSuccess;
}

}  // namespace flashtune::kernels
