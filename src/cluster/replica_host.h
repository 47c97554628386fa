// SlurmReplicaHost: the cluster's ModelHost. Each controller entry is one replica slot of a model
// (as in the simulator's scaling policies); a slot's replica is a `tessera serve` process run as
// a Slurm job through SlurmClient (sbatch/squeue/scancel). Slots that name the same job_name
// share one job (a multi-model replica: one fleet-mode `tessera serve` serving each of their
// models, on one port); otherwise each slot has a job of its own.
//
//   load, resume  a slot whose job is kept with its model suspended in place: resume it in the
//                 replica (POST /admin/models/{name}/resume). Otherwise adopt the slot's job if
//                 Slurm still runs it (a restarted controller), else submit one (a cold start);
//                 Active once the replica answers GET /health and, in a fleet-mode replica, its
//                 model is active. Fails when the job ends first (naming the job and its log's
//                 last line) or after ready_timeout_s.
//                 A slot whose shared job already runs (for another of its models) comes up in
//                 place (its model resumed or loaded in the running replica).
//   suspend       drain: wait until no forwarded request is running on the slot (at most
//                 drain_timeout_s); then, by ReplicaHostOptions::suspend, either suspend the
//                 model in place (the job is kept: its CPUs and memory stay allocated, a resume
//                 skips scheduling, process start and the weights' load) or scancel the job and
//                 wait for it to leave (released: its CPUs and memory go back to Slurm, and the
//                 next start is cold). A shared job still serving another model (or starting it)
//                 is never released: the model is suspended in place. Releasing a shared job
//                 drops the models kept in it (their next start is cold).
//   evict         a kept model: evicted in its replica when the job still serves or keeps
//                 another model, else the job is released (after a release nothing is held:
//                 done at once).
// Suspend modes:
//   release  always release (replicas run `tessera serve --model`).
//   keep     always suspend in place (replicas run a one-model fleet: `tessera serve --config`
//            with the idle policy always-on, so only the controller suspends them).
//   auto     fleet-mode replicas; at each suspend, whichever the slot's measured costs favour:
//            keep when its mean measured cold start would spend more than half the TTFT SLO and
//            its mean measured in-place resume is at most keep_ratio of that cold start (before
//            any in-place resume was measured: keep, to measure one); else release.
// The controller releases kept jobs by evict: after a time suspended, or when the memory they
// hold passes its budget (cheapest expected cold start per byte first; costs() reports a kept
// job's memory as its host_bytes).
// dispatch() hands the request to the owner's forward callback with the replica's address;
// reject() to its reject callback. Moves run on threads of their own and report through the
// move_done callback, never from inside begin_move().
// Thread-safety: begin_move/dispatch/reject/costs are called by the controller's owner under its
// lock (ModelHost's contract); the callbacks are called without any lock of this host held:
// move_done and in_flight from move threads, forward and reject from inside dispatch/reject.
// lost(), job_of(), measured() and reconcile() are safe from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tessera/base/clock.h"
#include "tessera/base/status.h"
#include "tessera/cluster/slurm_client.h"
#include "tessera/fleet/model_host.h"

