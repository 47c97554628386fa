// The device layer over OpenCL (PoCL in CI): listing devices, buffers and their byte
// accounting, host<->device and device<->device copies with bounds checks, events, program
// builds whose errors carry the driver's build log, and kernel lookup. Skips where the machine
// has no OpenCL, after checking that the reason is one line.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "device_fixture.h"
#include "tessera/device/device.h"
#include "tessera/device/device_info.h"

namespace tessera::device {
namespace device_test {

Device& dev() { return *device_fixture::shared().device; }

TEST(DeviceInfoTest, ListsDevicesOrSaysWhyInOneLine) {
  auto devices = list_devices();
  if (!devices.is_ok()) {
    EXPECT_EQ(devices.status().code(), ErrorCode::kUnavailable);
    EXPECT_EQ(devices.status().message().find('\n'), std::string::npos)
        << devices.status().message();
    GTEST_SKIP() << "no OpenCL here: " << devices.status().message();
  }
  ASSERT_FALSE(devices->empty());
  for (size_t i = 0; i < devices->size(); ++i) {
    const DeviceInfo& d = (*devices)[i];
    EXPECT_EQ(d.index, static_cast<int>(i));
    EXPECT_FALSE(d.name.empty());
    EXPECT_FALSE(d.platform.empty());
    EXPECT_GT(d.global_mem_bytes, 0u);
    EXPECT_GT(d.max_alloc_bytes, 0u);
    EXPECT_LE(d.max_alloc_bytes, d.global_mem_bytes);
    EXPECT_GT(d.compute_units, 0u);
    EXPECT_GT(d.max_work_group_size, 0u);
  }
}

TEST(DeviceTest, OpenPastTheListIsOutOfRange) {
  TS_DEVICE_OR_SKIP();
  auto d = Device::open(1000);
  ASSERT_FALSE(d.is_ok());
  EXPECT_EQ(d.status().code(), ErrorCode::kOutOfRange);
  EXPECT_NE(d.status().message().find("1000"), std::string::npos);
  EXPECT_EQ(Device::open(-1).status().code(), ErrorCode::kOutOfRange);
}

TEST(DeviceTest, BuffersAreAccountedUntilFreed) {
  TS_DEVICE_OR_SKIP();
  const DeviceMemory before = dev().memory();
  {
    auto a = dev().alloc(1000);
    auto b = dev().alloc(24);
    ASSERT_TRUE(a.is_ok()) << a.status().to_string();
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    EXPECT_EQ(a->bytes(), 1000u);
    DeviceMemory m = dev().memory();
    EXPECT_EQ(m.bytes_in_use, before.bytes_in_use + 1024);
    EXPECT_EQ(m.n_buffers, before.n_buffers + 2);
    EXPECT_GE(m.peak_bytes, before.bytes_in_use + 1024);
    Buffer moved = std::move(a).value();  // a move transfers, never double-counts
    EXPECT_EQ(dev().memory().bytes_in_use, before.bytes_in_use + 1024);
    moved = Buffer();  // freeing by assignment
    EXPECT_EQ(dev().memory().bytes_in_use, before.bytes_in_use + 24);
    EXPECT_EQ(dev().memory().n_buffers, before.n_buffers + 1);
  }
  const DeviceMemory after = dev().memory();
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(after.n_buffers, before.n_buffers);
  EXPECT_GE(after.peak_bytes, before.bytes_in_use + 1024);
}

TEST(DeviceTest, RefusesEmptyAndOversizedBuffers) {
  TS_DEVICE_OR_SKIP();
  EXPECT_EQ(dev().alloc(0).status().code(), ErrorCode::kInvalidArgument);
  const uint64_t too_big = dev().info().max_alloc_bytes + 1;
  auto r = dev().alloc(static_cast<size_t>(too_big));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find(std::to_string(too_big)), std::string::npos)
      << r.status().message();
}

TEST(DeviceTest, CopiesRoundTripAndCheckBounds) {
  TS_DEVICE_OR_SKIP();
  std::vector<uint8_t> src(1021);
  std::iota(src.begin(), src.end(), uint8_t{7});
  auto a = dev().alloc(2048);
  auto b = dev().alloc(1024);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  ASSERT_TRUE(dev().write(*a, 5, src.data(), src.size()).is_ok());
  auto ev = dev().copy(*a, 5, *b, 3, src.size());
  ASSERT_TRUE(ev.is_ok()) << ev.status().to_string();
  ASSERT_TRUE(ev->wait().is_ok());
  EXPECT_TRUE(ev->is_complete());
  std::vector<uint8_t> back(src.size());
  ASSERT_TRUE(dev().read(*b, 3, back.data(), back.size()).is_ok());
  EXPECT_EQ(back, src);

  // Asynchronous write then a read: the in-order queue orders them.
  std::vector<uint8_t> src2(64, 0xab);
  auto w = dev().write_async(*b, 960, src2.data(), src2.size());
  ASSERT_TRUE(w.is_ok());
  std::vector<uint8_t> back2(64);
  ASSERT_TRUE(dev().read(*b, 960, back2.data(), back2.size()).is_ok());
  EXPECT_EQ(back2, src2);
  ASSERT_TRUE(dev().finish().is_ok());

  // Past the end: refused before anything reaches the driver.
  EXPECT_EQ(dev().write(*b, 1000, src.data(), 25).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(dev().read(*b, 1025, back.data(), 0).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(dev().copy(*a, 2000, *b, 0, 100).status().code(), ErrorCode::kInvalidArgument);
  Buffer empty;
  EXPECT_EQ(dev().write(empty, 0, src.data(), 1).code(), ErrorCode::kInvalidArgument);
}

TEST(DeviceTest, BuildsAProgramAndLaunchesItsKernel) {
  TS_DEVICE_OR_SKIP();
  auto program = dev().build_program(
      "test", {"__kernel void scale(__global float* x, float a, int n) {\n",
               "  const int i = get_global_id(0);\n  if (i < n) x[i] *= a;\n}\n"},
      "");
  ASSERT_TRUE(program.is_ok()) << program.status().to_string();
  auto k = program->kernel("scale");
  ASSERT_TRUE(k.is_ok()) << k.status().to_string();
  EXPECT_GE(k->max_work_group_size(), 1u);
  std::vector<float> x(100);
  std::iota(x.begin(), x.end(), 0.0f);
  auto buf = dev().alloc(x.size() * sizeof(float));
  ASSERT_TRUE(buf.is_ok());
  ASSERT_TRUE(dev().write(*buf, 0, x.data(), x.size() * sizeof(float)).is_ok());
  ASSERT_TRUE(k->set_arg(0, *buf).is_ok());
  ASSERT_TRUE(k->set_arg(1, 2.5f).is_ok());
  ASSERT_TRUE(k->set_arg(2, int32_t{100}).is_ok());
  auto ev = dev().launch(*k, {128}, {});
  ASSERT_TRUE(ev.is_ok()) << ev.status().to_string();
  ASSERT_TRUE(ev->wait().is_ok());
  std::vector<float> y(x.size());
  ASSERT_TRUE(dev().read(*buf, 0, y.data(), y.size() * sizeof(float)).is_ok());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], x[i] * 2.5f) << i;

  EXPECT_EQ(program->kernel("no_such_kernel").status().code(), ErrorCode::kNotFound);
  // A wrong argument is the caller's bug, reported with the kernel's name.
  Status bad = k->set_arg(7, 1.0f);
  EXPECT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("scale"), std::string::npos) << bad.message();
}

TEST(DeviceTest, BuildErrorsCarryTheBuildLog) {
  TS_DEVICE_OR_SKIP();
  auto program = dev().build_program(
      "broken", {"__kernel void f(__global float* x) { x[0] = undeclared_name_42; }\n"}, "");
  ASSERT_FALSE(program.is_ok());
  const std::string& m = program.status().message();
  EXPECT_NE(m.find("building device program 'broken'"), std::string::npos) << m;
  EXPECT_NE(m.find("build log"), std::string::npos) << m;
  EXPECT_NE(m.find("undeclared_name_42"), std::string::npos) << m;
}

}  // namespace device_test
}  // namespace tessera::device
