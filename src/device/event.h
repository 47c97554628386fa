// A command enqueued on a device's queue (a copy or a kernel launch), to wait for. Owned and
// move-only; destroying it does not wait (the command still runs; Device::finish waits for all).
// Thread-safety: wait() and is_complete() may be called from any thread (clWaitForEvents is
// thread-safe); one thread owns the Event object.
#pragma once

#include <memory>

#include "tessera/base/status.h"
#include "tessera/device/opencl_api.h"

namespace tessera::device {

struct DeviceContext;

class Event {
 public:
  Event() = default;
  Event(std::shared_ptr<DeviceContext> ctx, cl_event event) : ctx_(std::move(ctx)), event_(event) {}
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  // Blocks until the command is done; its error (a failed kernel, a lost device) if it failed.
  // An empty Event is complete.
  Status wait() const;
  // True once the command has finished (or failed); never blocks.
  bool is_complete() const;

 private:
  void release();
  std::shared_ptr<DeviceContext> ctx_;
  cl_event event_ = nullptr;
};

}  // namespace tessera::device
