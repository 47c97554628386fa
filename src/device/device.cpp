#include "tessera/device/device.h"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/device/cl_error.h"
#include "tessera/device/device_context.h"

namespace tessera::device {

DeviceContext::~DeviceContext() {
  if (queue != nullptr) {
    cl->clFinish(queue);
    cl->clReleaseCommandQueue(queue);
  }
  if (context != nullptr) cl->clReleaseContext(context);
}

void DeviceContext::add_bytes(uint64_t bytes) {
  const uint64_t now = bytes_in_use.fetch_add(bytes) + bytes;
  n_buffers.fetch_add(1);
  uint64_t peak = peak_bytes.load();
  while (now > peak && !peak_bytes.compare_exchange_weak(peak, now)) {
  }
}

void DeviceContext::sub_bytes(uint64_t bytes) {
  bytes_in_use.fetch_sub(bytes);
  n_buffers.fetch_sub(1);
}

namespace {

Status check_range(const Buffer& b, size_t offset, size_t bytes, const char* what) {
  if (b.empty()) return invalid_argument(fmt::format("{}: empty buffer", what));
  if (offset > b.bytes() || bytes > b.bytes() - offset) {
    return invalid_argument(fmt::format("{}: bytes [{}, {}) outside a buffer of {} bytes", what,
                                        offset, offset + bytes, b.bytes()));
  }
  return Status::ok();
}

}  // namespace

Result<Device> Device::open(int index) {
  TS_ASSIGN_OR_RETURN(const OpenClApi* cl, opencl_api());
  TS_ASSIGN_OR_RETURN(std::vector<cl_device_id> ids, all_device_ids(*cl));
  if (index < 0 || static_cast<size_t>(index) >= ids.size()) {
    return out_of_range(fmt::format("no OpenCL device {}: this machine has {} (0..{})", index,
                                    ids.size(), ids.size() - 1));
  }
  auto ctx = std::make_shared<DeviceContext>();
  ctx->cl = cl;
  ctx->device = ids[static_cast<size_t>(index)];
  ctx->info = describe_device(*cl, ctx->device, index);
  cl_int rc = CL_SUCCESS;
  ctx->context = cl->clCreateContext(nullptr, 1, &ctx->device, nullptr, nullptr, &rc);
  TS_RETURN_IF_ERROR(cl_status(rc, fmt::format("opening OpenCL device {} ({}): clCreateContext",
                                               index, ctx->info.name)));
  ctx->queue = cl->clCreateCommandQueue(ctx->context, ctx->device, 0, &rc);
  TS_RETURN_IF_ERROR(cl_status(
      rc, fmt::format("opening OpenCL device {} ({}): clCreateCommandQueue", index, ctx->info.name)));
  return Device(std::move(ctx));
}

namespace {
std::mutex& shared_mu() {
  static std::mutex mu;
  return mu;
}
// Never destroyed: releasing OpenCL objects from a static destructor races the driver's own
// teardown at exit.
std::map<int, Device>& shared_devices() {
  static auto* devices = new std::map<int, Device>;
  return *devices;
}
}  // namespace

Result<Device> Device::shared(int index) {
  std::lock_guard<std::mutex> lock(shared_mu());
  auto& devices = shared_devices();
  if (auto it = devices.find(index); it != devices.end()) return it->second;
  TS_ASSIGN_OR_RETURN(Device d, open(index));
  devices.emplace(index, d);
  return d;
}

std::vector<Device> Device::opened() {
  std::lock_guard<std::mutex> lock(shared_mu());
  std::vector<Device> out;
  for (const auto& [index, d] : shared_devices()) out.push_back(d);
  return out;
}

const DeviceInfo& Device::info() const { return ctx_->info; }

DeviceMemory Device::memory() const {
  return {ctx_->bytes_in_use.load(), ctx_->peak_bytes.load(), ctx_->n_buffers.load()};
}

Result<Buffer> Device::alloc(size_t bytes) {
  if (bytes == 0) return invalid_argument("device buffer of 0 bytes");
  if (ctx_->info.max_alloc_bytes != 0 && bytes > ctx_->info.max_alloc_bytes) {
    return resource_exhausted(fmt::format(
        "device buffer of {} bytes is over {}'s largest single allocation ({} bytes)", bytes,
        ctx_->info.name, ctx_->info.max_alloc_bytes));
  }
  cl_int rc = CL_SUCCESS;
  cl_mem mem = ctx_->cl->clCreateBuffer(ctx_->context, CL_MEM_READ_WRITE, bytes, nullptr, &rc);
  TS_RETURN_IF_ERROR(cl_status(rc, fmt::format("clCreateBuffer({} bytes)", bytes)));
  ctx_->add_bytes(bytes);
  return Buffer(ctx_, mem, bytes);
}

Status Device::write(Buffer& dst, size_t offset, const void* src, size_t bytes) {
  TS_RETURN_IF_ERROR(check_range(dst, offset, bytes, "device write"));
  if (bytes == 0) return Status::ok();
  return cl_status(ctx_->cl->clEnqueueWriteBuffer(ctx_->queue, dst.handle(), CL_TRUE, offset,
                                                  bytes, src, 0, nullptr, nullptr),
                   fmt::format("device write of {} bytes", bytes));
}

Result<Event> Device::write_async(Buffer& dst, size_t offset, const void* src, size_t bytes) {
  TS_RETURN_IF_ERROR(check_range(dst, offset, bytes, "device write"));
  if (bytes == 0) return Event();
  cl_event ev = nullptr;
  TS_RETURN_IF_ERROR(cl_status(ctx_->cl->clEnqueueWriteBuffer(ctx_->queue, dst.handle(), CL_FALSE,
                                                              offset, bytes, src, 0, nullptr, &ev),
                               fmt::format("device write of {} bytes", bytes)));
  return Event(ctx_, ev);
}

Status Device::read(const Buffer& src, size_t offset, void* dst, size_t bytes) {
  TS_RETURN_IF_ERROR(check_range(src, offset, bytes, "device read"));
  if (bytes == 0) return Status::ok();
  return cl_status(ctx_->cl->clEnqueueReadBuffer(ctx_->queue, src.handle(), CL_TRUE, offset, bytes,
                                                 dst, 0, nullptr, nullptr),
                   fmt::format("device read of {} bytes", bytes));
}

Result<Event> Device::copy(const Buffer& src, size_t src_offset, Buffer& dst, size_t dst_offset,
                           size_t bytes) {
  TS_RETURN_IF_ERROR(check_range(src, src_offset, bytes, "device copy (source)"));
  TS_RETURN_IF_ERROR(check_range(dst, dst_offset, bytes, "device copy (destination)"));
  if (bytes == 0) return Event();
  cl_event ev = nullptr;
  TS_RETURN_IF_ERROR(cl_status(
      ctx_->cl->clEnqueueCopyBuffer(ctx_->queue, src.handle(), dst.handle(), src_offset,
                                    dst_offset, bytes, 0, nullptr, &ev),
      fmt::format("device copy of {} bytes", bytes)));
  return Event(ctx_, ev);
}

Result<Program> Device::build_program(std::string_view what,
                                      std::initializer_list<std::string_view> sources,
                                      std::string_view options) const {
  std::vector<const char*> strings;
  std::vector<size_t> lengths;
  for (std::string_view s : sources) {
    strings.push_back(s.data());
    lengths.push_back(s.size());
  }
  cl_int rc = CL_SUCCESS;
  cl_program program = ctx_->cl->clCreateProgramWithSource(
      ctx_->context, static_cast<cl_uint>(strings.size()), strings.data(), lengths.data(), &rc);
  TS_RETURN_IF_ERROR(cl_status(rc, fmt::format("building device program '{}'", what)));
  Program out(ctx_, program);  // released on every path below
  const std::string opts(options);
  rc = ctx_->cl->clBuildProgram(program, 1, &ctx_->device, opts.c_str(), nullptr, nullptr);
  if (rc == CL_SUCCESS) return out;
  std::string log;
  size_t n = 0;
  if (ctx_->cl->clGetProgramBuildInfo(program, ctx_->device, CL_PROGRAM_BUILD_LOG, 0, nullptr,
                                      &n) == CL_SUCCESS && n > 0) {
    log.resize(n);
    if (ctx_->cl->clGetProgramBuildInfo(program, ctx_->device, CL_PROGRAM_BUILD_LOG, n, log.data(),
                                        nullptr) != CL_SUCCESS) {
      log.clear();
    }
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  }
  constexpr size_t kMaxLog = 8192;
  if (log.size() > kMaxLog) log = log.substr(0, kMaxLog) + "\n... (build log cut)";
  return internal_error(fmt::format("building device program '{}' for {}: {} ({}); build log:\n{}",
                                    what, ctx_->info.name, cl_error_name(rc), rc,
                                    log.empty() ? "(empty)" : log));
}

Result<Event> Device::launch(const Kernel& kernel, std::initializer_list<size_t> global,
                             std::initializer_list<size_t> local) {
  if (kernel.handle() == nullptr) return internal_error("launch of an empty Kernel");
  if (global.size() < 1 || global.size() > 3 || (local.size() != 0 && local.size() != global.size())) {
    return internal_error(fmt::format("kernel {}: {} global and {} local dimensions",
                                      kernel.name(), global.size(), local.size()));
  }
  for (size_t g : global) {
    if (g == 0) return Event();  // nothing to run (OpenCL 1.2 refuses an empty range)
  }
  cl_event ev = nullptr;
  const cl_int rc = ctx_->cl->clEnqueueNDRangeKernel(
      ctx_->queue, kernel.handle(), static_cast<cl_uint>(global.size()), nullptr, global.begin(),
      local.size() == 0 ? nullptr : local.begin(), 0, nullptr, &ev);
  TS_RETURN_IF_ERROR(cl_status(rc, fmt::format("launching kernel {}", kernel.name())));
  return Event(ctx_, ev);
}

Status Device::flush() { return cl_status(ctx_->cl->clFlush(ctx_->queue), "clFlush"); }

Status Device::finish() { return cl_status(ctx_->cl->clFinish(ctx_->queue), "clFinish"); }

}  // namespace tessera::device
