// The Slurm CLI client against a real (local) cluster: run by slurm_jobs.sh, which starts
// scripts/slurm-local.sh and sets TESSERA_SLURM_CONF (the cluster's slurm.conf) and
// TESSERA_SLURM_TEST_DIR (a scratch directory the jobs can write to). Not registered with CTest
// on its own: without a cluster it has nothing to talk to.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "tessera/base/clock.h"
#include "tessera/cluster/slurm_client.h"

namespace tessera::cluster {
namespace {

constexpr double kWaitS = 60;  // bound on every wait for Slurm to act

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

class SlurmCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    conf_ = env_or_empty("TESSERA_SLURM_CONF");
    dir_ = env_or_empty("TESSERA_SLURM_TEST_DIR");
    if (conf_.empty() || dir_.empty())
      GTEST_SKIP() << "TESSERA_SLURM_CONF / TESSERA_SLURM_TEST_DIR not set (run slurm_jobs.sh)";
    SlurmCliOptions options;
    options.env = {{"SLURM_CONF", conf_}};
    options.timeout_s = 20;
    client_ = make_slurm_cli_client(options);
    prefix_ = "tessera-it-" + std::to_string(getpid()) + "-";
  }

  // The job's entry in squeue, or nullopt once it is no longer listed.
  std::optional<SlurmJob> find(int64_t id) {
    auto jobs = client_->jobs(prefix_);
    EXPECT_TRUE(jobs.is_ok()) << jobs.status().to_string();
    if (!jobs.is_ok()) return std::nullopt;
    for (const auto& j : *jobs)
      if (j.id == id) return j;
    return std::nullopt;
  }

  // Polls until `done` holds for the job (nullopt: not listed), at most kWaitS; returns the
  // seconds it took, or a negative number on timeout.
  template <typename Pred>
  double wait_for(int64_t id, Pred done) {
    const double t0 = real_clock()->now_s();
    while (real_clock()->now_s() - t0 < kWaitS) {
      if (done(find(id))) return real_clock()->now_s() - t0;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }

  static bool ended(const std::optional<SlurmJob>& j) {
    return !j.has_value() || j->state == SlurmJobState::kEnded;
  }

  std::string conf_, dir_, prefix_;
  std::unique_ptr<SlurmClient> client_;
};

TEST_F(SlurmCluster, SubmitRunCancelEnd) {
  SlurmJobSpec spec;
  spec.name = prefix_ + "sleeper";
  spec.argv = {"sleep", "600"};
  spec.memory_mb = 64;
  const double t0 = real_clock()->now_s();
  auto id = client_->submit(spec);
  ASSERT_TRUE(id.is_ok()) << id.status().to_string();
  const double submit_s = real_clock()->now_s() - t0;
  double running_s = wait_for(*id, [](const std::optional<SlurmJob>& j) {
    return j.has_value() && j->state == SlurmJobState::kRunning;
  });
  ASSERT_GE(running_s, 0) << "job " << *id << " not running after " << kWaitS << " s";
  auto job = find(*id);
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->name, spec.name);
  EXPECT_FALSE(job->node.empty());
  std::printf("sbatch took %.3f s; sbatch -> RUNNING %.3f s (on %s)\n", submit_s,
              submit_s + running_s, job->node.c_str());

  ASSERT_TRUE(client_->cancel(*id).is_ok());
  double ended_s = wait_for(*id, ended);
  ASSERT_GE(ended_s, 0) << "job " << *id << " still listed after cancel";
  std::printf("scancel -> ended %.3f s\n", ended_s);
  // Cancelling again, once gone, is fine.
  EXPECT_TRUE(client_->cancel(*id).is_ok());
}

TEST_F(SlurmCluster, JobRunsToCompletionWithExactArgvAndEnv) {
  const std::string out = dir_ + "/exact-" + std::to_string(getpid()) + ".out";
  SlurmJobSpec spec;
  spec.name = prefix_ + "exact";
  spec.argv = {"sh",          "-c",    "printf '[%s]' \"$TESSERA_X\" \"$@\"",
               "sh",          "a b",   "it's",
               "\"q\"",       "$HOME", "`id`",
               "back\\slash", ""};
  spec.env = {{"TESSERA_X", "x 'y' $z"}};
  spec.output = out;
  auto id = client_->submit(spec);
  ASSERT_TRUE(id.is_ok()) << id.status().to_string();
  ASSERT_GE(wait_for(*id, ended), 0) << "job " << *id << " did not end";
  std::ifstream in(out);
  ASSERT_TRUE(in.good()) << "no output file " << out;
  std::stringstream got;
  got << in.rdbuf();
  EXPECT_EQ(got.str(), "[x 'y' $z][a b][it's][\"q\"][$HOME][`id`][back\\slash][]");
}

TEST_F(SlurmCluster, CancelUnknownJobIsOk) { EXPECT_TRUE(client_->cancel(987654321).is_ok()); }

TEST_F(SlurmCluster, BadNameIsRejectedBeforeSlurm) {
  SlurmJobSpec spec;
  spec.name = "has space";
  spec.argv = {"true"};
  EXPECT_EQ(client_->submit(spec).status().code(), ErrorCode::kInvalidArgument);
}

TEST_F(SlurmCluster, UnreachableToolIsUnavailable) {
  SlurmCliOptions options;
  options.bin_dir = "/nonexistent-slurm-bin";
  auto client = make_slurm_cli_client(options);
  auto jobs = client->jobs("");
  ASSERT_FALSE(jobs.is_ok());
  EXPECT_EQ(jobs.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(jobs.status().message().find("squeue"), std::string::npos);
}

}  // namespace
}  // namespace tessera::cluster
