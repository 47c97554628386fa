// JobPlanner: which Slurm jobs a cluster's options ask for - pure (no Slurm, no files), so the
// plan is testable on its own. It owns the validation of the models and co-located groups, the
// grouping of co-located models into shared jobs, each job's name, port, CPUs and memory, and the
// replica slots (one per model and replica number, the FleetController's entries) that map onto
// those jobs.
//   slots       model-major: model 0's replicas 0..max_replicas-1, then model 1's, ...
//   jobs        one per (co-located group, replica number); a model alone is a group of one.
//               Job "<cluster>-<members joined by '+'>-<k>" (members in model order); ports are
//               handed out from port_base in slot order, a shared job taking the port its first
//               slot got; CPUs are the members' most, memory their sum.
//   memory      a model's memory_mb, or when 0, twice its file's size + 256 MiB (file sizes are
//               the caller's: model_file_bytes() reads them).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/cluster/replica_host.h"

namespace tessera::cluster {

struct ClusterModelSpec {
  std::string name;          // served name: [A-Za-z0-9._-]+
  std::string path;          // model file, readable on the nodes
  int32_t max_replicas = 2;  // slots
  int32_t min_replicas = 0;  // the first slots kept up (pinned, started by start()); 0: scale to zero
  int cpus = 1;              // per replica
  int64_t memory_mb = 0;     // per replica; 0: from the file's size (2x + 256 MiB)
};

struct JobPlanInput {
  std::string cluster_name;  // [A-Za-z0-9._-]{1,64}
  std::span<const ClusterModelSpec> models;
  std::span<const std::vector<std::string>> colocate;  // groups of model names sharing jobs
  int port_base = 18100;
  std::span<const int64_t> file_bytes;  // per model (missing entries: 0)
};

struct JobPlan {
  std::vector<ReplicaSlot> slots;                 // see above
  std::vector<int32_t> slot_model;                // slot -> model
  std::vector<std::vector<int32_t>> model_slots;  // model -> its slots, by replica number
  std::vector<bool> pinned;                       // slot: replica < the model's min_replicas
  int32_t jobs = 0;                               // distinct jobs
};

// Errors: kInvalidArgument for no models, a bad cluster or model name, a model given twice,
// max_replicas outside 1..64, min_replicas outside 0..max_replicas, a port outside 1..65535, a
// co-located group of fewer than two models or naming an unknown one, a model in two groups,
// members with different max_replicas.
Result<JobPlan> plan_jobs(const JobPlanInput& in);

// Each model file's size in bytes (0 when it cannot be read).
std::vector<int64_t> model_file_bytes(std::span<const ClusterModelSpec> models);

// [A-Za-z0-9._-]{1,64}: a cluster or model name usable in job names.
bool valid_cluster_name(const std::string& s);

}  // namespace tessera::cluster
