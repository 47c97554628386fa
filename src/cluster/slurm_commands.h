// The text of Slurm's command-line tools, as pure functions: the sbatch, scancel and squeue
// arguments for a request, the batch script that runs a job's argv exactly, and the parsing of
// what sbatch and squeue print. No I/O, so each is tested on its own (slurm_client.cpp runs them).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/cluster/slurm_client.h"

namespace tessera::cluster {

// Ok when `name` is usable as our job name: 1..200 printable ASCII characters, none of them
// whitespace, ',', '\'', '"', '`', '|' or '\\'. Errors: kInvalidArgument saying which character.
Status validate_job_name(std::string_view name);

// `s` in POSIX-shell single quotes ('it'\''s'), so the shell passes it through byte for byte.
std::string shell_quote(std::string_view s);

// The shell command the batch script runs: the job's env exported, then its argv exec'd, every
// word single-quoted ("export A='1'; exec 'prog' 'arg one'"). Errors: kInvalidArgument for an
// empty argv, a NUL byte, or an env name that is not a C identifier.
Result<std::string> batch_command(const SlurmJobSpec& spec);

// sbatch's arguments (without "sbatch" itself) for `spec`: --parsable, name, CPUs, memory,
// partition, output and --wrap with batch_command. Errors: those of validate_job_name and
// batch_command; kInvalidArgument for cpus < 1 or memory_mb < 0.
Result<std::vector<std::string>> sbatch_arguments(const SlurmJobSpec& spec);

// The job id in `sbatch --parsable` output: the last line that reads "<id>" or "<id>;<cluster>"
// (sbatch may print warnings before it). Errors: kCorruptData when there is none.
Result<int64_t> parse_sbatch_id(std::string_view output);

// squeue's arguments (without "squeue"): no header, this user's jobs, kSqueueFormat.
std::vector<std::string> squeue_arguments();
// Job id, state, node list and reason, then the name last (so a '|' in another job's name cannot
// shift the fields), separated by '|'.
inline constexpr std::string_view kSqueueFormat = "%i|%T|%N|%r|%j";

// The jobs in squeue output printed with kSqueueFormat whose names start with `name_prefix`;
// blank lines are skipped. Errors: kCorruptData (quoting the line) when a line has too few
// fields or one of our jobs has an id that is not a number.
Result<std::vector<SlurmJob>> parse_squeue(std::string_view output, std::string_view name_prefix);

// Slurm's long state name ("RUNNING", "COMPLETING", "CANCELLED", ...) folded to SlurmJobState.
// Names this client does not know count as kPending: not yet usable, not known to be gone.
SlurmJobState parse_slurm_state(std::string_view state);

// True when scancel's failure output only says the job is already gone.
bool scancel_says_already_gone(std::string_view output);

}  // namespace tessera::cluster