namespace tessera::cluster {

struct ReplicaSlot {
  std::string model;     // served model name (the replica's --name)
  std::string path;      // model file
  int32_t replica = 0;   // slot number within the model
  int port = 0;          // the replica's HTTP port
  int cpus = 1;          // --cpus-per-task, and the replica's compute threads
  int64_t memory_mb = 0; // --mem (0: not given)
  std::string job_name;  // how a restarted controller finds the job again; slots naming the
                         // same job share it (then port, cpus and memory_mb are the job's)
};

enum class SuspendMode : uint8_t { kAuto, kKeep, kRelease };
// "auto", "keep", "release"; errors: kInvalidArgument naming the choices.
Result<SuspendMode> suspend_mode_from_name(const std::string& name);
std::string_view suspend_mode_name(SuspendMode mode);

struct ReplicaHostOptions {
  std::string tessera_bin;              // the program the jobs run (`tessera`)
  std::vector<std::string> serve_args;  // extra `tessera serve` arguments for every replica
  std::string log_dir;                  // replica logs: <log_dir>/<job_name>.log; empty: none
  std::string partition;                // empty: Slurm's default
  double ready_timeout_s = 180.0;       // job submitted -> /health answers
  double drain_timeout_s = 120.0;       // suspend waits this long for running requests
  double poll_s = 0.05;                 // /health probing interval while a replica starts
  SuspendMode suspend = SuspendMode::kRelease;
  double keep_ratio = 0.5;              // auto: keep when resume <= keep_ratio x cold start
  double ttft_slo_s = 2.0;              // auto: a cold start above half of it is worth avoiding
  // Fleet-mode replicas' config files (<config_dir>/<job_name>.json), readable on the nodes;
  // empty: log_dir, else the system's temporary directory.
  std::string config_dir;
};

// What a slot's moves have measured (means over the slot's history; 0 when none yet).
struct ReplicaMeasures {
  bool kept = false;             // its job runs with the model suspended in place
  int64_t cold_starts = 0;       // jobs submitted and come up
  double cold_start_s = 0.0;     // sbatch -> ready, mean
  int64_t resumes_in_place = 0;
  double resume_s = 0.0;         // admin resume -> active, mean
  int64_t kept_downs = 0, released_downs = 0;  // suspends by what they did
  int64_t kept_released = 0;     // kept jobs later released (evict: time or memory)
  std::string last_down;         // why the last suspend kept or released the job
};

class SlurmReplicaHost final : public fleet::ModelHost {
 public:
  struct Callbacks {
    // A move finished (see ModelHost). Called on a move thread.
    std::function<void(fleet::ModelIndex, const Status&)> move_done;
    // Forward request `id` to the replica at host:port. Called inside dispatch().
    std::function<void(fleet::ModelIndex, engine::RequestId, const std::string& host, int port)> forward;
    // Request `id` will not be served. Called inside reject().
    std::function<void(fleet::ModelIndex, engine::RequestId, const Status&)> reject;
    // Requests running on the slot now (suspend drains to 0). Called on a move thread.
    std::function<int32_t(fleet::ModelIndex)> in_flight;
  };

  // `slurm` and `clock` are not owned and must outlive the host; `clock` times every wait
  // (readiness, drains, releases).
  SlurmReplicaHost(std::vector<ReplicaSlot> slots, ReplicaHostOptions options, SlurmClient* slurm,
                   const Clock* clock, Callbacks callbacks);
  ~SlurmReplicaHost() override;  // stop(): joins the move threads
  SlurmReplicaHost(const SlurmReplicaHost&) = delete;
  SlurmReplicaHost& operator=(const SlurmReplicaHost&) = delete;

  void begin_move(fleet::ModelIndex m, fleet::Move move) override;
  Status dispatch(fleet::ModelIndex m, engine::RequestId id) override;
  void reject(fleet::ModelIndex m, engine::RequestId id, const Status& why) override;
  fleet::ModelCosts costs(fleet::ModelIndex m) const override;

  // Ends running moves (they fail with kCancelled) and joins their threads. Jobs stay.
  void stop();

  const ReplicaSlot& slot(fleet::ModelIndex m) const { return slots_[static_cast<size_t>(m)]; }
  int32_t size() const { return static_cast<int32_t>(slots_.size()); }
  // The Slurm job serving slot m (0: none known) and its node.
  int64_t job_of(fleet::ModelIndex m) const;
  ReplicaMeasures measured(fleet::ModelIndex m) const;
  bool kept(fleet::ModelIndex m) const;  // measured(m).kept without the copy
  // Whether slot m's replica runs as a fleet-mode `tessera serve` (suspend in place possible):
  // in modes keep and auto, and always for a shared job.
  bool fleet_mode(fleet::ModelIndex m) const;
  // Slurm's view of the jobs changed: `jobs` are ours (listed by name prefix). Returns the Active
  // slots whose job is gone (the owner suspends them: the replica was lost). A kept job that is
  // gone is forgotten (the next start is cold).
  std::vector<fleet::ModelIndex> reconcile(const std::vector<SlurmJob>& jobs);

