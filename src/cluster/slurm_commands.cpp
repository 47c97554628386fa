#include "tessera/cluster/slurm_commands.h"

#include <charconv>

namespace tessera::cluster {

namespace {

bool parse_int64(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && out >= 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return lines;
}

bool is_identifier(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

Status validate_job_name(std::string_view name) {
  if (name.empty()) return invalid_argument("Slurm job name is empty");
  if (name.size() > 200)
    return invalid_argument("Slurm job name is " + std::to_string(name.size()) +
                            " characters long; at most 200");
  for (char c : name) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == ',' || c == '\'' || c == '"' || c == '`' || c == '|' ||
        c == '\\') {
      std::string shown = (u > 0x20 && u < 0x7f) ? std::string(1, c) : "\\x" + std::to_string(u);
      return invalid_argument("Slurm job name '" + std::string(name) + "' has '" + shown +
                              "'; no whitespace, controls, ',', quotes, '|' or '\\' please");
    }
  }
  return Status::ok();
}

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

Result<std::string> batch_command(const SlurmJobSpec& spec) {
  if (spec.argv.empty()) return invalid_argument("Slurm job '" + spec.name + "' has an empty argv");
  std::string cmd;
  for (const auto& [key, value] : spec.env) {
    if (!is_identifier(key))
      return invalid_argument("Slurm job '" + spec.name + "': environment variable name '" + key +
                              "' is not a C identifier");
    if (value.find('\0') != std::string::npos)
      return invalid_argument("Slurm job '" + spec.name + "': the value of " + key +
                              " has a NUL byte");
    cmd += "export " + key + "=" + shell_quote(value) + "; ";
  }
  cmd += "exec";
  for (const auto& a : spec.argv) {
    if (a.find('\0') != std::string::npos)
      return invalid_argument("Slurm job '" + spec.name + "': an argument has a NUL byte");
    cmd += ' ';
    cmd += shell_quote(a);
  }
  return cmd;
}

Result<std::vector<std::string>> sbatch_arguments(const SlurmJobSpec& spec) {
  TS_RETURN_IF_ERROR(validate_job_name(spec.name));
  if (spec.cpus < 1)
    return invalid_argument("Slurm job '" + spec.name + "': cpus is " + std::to_string(spec.cpus) +
                            "; at least 1");
  if (spec.memory_mb < 0)
    return invalid_argument("Slurm job '" + spec.name + "': memory_mb is negative");
  TS_ASSIGN_OR_RETURN(std::string cmd, batch_command(spec));
  std::vector<std::string> args = {"--parsable", "--job-name=" + spec.name, "--ntasks=1",
                                   "--cpus-per-task=" + std::to_string(spec.cpus)};
  if (spec.memory_mb > 0) args.push_back("--mem=" + std::to_string(spec.memory_mb));
  if (!spec.partition.empty()) args.push_back("--partition=" + spec.partition);
  args.push_back("--output=" + (spec.output.empty() ? std::string("/dev/null") : spec.output));
  args.push_back("--wrap=" + cmd);
  return args;
}

Result<int64_t> parse_sbatch_id(std::string_view output) {
  std::vector<std::string_view> lines = lines_of(output);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    std::string_view line = trim(*it);
    std::string_view id = line.substr(0, line.find(';'));
    int64_t value = 0;
    if (parse_int64(id, value)) return value;
  }
  return corrupt_data("no job id in sbatch's output: '" + std::string(trim(output)) + "'");
}

std::vector<std::string> squeue_arguments() {
  return {"--noheader", "--me", "--format=" + std::string(kSqueueFormat)};
}

SlurmJobState parse_slurm_state(std::string_view state) {
  if (state == "RUNNING" || state == "SIGNALING" || state == "STAGE_OUT")
    return SlurmJobState::kRunning;
  if (state == "COMPLETING") return SlurmJobState::kCompleting;
  static constexpr std::string_view kEnded[] = {
      "COMPLETED", "CANCELLED", "FAILED",        "TIMEOUT",      "NODE_FAIL", "PREEMPTED",
      "BOOT_FAIL", "DEADLINE",  "OUT_OF_MEMORY", "SPECIAL_EXIT", "REVOKED"};
  for (std::string_view s : kEnded) {
    if (state == s) return SlurmJobState::kEnded;
  }
  return SlurmJobState::kPending;  // PENDING, CONFIGURING, REQUEUED*, RESIZING, SUSPENDED, ...
}

Result<std::vector<SlurmJob>> parse_squeue(std::string_view output, std::string_view name_prefix) {
  std::vector<SlurmJob> jobs;
  for (std::string_view raw : lines_of(output)) {
    std::string_view line = trim(raw);
    if (line.empty()) continue;
    std::string_view fields[4];
    std::string_view rest = line;
    for (auto& f : fields) {
      size_t bar = rest.find('|');
      if (bar == std::string_view::npos)
        return corrupt_data("squeue line has fewer than 5 '|'-separated fields: '" +
                            std::string(line) + "'");
      f = rest.substr(0, bar);
      rest.remove_prefix(bar + 1);
    }
    std::string_view name = rest;  // the name comes last and may itself hold '|'
    if (name.substr(0, name_prefix.size()) != name_prefix) continue;
    SlurmJob job;
    if (!parse_int64(fields[0], job.id))
      return corrupt_data("squeue line for job '" + std::string(name) +
                          "' has a job id that is not a number: '" + std::string(line) + "'");
    job.name = std::string(name);
    job.state = parse_slurm_state(fields[1]);
    job.node = std::string(fields[2]);
    job.reason = std::string(fields[3]);
    jobs.push_back(std::move(job));
  }
  return jobs;
}

bool scancel_says_already_gone(std::string_view output) {
  return output.find("Invalid job id") != std::string_view::npos ||
         output.find("already completing or completed") != std::string_view::npos;
}

}  // namespace tessera::cluster
