// LoadOptions: how a model is brought into memory. By default a model whose weights run faster
// in another layout (Q4_0 in 16-row groups where the CPU has the kernel, kernels/ops.h
// preferred_layout) copies every weight matrix into one image at load, repacking those, and gives
// the file mapping's pages back; otherwise it reads the file mapping in place.
// Thread-safety: plain data; the allocator is called from the loading thread only.
#pragma once

#include <cstddef>
#include <functional>

#include "tessera/base/status.h"

namespace tessera::model {

// Returns `n_bytes` of writable memory, 64-byte aligned, that stays at its address for the
// model's life and is owned by the caller (a fleet puts it in a tiered region so that it can be
// suspended). Errors fail the load.
using WeightImageAllocator = std::function<Result<std::byte*>(size_t n_bytes)>;

struct LoadOptions {
  bool repack = true;  // false: always read the file's layout in place (no image)
  WeightImageAllocator allocate_image;  // null: the model maps anonymous memory itself
  // Threads that copy and repack the matrices into the image (0: every core): packing is
  // bound by reading the file's pages and rearranging them, and splits by row group.
  int n_threads = 0;
  // Where the forward pass runs: -1 the CPU; N >= 0 OpenCL device N of device::list_devices()
  // (`--device opencl:N`): weights uploaded at load, no CPU image (device_decoder.h).
  int device = -1;
};

}  // namespace tessera::model
