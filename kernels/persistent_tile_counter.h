// The word a persistent grid deals its tiles from (wgmma16 /pe): one per (device, stream), zero
// between launches. A launch's blocks take counts 0, 1, .. by atomicAdd (every block until it draws
// one past the last tile: exactly `tiles` calls a launch), and the call that draws the last count
// stores 0 back, so the next launch on the stream (which starts after this one has finished) finds
// it zero without a memset of its own. Launches on different streams use different words; launches
// of one stream run one after another. A captured graph keeps the word of the stream it was captured
// on: replaying it on another stream while that stream runs a persistent launch shares the word
// (the one case not covered).
#pragma once

#include <cuda_runtime.h>

namespace flashtune::kernels {

// The current device's word for `stream`, allocated and zeroed on the stream's first persistent
// launch (cudaMalloc, so not while the stream is being captured into a graph: that first launch must
// come before the capture, and returns cudaErrorStreamCaptureUnsupported otherwise).
cudaError_t persistent_tile_counter(cudaStream_t stream, unsigned int** word);

}  // namespace flashtune::kernels
