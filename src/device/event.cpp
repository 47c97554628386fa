#include "tessera/device/event.h"

#include <utility>

#include "tessera/device/cl_error.h"
#include "tessera/device/device_context.h"

namespace tessera::device {

Event::Event(Event&& other) noexcept
    : ctx_(std::move(other.ctx_)), event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    release();
    ctx_ = std::move(other.ctx_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

Event::~Event() { release(); }

void Event::release() {
  if (event_ != nullptr) ctx_->cl->clReleaseEvent(event_);
  event_ = nullptr;
  ctx_.reset();
}

Status Event::wait() const {
  if (event_ == nullptr) return Status::ok();
  return cl_status(ctx_->cl->clWaitForEvents(1, &event_), "waiting for a device command");
}

bool Event::is_complete() const {
  if (event_ == nullptr) return true;
  cl_int state = CL_COMPLETE;
  if (ctx_->cl->clGetEventInfo(event_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(state), &state,
                               nullptr) != CL_SUCCESS) {
    return true;  // an event that cannot be queried will never complete: wait() reports why
  }
  return state == CL_COMPLETE || state < 0;
}

}  // namespace tessera::device
