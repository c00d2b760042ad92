// Device memory a launch borrows for its own run (decode's partials and tickets, the persistent
// wgmma16 grid's tile counter): stream-ordered from one pool per device that is never trimmed, so a
// launch reuses the last one's bytes instead of mapping fresh memory (which would stall the stream
// behind a host call), and graphs can capture it. Borrowed words are not zeroed: a word a kernel
// counts in carries the launch's id (launch_id) beside the count, and a word of another launch
// counts as zero.
#pragma once

#include <cuda_runtime.h>

namespace flashtune::kernels {

// The pool of `device` (created on first use).
cudaMemPool_t workspace_pool(int device);
// A fresh id per launch that counts in borrowed words (48 bits, never 0).
unsigned long long launch_id();

}  // namespace flashtune::kernels
