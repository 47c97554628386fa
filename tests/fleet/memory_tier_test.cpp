// Memory tiers: the budget accountant, and file-backed and anonymous regions moving between
// Active, Host and Disk with the resident set size measured from /proc, contents checked after
// every round trip. TESSERA_TIER_BENCH_MIB=N makes the Timings test move N MiB (default 64) and
// print resume times next to a memcpy measured in the same run.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tessera/base/mapped_file.h"
#include "tessera/fleet/anonymous_region.h"
#include "tessera/fleet/image_file_region.h"
#include "tessera/fleet/file_backed_region.h"
#include "tessera/fleet/memory_budget.h"
#include "tessera/fleet/process_memory.h"

namespace tessera::fleet {
// RSS checks allow 25% slack: sanitizer runtimes allocate (shadow, quarantine) between
// measurements; page residency (mincore) checks stay at 90%.
namespace memory_tier_test {

constexpr size_t kMiB = 1u << 20;

int64_t rss() {
  Result<int64_t> r = resident_bytes();
  TS_CHECK(r.is_ok());
  return *r;
}

int64_t resident_of(const TieredRegion& region) {
  Result<int64_t> r = resident_bytes_of(region.bytes());
  TS_CHECK(r.is_ok());
  return *r;
}

// Word i of the image holds a mix of i, so any misplaced chunk is caught.
uint64_t word(size_t i) { return (i * 0x9E3779B97F4A7C15ull) ^ (i >> 7); }

void fill(std::span<std::byte> bytes) {
  auto* w = reinterpret_cast<uint64_t*>(bytes.data());
  for (size_t i = 0; i < bytes.size() / 8; ++i) w[i] = word(i);
}

bool matches(std::span<const std::byte> bytes) {
  const auto* w = reinterpret_cast<const uint64_t*>(bytes.data());
  for (size_t i = 0; i < bytes.size() / 8; ++i) {
    if (w[i] != word(i)) return false;
  }
  return true;
}

class TempDir {
 public:
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "tessera-fleet-XXXXXX").string();
    std::vector<char> buf(t.begin(), t.end());
    buf.push_back('\0');
    TS_CHECK(::mkdtemp(buf.data()) != nullptr);
    path_ = buf.data();
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string write_file(const std::string& dir, size_t n) {
  std::vector<std::byte> buf(n);
  fill(buf);
  const std::string path = dir + "/weights.bin";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  TS_CHECK(f != nullptr);
  TS_CHECK(std::fwrite(buf.data(), 1, n, f) == n);
  TS_CHECK(std::fclose(f) == 0);
  return path;
}

size_t bench_bytes() {
  const char* env = std::getenv("TESSERA_TIER_BENCH_MIB");
  return (env != nullptr ? static_cast<size_t>(std::atol(env)) : 64) * kMiB;
}

// --- MemoryBudget ----------------------------------------------------------------------------

TEST(MemoryBudgetTest, ReservesReleasesAndRefusesWhatDoesNotFit) {
  MemoryBudget b(1000);
  EXPECT_TRUE(b.reserve("a", 600).is_ok());
  EXPECT_TRUE(b.reserve("b", 300).is_ok());
  EXPECT_EQ(b.used(), 900);
  EXPECT_EQ(b.available(), 100);
  Status st = b.reserve("c", 101);
  EXPECT_EQ(st.code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(st.message().find("'c'"), std::string::npos);
  EXPECT_EQ(b.used(), 900);
  EXPECT_EQ(b.held_by("c"), 0);
  EXPECT_TRUE(b.reserve("a", 100).is_ok());  // adds to a's reservation: exactly full
  EXPECT_EQ(b.held_by("a"), 700);
  EXPECT_EQ(b.available(), 0);
  EXPECT_EQ(b.release("a"), 700);
  EXPECT_EQ(b.release("a"), 0);
  EXPECT_EQ(b.release("nobody"), 0);
  EXPECT_EQ(b.used(), 300);
}

TEST(MemoryBudgetTest, ZeroCapacityIsUnlimitedButAccounted) {
  MemoryBudget b(0);
  EXPECT_TRUE(b.reserve("a", int64_t{1} << 50).is_ok());
  EXPECT_EQ(b.used(), int64_t{1} << 50);
  EXPECT_GT(b.available(), int64_t{1} << 60);
}

// --- FileBackedRegion ------------------------------------------------------------------------

TEST(FileBackedRegionTest, SuspendReleasesRssAndResumeRestoresTheSameBytes) {
  TempDir dir;
  const size_t n = 64 * kMiB;
  Result<std::shared_ptr<MappedFile>> file = MappedFile::open(write_file(dir.path(), n));
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  FileBackedRegion region(*file);
  ASSERT_TRUE(region.move_to(Tier::kDisk, 1).is_ok());
  EXPECT_EQ(region.tier(), Tier::kDisk);
  EXPECT_LT(resident_of(region), static_cast<int64_t>(n / 2)) << "page cache not dropped";

  const int64_t rss_cold = rss();
  Result<MoveStats> up = region.move_to(Tier::kActive, 4);
  ASSERT_TRUE(up.is_ok()) << up.status().to_string();
  EXPECT_EQ(region.tier(), Tier::kActive);
  EXPECT_EQ(up->from, Tier::kDisk);
  EXPECT_EQ(up->bytes, n);
  const int64_t rss_active = rss();
  EXPECT_GE(rss_active - rss_cold, static_cast<int64_t>(n * 3 / 4));
  EXPECT_TRUE(matches(region.bytes()));

  Result<MoveStats> down = region.move_to(Tier::kHost, 1);
  ASSERT_TRUE(down.is_ok()) << down.status().to_string();
  const int64_t rss_host = rss();
  EXPECT_GE(rss_active - rss_host, static_cast<int64_t>(n * 3 / 4)) << "RSS did not drop";
  // The host image is the page cache: still resident, outside the process.
  EXPECT_GE(resident_of(region), static_cast<int64_t>(n * 9 / 10));

  ASSERT_TRUE(region.move_to(Tier::kActive, 2).is_ok());
  EXPECT_GE(rss() - rss_host, static_cast<int64_t>(n * 3 / 4));
  EXPECT_TRUE(matches(region.bytes()));

  ASSERT_TRUE(region.move_to(Tier::kDisk, 1).is_ok());
  EXPECT_LE(rss(), rss_host + static_cast<int64_t>(n / 10));
  EXPECT_LT(resident_of(region), static_cast<int64_t>(n / 2));
  ASSERT_TRUE(region.move_to(Tier::kActive, 3).is_ok());
  EXPECT_TRUE(matches(region.bytes()));

  Result<MoveStats> same = region.move_to(Tier::kActive, 3);
  ASSERT_TRUE(same.is_ok());
  EXPECT_EQ(same->bytes, 0u);
}

// --- AnonymousRegion -------------------------------------------------------------------------

TEST(AnonymousRegionTest, HostRoundTripReleasesRss) {
  const size_t n = 64 * kMiB;
  TempDir dir;
  auto region = AnonymousRegion::create(n, dir.path());
  ASSERT_TRUE(region.is_ok()) << region.status().to_string();
  AnonymousRegion& r = **region;
  fill(r.mutable_bytes());
  const int64_t rss_active = rss();
  Result<MoveStats> down = r.move_to(Tier::kHost, 4);
  ASSERT_TRUE(down.is_ok()) << down.status().to_string();
  EXPECT_EQ(r.tier(), Tier::kHost);
  const int64_t rss_host = rss();
  EXPECT_GE(rss_active - rss_host, static_cast<int64_t>(n * 3 / 4)) << "RSS did not drop";
  // The host image: in RAM (the memfd), outside the process's resident set.
  EXPECT_GE(resident_of(r), static_cast<int64_t>(n * 9 / 10));
  Result<MoveStats> up = r.move_to(Tier::kActive, 4);
  ASSERT_TRUE(up.is_ok()) << up.status().to_string();
  EXPECT_GE(rss() - rss_host, static_cast<int64_t>(n * 3 / 4));
  EXPECT_TRUE(matches(r.bytes()));
  EXPECT_EQ(r.bytes().data(), r.mutable_bytes().data());  // the address never moves
}

TEST(AnonymousRegionTest, DiskRoundTripsDirectAndThroughHost) {
  const size_t n = 8 * kMiB + 12345 * 8;  // not a multiple of the chunk or page size
  TempDir dir;
  auto region = AnonymousRegion::create(n, dir.path());
  ASSERT_TRUE(region.is_ok());
  AnonymousRegion& r = **region;
  fill(r.mutable_bytes());
  const std::byte* addr = r.bytes().data();
  ASSERT_TRUE(r.move_to(Tier::kDisk, 3).is_ok());
  EXPECT_EQ(r.tier(), Tier::kDisk);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));  // spill files are unlinked at once
  ASSERT_TRUE(r.move_to(Tier::kActive, 3).is_ok());
  EXPECT_TRUE(matches(r.bytes()));
  ASSERT_TRUE(r.move_to(Tier::kHost, 2).is_ok());
  ASSERT_TRUE(r.move_to(Tier::kDisk, 2).is_ok());
  EXPECT_EQ(resident_of(r), 0);  // the RAM copy is given back
  ASSERT_TRUE(r.move_to(Tier::kHost, 1).is_ok());
  EXPECT_EQ(r.tier(), Tier::kHost);
  ASSERT_TRUE(r.move_to(Tier::kActive, 1).is_ok());
  EXPECT_TRUE(matches(r.bytes()));
  EXPECT_EQ(r.bytes().data(), addr);
}

// --- ImageFileRegion -------------------------------------------------------------------------

TEST(ImageFileRegionTest, HostAndDiskRoundTripsReleaseMemoryAndKeepTheImage) {
  const size_t n = 64 * kMiB + 12345 * 8;  // not a multiple of the page size
  TempDir dir;
  auto region = ImageFileRegion::create(n, dir.path());
  ASSERT_TRUE(region.is_ok()) << region.status().to_string();
  ImageFileRegion& r = **region;
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));  // unlinked at once
  fill(r.mutable_bytes());
  const std::byte* addr = r.bytes().data();
  const int64_t rss_active = rss();
  ASSERT_TRUE(r.move_to(Tier::kHost, 4).is_ok());
  const int64_t rss_host = rss();
  EXPECT_GE(rss_active - rss_host, static_cast<int64_t>(n * 3 / 4)) << "RSS did not drop";
  EXPECT_GE(resident_of(r), static_cast<int64_t>(n * 9 / 10));  // in the page cache
  ASSERT_TRUE(r.move_to(Tier::kActive, 4).is_ok());
  EXPECT_GE(rss() - rss_host, static_cast<int64_t>(n * 3 / 4));  // prefaulted
  EXPECT_TRUE(matches(r.bytes()));
  ASSERT_TRUE(r.move_to(Tier::kDisk, 2).is_ok());
  EXPECT_EQ(r.tier(), Tier::kDisk);
  EXPECT_LT(resident_of(r), static_cast<int64_t>(n / 2)) << "page cache not dropped";
  ASSERT_TRUE(r.move_to(Tier::kActive, 3).is_ok());
  EXPECT_TRUE(matches(r.bytes()));
  EXPECT_EQ(r.bytes().data(), addr);  // the address never moves
  EXPECT_EQ(ImageFileRegion::create(0).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ImageFileRegion::create(kMiB, "/nonexistent/tessera-images").status().code(),
            ErrorCode::kIoError);
}

