// The device tests' one OpenCL device and compiled kernels, opened and built once per test
// process (ctest runs each test case as its own process; PoCL also caches the compiled programs
// on disk, so only the first build of a machine costs LLVM's time). Where no OpenCL library or
// platform exists, tests GTEST_SKIP with the layer's own one-line reason. Also the tests'
// upload/download helpers (they abort the test process on a device error: a broken layer, not a
// kernel's numbers).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessera/base/check.h"
#include "tessera/base/rng.h"
#include "tessera/device/device.h"
#include "tessera/device/device_kernels.h"

namespace tessera::device::device_fixture {

struct Shared {
  Status status;                      // why there is no device, or ok
  std::optional<Device> device;
  std::optional<DeviceKernels> kernels;
};

// Opens device 0 ($TESSERA_TEST_OPENCL_DEVICE picks another) and builds the kernels, once.
// Never destroyed: releasing OpenCL objects from a static destructor races the driver's own
// teardown at exit.
inline Shared& shared() {
  static Shared& s = *[] {
    auto* out_ptr = new Shared;
    Shared& out = *out_ptr;
    int index = 0;
    if (const char* env = std::getenv("TESSERA_TEST_OPENCL_DEVICE")) index = std::atoi(env);
    auto device = Device::open(index);
    if (!device.is_ok()) {
      out.status = device.status();
      return out_ptr;
    }
    out.device.emplace(std::move(device).value());
    auto kernels = DeviceKernels::build(*out.device);
    if (!kernels.is_ok()) {
      out.status = kernels.status();  // a build failure is a test failure, not a skip
      return out_ptr;
    }
    out.kernels.emplace(std::move(kernels).value());
    return out_ptr;
  }();
  return s;
}

// True where the layer reports no OpenCL library or platform (kUnavailable): the tests skip.
inline bool no_opencl() {
  return !shared().device.has_value() && shared().status.code() == ErrorCode::kUnavailable;
}

inline Device& dev() { return *shared().device; }
inline DeviceKernels& dk() { return *shared().kernels; }

inline std::vector<float> random_floats(Rng& rng, size_t n, double lo, double hi) {
  std::vector<float> v(n);
  for (float& f : v) f = static_cast<float>(lo + (hi - lo) * rng.uniform());
  return v;
}

inline Buffer upload(const void* data, size_t bytes) {
  auto b = dev().alloc(bytes);
  TS_CHECK_MSG(b.is_ok(), b.status().to_string());
  TS_CHECK_MSG(dev().write(*b, 0, data, bytes).is_ok(), "upload");
  return std::move(b).value();
}
template <typename T>
Buffer upload(const std::vector<T>& v) {
  return upload(v.data(), v.size() * sizeof(T));
}

template <typename T = float>
std::vector<T> download(const Buffer& b, size_t n) {
  std::vector<T> v(n);
  const Status s = dev().read(b, 0, v.data(), n * sizeof(T));
  TS_CHECK_MSG(s.is_ok(), s.to_string());
  return v;
}

}  // namespace tessera::device::device_fixture

// Skips the test where this machine has no OpenCL (with the layer's reason); fails it where the
// device opened but the kernels did not build.
#define TS_DEVICE_OR_SKIP()                                                                    \
  do {                                                                                         \
    if (::tessera::device::device_fixture::no_opencl()) {                                      \
      GTEST_SKIP() << "no OpenCL device here (install ocl-icd-libopencl1 and pocl-opencl-icd): " \
                   << ::tessera::device::device_fixture::shared().status.message();            \
    }                                                                                          \
    ASSERT_TRUE(::tessera::device::device_fixture::shared().kernels.has_value())               \
        << ::tessera::device::device_fixture::shared().status.to_string();                     \
  } while (0)
