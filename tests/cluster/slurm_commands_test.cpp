// The text of Slurm's tools: job-name validation, shell quoting (checked by running the batch
// command through a real /bin/sh), sbatch arguments, and parsing sbatch and squeue output.
#include "tessera/cluster/slurm_commands.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tessera/cluster/subprocess.h"

namespace tessera::cluster {
namespace slurm_commands_test {

const std::vector<std::string>& odd_arguments() {
  static const std::vector<std::string> args = {"plain",
                                                "a b",
                                                "  two  spaces ",
                                                "it's",
                                                "\"double\"",
                                                "$HOME",
                                                "${PATH}",
                                                "`id`",
                                                "$(id)",
                                                "back\\slash",
                                                "",
                                                "new\nline",
                                                "tab\there",
                                                "*",
                                                "semi;colon&amp|pipe",
                                                "'",
                                                "''",
                                                "-n",
                                                "--flag=x y",
                                                "\xc3\xa9t\xc3\xa9"};
  return args;
}

TEST(SlurmJobName, AcceptsOrdinaryNames) {
  EXPECT_TRUE(validate_job_name("tessera-replica-llama-3").is_ok());
  EXPECT_TRUE(validate_job_name("a.b_c:d+e=f@g/h").is_ok());
}

TEST(SlurmJobName, RejectsWhitespaceCommasQuotesAndControls) {
  const std::vector<std::string> bads = {"",
                                         "a b",
                                         "a,b",
                                         "a'b",
                                         "a\"b",
                                         "a`b",
                                         "a|b",
                                         "a\\b",
                                         "a\tb",
                                         "a\nb",
                                         std::string("a\0b", 3),
                                         "\xc3\xa9"};
  for (const std::string& bad : bads) {
    Status s = validate_job_name(bad);
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << "accepted '" << bad << "'";
  }
  EXPECT_EQ(validate_job_name(std::string(201, 'a')).code(), ErrorCode::kInvalidArgument);
}

TEST(SlurmShellQuote, QuotesSingleQuotes) {
  EXPECT_EQ(shell_quote("abc"), "'abc'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

// The batch command, run by the same /bin/sh that sbatch's --wrap script uses, must hand the
// program exactly its argv and the job's environment.
TEST(SlurmBatchCommand, ShellRunsArgvAndEnvExactly) {
  SlurmJobSpec spec;
  spec.name = "quoting";
  spec.argv = {"sh", "-c", "printf '[%s]' \"$TESSERA_X\" \"$TESSERA_Y\" \"$@\"", "sh"};
  for (const auto& a : odd_arguments()) spec.argv.push_back(a);
  spec.env = {{"TESSERA_X", "x 'y' $z"}, {"TESSERA_Y", ""}};
  auto cmd = batch_command(spec);
  ASSERT_TRUE(cmd.is_ok()) << cmd.status().to_string();
  auto r = run_subprocess({"/bin/sh", "-c", *cmd});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::string expected = "[x 'y' $z][]";
  for (const auto& a : odd_arguments()) expected += "[" + a + "]";
  EXPECT_EQ(r->output, expected);
  EXPECT_EQ(r->exit_code, 0);
}

TEST(SlurmBatchCommand, RejectsEmptyArgvAndBadEnvNames) {
  SlurmJobSpec spec;
  spec.name = "x";
  EXPECT_EQ(batch_command(spec).status().code(), ErrorCode::kInvalidArgument);
  spec.argv = {"true"};
  for (const char* bad : {"", "1A", "A-B", "A B", "A=B", "A;rm"}) {
    spec.env = {{bad, "v"}};
    EXPECT_EQ(batch_command(spec).status().code(), ErrorCode::kInvalidArgument) << bad;
  }
  spec.env = {{"GOOD_1", std::string("a\0b", 3)}};
  EXPECT_EQ(batch_command(spec).status().code(), ErrorCode::kInvalidArgument);
}

TEST(SlurmSbatchArguments, CarriesEveryField) {
  SlurmJobSpec spec;
  spec.name = "tessera-r1";
  spec.argv = {"/bin/echo", "hi there"};
  spec.cpus = 2;
  spec.memory_mb = 512;
  spec.partition = "tessera";
  spec.output = "/tmp/out %j.log";
  auto args = sbatch_arguments(spec);
  ASSERT_TRUE(args.is_ok()) << args.status().to_string();
  std::vector<std::string> expected = {"--parsable",
                                       "--job-name=tessera-r1",
                                       "--ntasks=1",
                                       "--cpus-per-task=2",
                                       "--mem=512",
                                       "--partition=tessera",
                                       "--output=/tmp/out %j.log",
                                       "--wrap=exec '/bin/echo' 'hi there'"};
  EXPECT_EQ(*args, expected);
}

TEST(SlurmSbatchArguments, DefaultsLeaveOutMemoryAndPartition) {
  SlurmJobSpec spec;
  spec.name = "j";
  spec.argv = {"true"};
  auto args = sbatch_arguments(spec);
  ASSERT_TRUE(args.is_ok());
  for (const auto& a : *args) {
    EXPECT_NE(a.rfind("--mem", 0), 0u) << a;
    EXPECT_NE(a.rfind("--partition", 0), 0u) << a;
  }
  EXPECT_NE(std::find(args->begin(), args->end(), "--output=/dev/null"), args->end());
}

TEST(SlurmSbatchArguments, RejectsBadSpecs) {
  SlurmJobSpec spec;
  spec.name = "bad name";
  spec.argv = {"true"};
  EXPECT_EQ(sbatch_arguments(spec).status().code(), ErrorCode::kInvalidArgument);
  spec.name = "ok";
  spec.cpus = 0;
  EXPECT_EQ(sbatch_arguments(spec).status().code(), ErrorCode::kInvalidArgument);
  spec.cpus = 1;
  spec.memory_mb = -1;
  EXPECT_EQ(sbatch_arguments(spec).status().code(), ErrorCode::kInvalidArgument);
}

TEST(SlurmSbatchOutput, ParsesTheId) {
  EXPECT_EQ(*parse_sbatch_id("42\n"), 42);
  EXPECT_EQ(*parse_sbatch_id("1234;tessera\n"), 1234);
  EXPECT_EQ(*parse_sbatch_id("sbatch: warning: something odd\n77\n"), 77);
  EXPECT_EQ(parse_sbatch_id("").status().code(), ErrorCode::kCorruptData);
  EXPECT_EQ(parse_sbatch_id("sbatch: error: nope\n").status().code(), ErrorCode::kCorruptData);
  EXPECT_EQ(parse_sbatch_id("-5\n").status().code(), ErrorCode::kCorruptData);
}

TEST(SlurmSqueue, ArgumentsUseTheFormat) {
  std::vector<std::string> args = squeue_arguments();
  EXPECT_NE(std::find(args.begin(), args.end(), "--me"), args.end());
  EXPECT_NE(std::find(args.begin(), args.end(), "--noheader"), args.end());
  EXPECT_NE(std::find(args.begin(), args.end(), "--format=%i|%T|%N|%r|%j"), args.end());
}

TEST(SlurmSqueue, ParsesJobsWithThePrefix) {
  const std::string out =
      "12|RUNNING|vm|None|tessera-a\n"
      "13|PENDING||Resources|tessera-b\n"
      "14|COMPLETING|n2|NonZeroExitCode|tessera-c\n"
      "15|RUNNING|vm|None|someone-else\n"
      "16_[1-3]|PENDING||Priority|array|job\n"  // not ours: its id and name are never parsed
      "\n"
      "17|CONFIGURING|n1|None|tessera-d|x\n";
  auto jobs = parse_squeue(out, "tessera-");
  ASSERT_TRUE(jobs.is_ok()) << jobs.status().to_string();
  ASSERT_EQ(jobs->size(), 4u);
  EXPECT_EQ((*jobs)[0].id, 12);
  EXPECT_EQ((*jobs)[0].name, "tessera-a");
  EXPECT_EQ((*jobs)[0].state, SlurmJobState::kRunning);
  EXPECT_EQ((*jobs)[0].node, "vm");
  EXPECT_EQ((*jobs)[0].reason, "None");
  EXPECT_EQ((*jobs)[1].state, SlurmJobState::kPending);
  EXPECT_EQ((*jobs)[1].node, "");
  EXPECT_EQ((*jobs)[1].reason, "Resources");
  EXPECT_EQ((*jobs)[2].state, SlurmJobState::kCompleting);
  EXPECT_EQ((*jobs)[3].id, 17);
  EXPECT_EQ((*jobs)[3].name, "tessera-d|x");
  EXPECT_EQ((*jobs)[3].state, SlurmJobState::kPending);
  auto all = parse_squeue(out, "");
  ASSERT_FALSE(all.is_ok());  // the array job's id is not a number once it is ours
  EXPECT_EQ(all.status().code(), ErrorCode::kCorruptData);
}

TEST(SlurmSqueue, EmptyOutputIsNoJobs) {
  auto jobs = parse_squeue("", "x");
  ASSERT_TRUE(jobs.is_ok());
  EXPECT_TRUE(jobs->empty());
}

TEST(SlurmSqueue, RejectsShortLines) {
  auto jobs = parse_squeue("12|RUNNING|vm\n", "");
  ASSERT_FALSE(jobs.is_ok());
  EXPECT_EQ(jobs.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(jobs.status().message().find("12|RUNNING|vm"), std::string::npos);
}

TEST(SlurmSqueue, FoldsStates) {
  EXPECT_EQ(parse_slurm_state("RUNNING"), SlurmJobState::kRunning);
  EXPECT_EQ(parse_slurm_state("PENDING"), SlurmJobState::kPending);
  EXPECT_EQ(parse_slurm_state("SUSPENDED"), SlurmJobState::kPending);
  EXPECT_EQ(parse_slurm_state("COMPLETING"), SlurmJobState::kCompleting);
  for (const char* ended : {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL",
                            "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE"})
    EXPECT_EQ(parse_slurm_state(ended), SlurmJobState::kEnded) << ended;
  EXPECT_EQ(parse_slurm_state("SOMETHING_NEW"), SlurmJobState::kPending);
  EXPECT_EQ(slurm_job_state_name(SlurmJobState::kCompleting), "completing");
}

TEST(SlurmScancel, RecognisesAlreadyGone) {
  EXPECT_TRUE(scancel_says_already_gone(
      "scancel: error: Kill job error on job id 99: Invalid job id specified\n"));
  EXPECT_TRUE(scancel_says_already_gone(
      "scancel: error: Kill job error on job id 7: Job/step already completing or completed\n"));
  EXPECT_FALSE(scancel_says_already_gone("scancel: error: Unable to contact slurm controller\n"));
}

}  // namespace slurm_commands_test
}  // namespace tessera::cluster
