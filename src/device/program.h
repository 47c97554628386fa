// OpenCL C source compiled by the driver for one device (Device::build_program), and the
// kernels taken from it. A Program is compiled once and its kernels are reused: not every driver
// caches compiled programs across processes (PoCL does, in ~/.cache/pocl), and a build costs
// milliseconds on a GPU driver and up to seconds on PoCL.
// Thread-safety: a Program may be shared; a Kernel holds its arguments, so one Kernel object
// is used by one thread at a time (clSetKernelArg is not thread-safe on one kernel).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tessera/base/status.h"
#include "tessera/device/buffer.h"
#include "tessera/device/opencl_api.h"

namespace tessera::device {

struct DeviceContext;

// One __kernel function of a Program, with its arguments. Move-only.
class Kernel {
 public:
  Kernel() = default;
  Kernel(Kernel&& other) noexcept;
  Kernel& operator=(Kernel&& other) noexcept;
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;
  ~Kernel();

  const std::string& name() const { return name_; }
  // The largest work-group this kernel can run with on its device (CL_KERNEL_WORK_GROUP_SIZE).
  size_t max_work_group_size() const { return max_work_group_size_; }

  // Argument `index` (0-based, in the kernel's declaration order). The buffer's handle is read
  // now; the buffer must stay alive until the launches that use it are done. Errors name the
  // kernel and the argument (a wrong type or size is a bug: kInternal).
  Status set_arg(uint32_t index, const Buffer& buffer);
  Status set_arg(uint32_t index, int32_t value);
  Status set_arg(uint32_t index, uint32_t value);
  Status set_arg(uint32_t index, uint64_t value);
  Status set_arg(uint32_t index, float value);
  // A __local array of `bytes` for the work-group.
  Status set_local_arg(uint32_t index, size_t bytes);

  cl_kernel handle() const { return kernel_; }

 private:
  friend class Program;
  Status set_raw(uint32_t index, size_t size, const void* value);
  std::shared_ptr<DeviceContext> ctx_;
  cl_kernel kernel_ = nullptr;
  std::string name_;
  size_t max_work_group_size_ = 0;
};

class Program {
 public:
  Program() = default;
  Program(Program&& other) noexcept;
  Program& operator=(Program&& other) noexcept;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program();

  // The kernel named `name`; kNotFound naming it if the program has none.
  Result<Kernel> kernel(const std::string& name) const;

 private:
  friend class Device;
  Program(std::shared_ptr<DeviceContext> ctx, cl_program program)
      : ctx_(std::move(ctx)), program_(program) {}
  std::shared_ptr<DeviceContext> ctx_;
  cl_program program_ = nullptr;
};

}  // namespace tessera::device
