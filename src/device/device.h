// One opened OpenCL device: its context, one in-order queue, and the accounting of the bytes
// its buffers hold (what a fleet will report as device memory). Allocation, host<->device
// copies, program builds and kernel launches go through it; errors are Status values naming
// what failed, never crashes. Device is a handle: copies share the same context and queue, and
// everything made on it (buffers, programs, kernels, events) keeps the context alive.
// Commands run in the order they were enqueued (one in-order queue).
// Thread-safety: allocation, copies, finish and memory() may be called from any thread (OpenCL
// queues are thread-safe, the counters atomic); a Kernel's arguments and its launch belong to
// one thread at a time (program.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/device/buffer.h"
#include "tessera/device/device_info.h"
#include "tessera/device/event.h"
#include "tessera/device/program.h"

namespace tessera::device {

struct DeviceContext;

// Bytes held by one device's live buffers.
struct DeviceMemory {
  uint64_t bytes_in_use = 0;  // sum of the sizes of live buffers
  uint64_t peak_bytes = 0;    // the most bytes_in_use has been since the device was opened
  uint64_t n_buffers = 0;     // live buffers
};

class Device {
 public:
  // Opens entry `index` of list_devices() (creates its context and queue). Errors: those of
  // list_devices() (no library, no platform: kUnavailable, one line), kOutOfRange for an index
  // past the list (naming how many devices there are), or the driver's error.
  static Result<Device> open(int index = 0);
  // The process's one Device for entry `index`, opened at the first call and kept for the
  // process's life, so that every model on a device shares its context and queue and memory()
  // counts all of them (what a fleet reports). Errors: open()'s (not cached: a later call tries
  // again).
  static Result<Device> shared(int index);
  // The devices shared() has opened so far, in index order (for metrics).
  static std::vector<Device> opened();

  const DeviceInfo& info() const;
  DeviceMemory memory() const;

  // An uninitialized buffer of `bytes` (> 0, at most info().max_alloc_bytes: kInvalidArgument /
  // kResourceExhausted otherwise, naming both sizes). Drivers may reserve the memory lazily, so
  // an over-committed device can also fail at the first copy or launch that touches it.
  Result<Buffer> alloc(size_t bytes);

  // Copies `bytes` from host `src` to `dst` at `offset`, returning when done (blocking).
  // kInvalidArgument if [offset, offset + bytes) is not inside `dst`.
  Status write(Buffer& dst, size_t offset, const void* src, size_t bytes);
  // The same without waiting: `src` must stay valid and unchanged until the event completes.
  Result<Event> write_async(Buffer& dst, size_t offset, const void* src, size_t bytes);
  // Copies `bytes` of `src` at `offset` to host `dst`, returning when done (blocking; waits for
  // every command enqueued before it, as the queue is in order).
  Status read(const Buffer& src, size_t offset, void* dst, size_t bytes);
  // Device-to-device copy on the queue.
  Result<Event> copy(const Buffer& src, size_t src_offset, Buffer& dst, size_t dst_offset,
                     size_t bytes);

  // Compiles OpenCL C `sources` (concatenated, in order) with `options` (clBuildProgram's, e.g.
  // "-DWG=64"). On a failed build: kInternal whose message holds the driver's build log (up to
  // 8 KiB), prefixed by `what` ("building device program 'matmul': ...").
  Result<Program> build_program(std::string_view what, std::initializer_list<std::string_view> sources,
                                std::string_view options) const;

  // Enqueues `kernel` over a 1-3 dimensional range: global[i] work-items in dimension i, in
  // work-groups of local[i] (global[i] a multiple of local[i]); local empty lets the driver
  // choose. The kernel's arguments are read at this call; it may be re-armed at once.
  Result<Event> launch(const Kernel& kernel, std::initializer_list<size_t> global,
                       std::initializer_list<size_t> local);

  // Submits the queued commands to the device without waiting.
  Status flush();
  // Blocks until every command enqueued so far is done; the first failure's error.
  Status finish();

 private:
  explicit Device(std::shared_ptr<DeviceContext> ctx) : ctx_(std::move(ctx)) {}
  std::shared_ptr<DeviceContext> ctx_;
};

}  // namespace tessera::device
