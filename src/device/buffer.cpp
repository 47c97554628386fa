#include "tessera/device/buffer.h"

#include <utility>

#include "tessera/device/device_context.h"

namespace tessera::device {

Buffer::Buffer(Buffer&& other) noexcept
    : ctx_(std::move(other.ctx_)),
      mem_(std::exchange(other.mem_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    ctx_ = std::move(other.ctx_);
    mem_ = std::exchange(other.mem_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Buffer::~Buffer() { release(); }

void Buffer::release() {
  if (mem_ != nullptr) {
    // OpenCL defers the free until the commands using the buffer are done (clReleaseMemObject).
    ctx_->cl->clReleaseMemObject(mem_);
    ctx_->sub_bytes(bytes_);
  }
  mem_ = nullptr;
  bytes_ = 0;
  ctx_.reset();
}

}  // namespace tessera::device