TEST(AnonymousRegionTest, SpillDirectoryErrorsAreReported) {
  auto region = AnonymousRegion::create(kMiB, "/nonexistent/tessera-spill");
  ASSERT_TRUE(region.is_ok());
  fill((*region)->mutable_bytes());
  Result<MoveStats> r = (*region)->move_to(Tier::kDisk, 1);
  EXPECT_EQ(r.status().code(), ErrorCode::kIoError);
  EXPECT_NE(r.status().message().find("/nonexistent/tessera-spill"), std::string::npos);
  EXPECT_EQ((*region)->tier(), Tier::kActive);
  EXPECT_TRUE(matches((*region)->bytes()));
  EXPECT_EQ(AnonymousRegion::create(0).status().code(), ErrorCode::kInvalidArgument);
}

// --- Timings (printed, not asserted: speed is claimed by benchmarks) --------------------------

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(TierTimingsTest, ResumeTimesNextToMemcpy) {
  const size_t n = bench_bytes();
  TempDir dir;
  // Memory bandwidth peer: best of 3 memcpy of n bytes between two prefaulted buffers.
  std::vector<std::byte> a(n), b(n);
  fill(a);
  std::memset(b.data(), 1, n);
  double best_copy = 1e9;
  for (int i = 0; i < 3; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), n);
    best_copy = std::min(best_copy, seconds_since(t0));
  }
  std::printf("tier timings: %.0f MiB; memcpy %.2f ms (%.2f GiB/s, read+write)\n",
              static_cast<double>(n) / kMiB, best_copy * 1e3, n / best_copy / (1u << 30));
  {
    std::FILE* f = std::fopen((dir.path() + "/w.bin").c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(a.data(), 1, n, f), n);
    ASSERT_EQ(std::fclose(f), 0);
  }
  std::vector<std::byte>().swap(b);
  auto file = MappedFile::open(dir.path() + "/w.bin");
  ASSERT_TRUE(file.is_ok());
  FileBackedRegion fr(*file);
  auto anon = AnonymousRegion::create(n, dir.path());
  ASSERT_TRUE(anon.is_ok());
  std::memcpy((*anon)->mutable_bytes().data(), a.data(), n);
  std::vector<std::byte>().swap(a);
  for (int threads : {1, 2, 4}) {
    ASSERT_TRUE(fr.move_to(Tier::kDisk, 1).is_ok());
    auto cold = fr.move_to(Tier::kActive, threads);
    ASSERT_TRUE(cold.is_ok());
    const int64_t before = rss();
    auto down = fr.move_to(Tier::kHost, 1);
    ASSERT_TRUE(down.is_ok());
    const int64_t after = rss();
    auto warm = fr.move_to(Tier::kActive, threads);
    ASSERT_TRUE(warm.is_ok());
    std::printf("  file-backed  %d thr: suspend %.2f ms (RSS -%.0f MiB) | resume from host "
                "(page cache) %.2f ms = %.2fx memcpy | from disk %.2f ms (%.2f GiB/s)\n",
                threads, down->seconds * 1e3, static_cast<double>(before - after) / kMiB,
                warm->seconds * 1e3, warm->seconds / best_copy, cold->seconds * 1e3,
                cold->gib_per_s());
    const int64_t a_before = rss();
    auto a_down = (*anon)->move_to(Tier::kHost, threads);
    ASSERT_TRUE(a_down.is_ok());
    const int64_t a_after = rss();
    auto a_up = (*anon)->move_to(Tier::kActive, threads);
    ASSERT_TRUE(a_up.is_ok());
    auto d_down = (*anon)->move_to(Tier::kDisk, threads);
    ASSERT_TRUE(d_down.is_ok());
    auto d_up = (*anon)->move_to(Tier::kActive, threads);
    ASSERT_TRUE(d_up.is_ok());
    std::printf("  anonymous    %d thr: suspend %.2f ms (RSS -%.0f MiB) | resume from host "
                "(memfd) %.2f ms = %.2fx memcpy | spill %.2f ms, resume from spill %.2f ms\n",
                threads, a_down->seconds * 1e3, static_cast<double>(a_before - a_after) / kMiB,
                a_up->seconds * 1e3, a_up->seconds / best_copy, d_down->seconds * 1e3,
                d_up->seconds * 1e3);
    EXPECT_TRUE(matches((*anon)->bytes()));
  }
}

}  // namespace memory_tier_test
}  // namespace tessera::fleet
