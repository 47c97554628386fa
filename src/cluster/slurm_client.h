// SlurmClient: what Tessera asks of a Slurm cluster (submit a batch job, cancel it, list our jobs
// and their states), behind an interface so the cluster controller's tests can use a fake. The one
// real implementation drives Slurm's command-line tools (sbatch, scancel, squeue) as subprocesses;
// the text those tools read and write is built and parsed in slurm_commands.h.
// Thread-safety: the CLI client holds no mutable state; its methods may be called from any
// thread, concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::cluster {

// A batch job: one task running one program.
struct SlurmJobSpec {
  std::string name;               // --job-name; no whitespace, commas, quotes, '|' or controls
  std::vector<std::string> argv;  // the program the job runs, exec'd by the batch script verbatim
  int cpus = 1;                   // --cpus-per-task
  int64_t memory_mb = 0;          // --mem; 0: not given (the cluster's default)
  std::string partition;          // --partition; empty: the default partition
  std::string output;             // --output path (stdout and stderr); empty: /dev/null
  std::vector<std::pair<std::string, std::string>>
      env;  // exported into the job (names: C identifiers)
};

// What a job is doing, folded to what a controller acts on.
enum class SlurmJobState : uint8_t {
  kPending,     // queued, configuring, held, suspended, or a state this client does not know
  kRunning,     // running (its program has started)
  kCompleting,  // ended; Slurm is still cleaning up its processes on the node
  kEnded,       // completed, cancelled, failed, timed out, out of memory, or no longer listed
};
std::string_view slurm_job_state_name(SlurmJobState state);  // "pending", "running", ...

struct SlurmJob {
  int64_t id = 0;
  std::string name;
  SlurmJobState state = SlurmJobState::kPending;
  std::string node;    // the node it runs on; empty while pending
  std::string reason;  // Slurm's reason ("None", "Resources", "Priority", ...)
};

class SlurmClient {
 public:
  virtual ~SlurmClient() = default;
  // Submits `spec`; returns the job id. Errors: kInvalidArgument for a bad spec (name, empty argv,
  // cpus < 1, memory < 0, env names); kUnavailable when the tool cannot run or Slurm refuses
  // (the message carries its output); kDeadlineExceeded when the tool hangs past the timeout.
  virtual Result<int64_t> submit(const SlurmJobSpec& spec) = 0;
  // Cancels a job; ok when it has already ended or is unknown. Errors as for submit.
  virtual Status cancel(int64_t job_id) = 0;
  // This user's jobs that Slurm still lists whose names start with `name_prefix`, in squeue's
  // order. A job missing from the list has ended. Errors as for submit; kCorruptData when the
  // tool's output cannot be parsed.
  virtual Result<std::vector<SlurmJob>> jobs(std::string_view name_prefix) = 0;
};

struct SlurmCliOptions {
  std::string bin_dir;  // where sbatch, squeue and scancel live; empty: looked up in PATH
  std::vector<std::pair<std::string, std::string>> env;  // added for the tools, e.g. SLURM_CONF
  double timeout_s = 10;                                 // per tool invocation
};

// A SlurmClient over Slurm's command-line tools. Never null; does not contact Slurm until used.
std::unique_ptr<SlurmClient> make_slurm_cli_client(SlurmCliOptions options);

}  // namespace tessera::cluster
