#include "tessera/cluster/slurm_client.h"

#include "tessera/cluster/slurm_commands.h"
#include "tessera/cluster/subprocess.h"

namespace tessera::cluster {

namespace {

class SlurmCliClient final : public SlurmClient {
 public:
  explicit SlurmCliClient(SlurmCliOptions options) : options_(std::move(options)) {}

  Result<int64_t> submit(const SlurmJobSpec& spec) override {
    TS_ASSIGN_OR_RETURN(std::vector<std::string> args, sbatch_arguments(spec));
    TS_ASSIGN_OR_RETURN(SubprocessResult r, run_tool("sbatch", args));
    if (!r.succeeded()) return tool_failed("sbatch", "submitting job '" + spec.name + "'", r);
    return parse_sbatch_id(r.output);
  }

  Status cancel(int64_t job_id) override {
    TS_ASSIGN_OR_RETURN(SubprocessResult r, run_tool("scancel", {std::to_string(job_id)}));
    if (r.succeeded() || (!r.timed_out && scancel_says_already_gone(r.output))) return Status::ok();
    return tool_failed("scancel", "cancelling job " + std::to_string(job_id), r);
  }

  Result<std::vector<SlurmJob>> jobs(std::string_view name_prefix) override {
    TS_ASSIGN_OR_RETURN(SubprocessResult r, run_tool("squeue", squeue_arguments()));
    if (!r.succeeded()) return tool_failed("squeue", "listing jobs", r);
    return parse_squeue(r.output, name_prefix);
  }

 private:
  Result<SubprocessResult> run_tool(const std::string& tool, const std::vector<std::string>& args) {
    std::vector<std::string> argv;
    argv.push_back(options_.bin_dir.empty() ? tool : options_.bin_dir + "/" + tool);
    argv.insert(argv.end(), args.begin(), args.end());
    SubprocessOptions sub;
    sub.env = options_.env;
    sub.timeout_s = options_.timeout_s;
    return run_subprocess(argv, sub);
  }

  static Status tool_failed(std::string_view tool, const std::string& what,
                            const SubprocessResult& r) {
    std::string msg = what + ": " + std::string(tool) + " " + r.describe();
    std::string out = r.output;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    if (!out.empty()) msg += ": " + out;
    return Status(r.timed_out ? ErrorCode::kDeadlineExceeded : ErrorCode::kUnavailable, msg);
  }

  const SlurmCliOptions options_;
};

}  // namespace

std::string_view slurm_job_state_name(SlurmJobState state) {
  switch (state) {
    case SlurmJobState::kPending:
      return "pending";
    case SlurmJobState::kRunning:
      return "running";
    case SlurmJobState::kCompleting:
      return "completing";
    case SlurmJobState::kEnded:
      return "ended";
  }
  return "unknown";
}

std::unique_ptr<SlurmClient> make_slurm_cli_client(SlurmCliOptions options) {
  return std::make_unique<SlurmCliClient>(std::move(options));
}

}  // namespace tessera::cluster