 private:
  struct JobState {
    std::string name;
    std::vector<fleet::ModelIndex> members;  // the slots it serves
    int64_t id = 0;               // the Slurm job (0: none)
    std::string host = "127.0.0.1";
    bool running = false;         // answered /health since it was submitted or adopted
    bool busy = false;            // being started or released: other members' moves wait
    int64_t cold_starts = 0;
    int64_t cold_sum_ns = 0;
  };
  struct SlotState {
    int32_t job = 0;              // index into jobs_
    bool up = false;              // its model is active in the running job
    bool bringing = false;        // a bring-up of this slot is under way
    ReplicaMeasures measures;     // cold-start fields filled from its job on reads
    int64_t resume_sum_ns = 0;
  };
  // Whether another member of slot m's job is up or coming up (or, with count_kept, kept): the
  // job must stay for it.
  bool others_hold_locked(fleet::ModelIndex m, bool count_kept) const;
  // Waits until slot m's job is not busy and marks it busy; false when stopping.
  bool claim_job_locked(std::unique_lock<std::mutex>& lock, int32_t j);
  void release_job_claim(int32_t j);
  // A job started for slot m: adopted (Slurm still runs it) or submitted here.
  struct JobStart {
    int64_t job = 0;
    std::string node;        // where Slurm runs it ("" while pending)
    bool submitted = false;  // a cold start to measure
  };
  // Brings slot m's job up from nothing: adopt_or_submit(), then wait_ready(). Call with the job
  // claimed; t0_ns is when the move began.
  Status cold_start(fleet::ModelIndex m, int64_t t0_ns);
  // Finds slot m's job in Slurm's list, else submits job_spec(m).
  Result<JobStart> adopt_or_submit(fleet::ModelIndex m);
  // The sbatch spec of slot m's job (writes a fleet-mode replica's config file).
  Result<SlurmJobSpec> job_spec(fleet::ModelIndex m) const;
  // Polls the replica's /health every poll_s until it answers (then replica_answered()); fails
  // when the job ends first, once ready_timeout_s passed on the clock since t0_ns, or when stopping.
  Status wait_ready(fleet::ModelIndex m, JobStart start, int64_t t0_ns);
  // The replica answered /health: its model made active (fleet mode; else the job is cancelled)
  // and the job marked running, its cold start measured.
  Status replica_answered(fleet::ModelIndex m, const std::string& host, const JobStart& start, int64_t t0_ns);
  // Whether Slurm still runs `job` (its node into *node when it does).
  Result<bool> job_alive(const std::string& job_name, int64_t job, std::string* node);
  void run_move(fleet::ModelIndex m, fleet::Move move);
  Status bring_up(fleet::ModelIndex m);
  // bring_up() of a slot whose job runs: its model made active in the replica. Called with the
  // job claimed and `lock` held; returns with `lock` released. nullopt: that failed and the job
  // was released, for a cold start.
  std::optional<Status> bring_up_in_place(fleet::ModelIndex m, int64_t t0_ns,
                                          std::unique_lock<std::mutex>& lock);
  Status take_down(fleet::ModelIndex m);
  // Cancels job j and waits for it to leave; every member forgets it. Call with the job claimed.
  Status release(int32_t j, int64_t job, int64_t since_ns);
  // Fleet-mode replicas: asks the replica to `action` (suspend/resume/load) its model and waits
  // (at most timeout_ns) until the model is `want` ("suspended"/"active").
  Status admin_move(fleet::ModelIndex m, const std::string& host, const std::string& action,
                    const std::string& want, int64_t timeout_ns);
  // Fleet-mode replicas: the model is active (resumed or loaded when it is not).
  Status ensure_active(fleet::ModelIndex m, const std::string& host, bool* moved = nullptr);
  bool keep_on_suspend(fleet::ModelIndex m, std::string* why) const;
  Result<std::string> write_config(int32_t j) const;
  std::string log_path(const ReplicaSlot& s) const;
  std::string log_tail(const ReplicaSlot& s) const;
  bool sleep_ns(int64_t ns);  // false when stopping

  const std::vector<ReplicaSlot> slots_;
  const ReplicaHostOptions options_;
  SlurmClient* slurm_;
  const Clock* const clock_;
  const Callbacks callbacks_;
  const int64_t ready_timeout_ns_, drain_timeout_ns_, poll_ns_;  // options_, on the clock

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<SlotState> state_;
  std::vector<JobState> jobs_;
  std::list<std::thread> movers_;
  std::vector<std::thread::id> finished_movers_;
};

}  // namespace tessera::cluster
