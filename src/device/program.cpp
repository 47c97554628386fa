#include "tessera/device/program.h"

#include <fmt/format.h>

#include <utility>

#include "tessera/device/cl_error.h"
#include "tessera/device/device_context.h"

namespace tessera::device {

Kernel::Kernel(Kernel&& other) noexcept
    : ctx_(std::move(other.ctx_)),
      kernel_(std::exchange(other.kernel_, nullptr)),
      name_(std::move(other.name_)),
      max_work_group_size_(other.max_work_group_size_) {}

Kernel& Kernel::operator=(Kernel&& other) noexcept {
  if (this != &other) {
    if (kernel_ != nullptr) ctx_->cl->clReleaseKernel(kernel_);
    ctx_ = std::move(other.ctx_);
    kernel_ = std::exchange(other.kernel_, nullptr);
    name_ = std::move(other.name_);
    max_work_group_size_ = other.max_work_group_size_;
  }
  return *this;
}

Kernel::~Kernel() {
  if (kernel_ != nullptr) ctx_->cl->clReleaseKernel(kernel_);
}

Status Kernel::set_raw(uint32_t index, size_t size, const void* value) {
  if (kernel_ == nullptr) return internal_error("set_arg on an empty Kernel");
  const cl_int rc = ctx_->cl->clSetKernelArg(kernel_, index, size, value);
  if (rc == CL_SUCCESS) return Status::ok();
  return cl_status(rc, fmt::format("kernel {}: argument {}", name_, index));
}

Status Kernel::set_arg(uint32_t index, const Buffer& buffer) {
  if (buffer.empty()) {
    return internal_error(fmt::format("kernel {}: argument {} is an empty buffer", name_, index));
  }
  const cl_mem mem = buffer.handle();
  return set_raw(index, sizeof(mem), &mem);
}
Status Kernel::set_arg(uint32_t index, int32_t value) { return set_raw(index, sizeof(value), &value); }
Status Kernel::set_arg(uint32_t index, uint32_t value) {
  return set_raw(index, sizeof(value), &value);
}
Status Kernel::set_arg(uint32_t index, uint64_t value) {
  return set_raw(index, sizeof(value), &value);
}
Status Kernel::set_arg(uint32_t index, float value) { return set_raw(index, sizeof(value), &value); }
Status Kernel::set_local_arg(uint32_t index, size_t bytes) {
  return set_raw(index, bytes, nullptr);
}

Program::Program(Program&& other) noexcept
    : ctx_(std::move(other.ctx_)), program_(std::exchange(other.program_, nullptr)) {}

Program& Program::operator=(Program&& other) noexcept {
  if (this != &other) {
    if (program_ != nullptr) ctx_->cl->clReleaseProgram(program_);
    ctx_ = std::move(other.ctx_);
    program_ = std::exchange(other.program_, nullptr);
  }
  return *this;
}

Program::~Program() {
  if (program_ != nullptr) ctx_->cl->clReleaseProgram(program_);
}

Result<Kernel> Program::kernel(const std::string& name) const {
  if (program_ == nullptr) return internal_error("kernel() of an empty Program");
  cl_int rc = CL_SUCCESS;
  cl_kernel k = ctx_->cl->clCreateKernel(program_, name.c_str(), &rc);
  if (rc != CL_SUCCESS || k == nullptr) {
    if (rc == CL_INVALID_KERNEL_NAME) {
      return not_found(fmt::format("device program has no kernel named '{}'", name));
    }
    return cl_status(rc, fmt::format("clCreateKernel({})", name));
  }
  Kernel out;
  out.ctx_ = ctx_;
  out.kernel_ = k;
  out.name_ = name;
  size_t wg = 0;
  if (ctx_->cl->clGetKernelWorkGroupInfo(k, ctx_->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof(wg),
                                         &wg, nullptr) != CL_SUCCESS) {
    wg = 1;
  }
  out.max_work_group_size_ = wg;
  return out;
}

}  // namespace tessera::device
