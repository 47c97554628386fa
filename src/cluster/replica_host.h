// SlurmReplicaHost: the cluster's ModelHost. Each controller entry is one replica slot of a model
// (as in the simulator's scaling policies); a slot's replica is a `tessera serve` process run as
// a Slurm job through SlurmClient (sbatch/squeue/scancel), listening on the slot's own port.
//
//   load, resume  adopt the slot's job if Slurm still runs it (a restarted controller), else
//                 submit one; Active once the replica answers GET /health. Fails when the job
//                 ends first (naming the job and its log's last line) or after ready_timeout_s.
//   suspend       drain: wait until no forwarded request is running on the slot (at most
//                 drain_timeout_s), then scancel and wait for the job to leave. The replica is
//                 released (scale to zero frees its CPUs and memory for other jobs); its host tier
//                 is empty, so a resume is a cold start.
//   evict         nothing is held: done at once.
// dispatch() hands the request to the owner's forward callback with the replica's address;
// reject() to its reject callback. Moves run on threads of their own and report through the
// move_done callback, never from inside begin_move().
// Thread-safety: begin_move/dispatch/reject/costs are called by the controller's owner under its
// lock (ModelHost's contract); the callbacks are called without any lock of this host held:
// move_done and in_flight from move threads, forward and reject from inside dispatch/reject.
// lost() and job_of() are safe from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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
  std::string job_name;  // unique per slot: how a restarted controller finds the job again
};

struct ReplicaHostOptions {
  std::string tessera_bin;              // the program the jobs run (`tessera`)
  std::vector<std::string> serve_args;  // extra `tessera serve` arguments for every replica
  std::string log_dir;                  // replica logs: <log_dir>/<job_name>.log; empty: none
  std::string partition;                // empty: Slurm's default
  double ready_timeout_s = 180.0;       // job submitted -> /health answers
  double drain_timeout_s = 120.0;       // suspend waits this long for running requests
  double poll_s = 0.05;                 // /health probing interval while a replica starts
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

  SlurmReplicaHost(std::vector<ReplicaSlot> slots, ReplicaHostOptions options, SlurmClient* slurm,
                   Callbacks callbacks);
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
  // Slurm's view of the jobs changed: `jobs` are ours (listed by name prefix). Returns the Active
  // slots whose job is gone (the owner suspends them: the replica was lost).
  std::vector<fleet::ModelIndex> reconcile(const std::vector<SlurmJob>& jobs);

 private:
  struct SlotState {
    int64_t job = 0;
    std::string host = "127.0.0.1";
    bool up = false;              // answered /health since its last start
    double last_start_s = 0.0;    // the last measured cold start, seconds
  };
  void run_move(fleet::ModelIndex m, fleet::Move move);
  Status bring_up(fleet::ModelIndex m);
  Status take_down(fleet::ModelIndex m);
  std::string log_path(const ReplicaSlot& s) const;
  std::string log_tail(const ReplicaSlot& s) const;
  bool sleep_for(double seconds);  // false when stopping

  const std::vector<ReplicaSlot> slots_;
  const ReplicaHostOptions options_;
  SlurmClient* slurm_;
  const Callbacks callbacks_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<SlotState> state_;
  std::list<std::thread> movers_;
  std::vector<std::thread::id> finished_movers_;
};

}  // namespace tessera::cluster
