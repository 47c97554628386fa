// End-to-end tests of the `tessera` binary: exit codes, stdout/stderr, JSON output.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "test_util.h"

namespace tessera {
namespace {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs the CLI with `args` (shell-quoted by the caller), capturing stdout and stderr.
RunResult run_cli(const std::string& args) {
  testing::TempDir dir;
  const std::string err_path = dir.file("stderr");
  const std::string cmd = std::string(TESSERA_CLI_PATH) + " " + args + " 2>" + err_path;
  RunResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_path);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  return r;
}

TEST(Cli, HelpForEverySubcommand) {
  for (const char* sub :
       {"generate", "synth", "info", "demo", "bench machine", "bench model", "bench serve",
        "bench train", "train", "train-tokenizer"}) {
    auto r = run_cli(std::string(sub) + " --help");
    EXPECT_EQ(r.exit_code, 0) << sub;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << sub << ": " << r.out;
  }
  auto r = run_cli("--help");
  EXPECT_EQ(r.exit_code, 0);
}

TEST(Cli, UnknownSubcommandAndMissingFlagsFail) {
  EXPECT_NE(run_cli("frobnicate").exit_code, 0);
  EXPECT_NE(run_cli("generate --prompt hi").exit_code, 0);  // no --model
  EXPECT_NE(run_cli("").exit_code, 0);
}

// `info --devices` lists the CPU and the OpenCL devices (PoCL in CI), or says in one line why
// there are none: no library (TESSERA_OPENCL_LIBRARY pointed at nothing) or no platform
// (OCL_ICD_VENDORS, the ICD loader's driver directory, pointed at an empty one).
TEST(Cli, InfoDevicesListsOrSaysWhyInOneLine) {
  auto r = run_cli("info --devices");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("cpu        kernels: ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("opencl"), std::string::npos) << r.out;
  r = run_cli("info --devices --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["opencl"].is_array());
  for (const auto& d : j["opencl"]) {
    EXPECT_GT(d["global_mem_bytes"].get<uint64_t>(), 0u);
    EXPECT_GT(d["compute_units"].get<uint32_t>(), 0u);
  }

  testing::TempDir empty;
  const std::pair<const char*, std::string> cases[] = {
      {"TESSERA_OPENCL_LIBRARY", empty.file("libOpenCL.so.1")},  // no library
      {"OCL_ICD_VENDORS", empty.path().string()},                // a library, no driver
  };
  for (const auto& [var, value] : cases) {
    ::setenv(var, value.c_str(), 1);
    r = run_cli("info --devices");
    ::unsetenv(var);
    EXPECT_EQ(r.exit_code, 0) << var << ": " << r.err;
    const std::string expect = "cpu        kernels: ";
    ASSERT_EQ(r.out.rfind(expect, 0), 0u) << var << ": " << r.out;
    const std::string second = r.out.substr(r.out.find('\n') + 1);
    EXPECT_EQ(second.rfind("opencl     none: ", 0), 0u) << var << ": " << r.out;
    EXPECT_EQ(std::count(second.begin(), second.end(), '\n'), 1) << var << ": " << r.out;
  }
  EXPECT_NE(run_cli("info").exit_code, 0);  // neither a path nor --devices
}

// `--device opencl` runs generate and bench model on the OpenCL device (PoCL here): greedy text
// equal to the CPU's on a synthetic model; a bad --device and speculation on the device are
// refused; without an OpenCL library it fails in one line and `--device cpu` still works.
TEST(Cli, DeviceFlagRunsOnOpenclOrSaysWhyInOneLine) {
  testing::TempDir dir;
  const std::string model = dir.file("tiny.gguf");
  ASSERT_EQ(run_cli("synth --shape tiny --dtype f32 --out " + model).exit_code, 0);
  const std::string gen = "generate -m " + model + " -p hello -n 12 --temperature 0 --json";
  const auto cpu = run_cli(gen);
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  const auto probe = run_cli("info --devices --json");
  ASSERT_EQ(probe.exit_code, 0) << probe.err;
  const bool have_opencl = !nlohmann::json::parse(probe.out)["opencl"].empty();
  if (have_opencl) {
    const auto dev = run_cli(gen + " --device opencl");
    ASSERT_EQ(dev.exit_code, 0) << dev.err;
    EXPECT_EQ(nlohmann::json::parse(dev.out)["tokens"], nlohmann::json::parse(cpu.out)["tokens"]);
    const auto bench = run_cli("bench model -m " + model + " -p 16 -n 4 -r 1 --device opencl:0");
    EXPECT_EQ(bench.exit_code, 0) << bench.err;
    EXPECT_NE(bench.out.find("on opencl:0"), std::string::npos) << bench.out;
    const auto spec = run_cli(gen + " --device opencl --spec ngram");
    EXPECT_NE(spec.exit_code, 0);
    EXPECT_NE(spec.err.find("does not run on the OpenCL device yet"), std::string::npos) << spec.err;
  }
  const auto bad = run_cli(gen + " --device gpu");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("expected cpu, opencl or opencl:N"), std::string::npos) << bad.err;

  ::setenv("TESSERA_OPENCL_LIBRARY", dir.file("libOpenCL.so.1").c_str(), 1);
  const auto none = run_cli(gen + " --device opencl");
  const auto still = run_cli(gen + " --device cpu");
  ::unsetenv("TESSERA_OPENCL_LIBRARY");
  EXPECT_NE(none.exit_code, 0);
  EXPECT_EQ(std::count(none.err.begin(), none.err.end(), '\n'), 1) << none.err;
  EXPECT_NE(none.err.find("no OpenCL library"), std::string::npos) << none.err;
  EXPECT_EQ(still.exit_code, 0) << still.err;
  EXPECT_EQ(nlohmann::json::parse(still.out)["tokens"], nlohmann::json::parse(cpu.out)["tokens"]);
}

// `bench machine --device opencl` measures the device's read bandwidth and f32 FMA throughput
// (a small buffer: PoCL runs it on the CPU in well under a second), and `bench model --device`
// reports MBU and MFU against the record given as --machine, refusing a CPU record and another
// device's. Without an OpenCL library the measurement fails in one line.
TEST(Cli, BenchMachineDeviceCeilingsAndModelMbu) {
  testing::TempDir dir;
  ::setenv("TESSERA_OPENCL_LIBRARY", dir.file("libOpenCL.so.1").c_str(), 1);
  const auto none = run_cli("bench machine --device opencl --buffer-mib 16 --reps 1");
  ::unsetenv("TESSERA_OPENCL_LIBRARY");
  EXPECT_NE(none.exit_code, 0);
  EXPECT_EQ(std::count(none.err.begin(), none.err.end(), '\n'), 1) << none.err;
  EXPECT_NE(none.err.find("no OpenCL library"), std::string::npos) << none.err;

  const auto probe = run_cli("info --devices --json");
  ASSERT_EQ(probe.exit_code, 0) << probe.err;
  if (nlohmann::json::parse(probe.out)["opencl"].empty()) GTEST_SKIP() << "no OpenCL device";
  const auto machine = run_cli("bench machine --device opencl --buffer-mib 16 --reps 2 --json");
  ASSERT_EQ(machine.exit_code, 0) << machine.err;
  const auto record = nlohmann::json::parse(machine.out);
  const auto& d = record["device"];
  EXPECT_EQ(d["device"], "opencl:0");
  EXPECT_FALSE(d["name"].get<std::string>().empty());
  // 16 MiB rounded down to whole slabs of the read kernel's work-groups.
  EXPECT_GT(d["buffer_bytes"].get<int64_t>(), 0) << d;
  EXPECT_LE(d["buffer_bytes"].get<int64_t>(), int64_t{16} << 20) << d;
  for (const char* key : {"read_gbps", "fma_gflops", "read_gbps_median", "fma_gflops_median"}) {
    const double v = d[key].get<double>();
    EXPECT_TRUE(std::isfinite(v) && v > 0) << key << " = " << v;
  }
  EXPECT_LE(d["read_gbps_median"].get<double>(), d["read_gbps"].get<double>());
  EXPECT_LE(d["fma_gflops_median"].get<double>(), d["fma_gflops"].get<double>());
  const auto text = run_cli("bench machine --device opencl:0 --buffer-mib 16 --reps 1");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("GB/s"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("GFLOP/s"), std::string::npos) << text.out;

  const std::string model = dir.file("tiny.gguf");
  ASSERT_EQ(run_cli("synth --shape tiny --dtype f32 --out " + model).exit_code, 0);
  std::ofstream(dir.file("device.json")) << machine.out;
  const std::string bench = "bench model -m " + model + " -p 16 -n 4 -r 1 --device opencl:0";
  const auto table = run_cli(bench + " --machine " + dir.file("device.json"));
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("on opencl:0"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("MBU"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("MFU"), std::string::npos) << table.out;
  const auto json = run_cli(bench + " --json --machine " + dir.file("device.json"));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto out = nlohmann::json::parse(json.out);
  EXPECT_EQ(out["device"]["read_gbps"], d["read_gbps"]);
  ASSERT_EQ(out["results"].size(), 2u) << out;
  for (const auto& r : out["results"]) {
    const double mbu = r["mbu"].get<double>();
    const double mfu = r["mfu"].get<double>();
    EXPECT_TRUE(std::isfinite(mbu) && mbu > 0) << r;
    EXPECT_TRUE(std::isfinite(mfu) && mfu > 0) << r;
    EXPECT_DOUBLE_EQ(mbu, r["gbps"].get<double>() / d["read_gbps"].get<double>());
  }

  std::ofstream(dir.file("cpu.json")) << R"({"machine": {"read_gbps": 10, "fma_gflops": 100}})";
  const auto cpu = run_cli(bench + " --machine " + dir.file("cpu.json"));
  EXPECT_NE(cpu.exit_code, 0);
  EXPECT_NE(cpu.err.find("no device ceilings"), std::string::npos) << cpu.err;
  auto other = record;
  other["device"]["name"] = "Some Other GPU";
  std::ofstream(dir.file("other.json")) << other.dump();
  const auto wrong = run_cli(bench + " --machine " + dir.file("other.json"));
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_NE(wrong.err.find("ceilings of 'Some Other GPU'"), std::string::npos) << wrong.err;
}

TEST(Cli, MissingAndCorruptFilesGiveClearErrors) {
  testing::TempDir dir;
  auto r = run_cli("info " + dir.file("nope.gguf"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("error"), std::string::npos);
  EXPECT_NE(r.err.find("nope.gguf"), std::string::npos) << r.err;
  std::ofstream(dir.file("junk.gguf")) << "GGUF\x03\x00\x00\x00garbage";
  r = run_cli("generate --model " + dir.file("junk.gguf") + " --prompt hi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("junk.gguf"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

// The measured-cost files of `tessera sim` (a live run's step multipliers and the device's speed
// over time) are checked row by row; a good pair runs.
TEST(Cli, SimChecksItsMeasuredCostFiles) {
  testing::TempDir dir;
  std::ofstream(dir.file("schedule.csv")) << "model,t_s,input_tokens,output_tokens\n"
                                             "m0,0.0,64,16\nm1,0.01,64,16\nm0,0.5,64,16\n";
  const std::string base = "sim --schedule " + dir.file("schedule.csv") +
                           " --shape smollm2-135m --fixed-lengths 64 --fixed-output 16"
                           " --shared-device --device-arbitration"
                           " --policy keep-alive --keep-alive 0.2 --json " + dir.file("out.json");
  std::ofstream(dir.file("speed.csv")) << "t_s,factor\n0,1.0\n0.25,1.5\n";
  std::ofstream(dir.file("mult.csv")) << "multiplier,switch,prompt\n1.0,0,0\n1.2,1,1\n";
  auto r = run_cli(base + " --device-speed " + dir.file("speed.csv") + " --step-multipliers " +
                   dir.file("mult.csv") + " --switch-s 0.001");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  struct Bad {
    const char* name;
    const char* body;
    const char* says;  // the message names the file and line too
    const char* line;
  };
  for (const Bad& b : {Bad{"speed-order.csv", "t_s,factor\n0,1.0\n0,2.0\n", "times increasing", ":3"},
                       Bad{"speed-zero.csv", "t_s,factor\n0,0\n", "factor > 0", ":2"},
                       Bad{"speed-junk.csv", "t_s,factor\nnan,1\n", "'t_s,factor'", ":2"},
                       Bad{"mult-junk.csv", "multiplier,switch,prompt\n1.0,2,0\n",
                           "'multiplier,switch,prompt'", ":2"}}) {
    std::ofstream(dir.file(b.name)) << b.body;
    const bool speed = std::string(b.name).rfind("speed", 0) == 0;
    r = run_cli(base + (speed ? " --device-speed " : " --step-multipliers ") + dir.file(b.name));
    EXPECT_EQ(r.exit_code, 1) << b.name;
    EXPECT_NE(r.err.find(b.says), std::string::npos) << b.name << ": " << r.err;
    EXPECT_NE(r.err.find(std::string(b.name) + b.line), std::string::npos) << b.name << ": " << r.err;
  }
  // A hand-off cost or a speed needs the arbitrated device.
  r = run_cli("sim --schedule " + dir.file("schedule.csv") +
              " --shape smollm2-135m --fixed-lengths 64 --fixed-output 16 --switch-s 0.001");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--switch-s needs --device-arbitration"), std::string::npos) << r.err;
}

TEST(Cli, SynthInfoGenerateJson) {
  testing::TempDir dir;
  const std::string model = dir.file("tiny.gguf");
  auto r = run_cli("synth --shape tiny --dtype q4_0 --out " + model);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli("info --json " + model);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto info = nlohmann::json::parse(r.out);
  EXPECT_EQ(info["architecture"], "llama");
  EXPECT_EQ(info["hparams"]["dim"], 128);
  EXPECT_TRUE(info["tensor_types"].contains("q4_0"));
  r = run_cli("info " + model);
  EXPECT_NE(r.out.find("parameters"), std::string::npos);

  r = run_cli("generate --model " + model +
              " --prompt 'Once upon a time' --max-tokens 12 --temperature 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tokens"].size(), 12u);
  EXPECT_GT(j["prompt_tokens"].size(), 1u);
  EXPECT_EQ(j["prompt_tokens"][0], 1);  // BOS
  EXPECT_TRUE(j["text"].is_string());
  EXPECT_TRUE(j["timings"].contains("decode_tokens_per_second"));
  // Greedy is deterministic; seeded sampling too.
  auto again = nlohmann::json::parse(run_cli("generate --model " + model +
      " --prompt 'Once upon a time' --max-tokens 12 --temperature 0 --json").out);
  EXPECT_EQ(again["tokens"], j["tokens"]);
  const std::string sampled = "generate --model " + model +
                              " --prompt 'Hello' --max-tokens 12 --temperature 1 --seed 5 --json";
  EXPECT_EQ(nlohmann::json::parse(run_cli(sampled).out)["tokens"],
            nlohmann::json::parse(run_cli(sampled).out)["tokens"]);
}

TEST(Cli, TrainWritesAModelThatGenerates) {
  testing::TempDir dir;
  const std::string text = dir.file("text.txt"), model = dir.file("trained.gguf");
  {
    std::ofstream f(text);
    for (int i = 0; i < 300; ++i) f << "the cat sat on the mat. the dog sat on the log. ";
  }
  auto r = run_cli("train -f " + text + " -o " + model + " --dim 32 --layers 2 --heads 2 --kv-heads 1 "
                   "--ffn 64 --ctx 32 --batch 4 --steps 30 --lr 3e-3 --warmup 5 --eval-every 10 "
                   "--target-loss 3.0 -t 2 --json --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["steps"].size(), 30u);
  EXPECT_LT(j["final_val_loss"].get<double>(), j["steps"][0]["loss"].get<double>() - 1.0);
  EXPECT_TRUE(j["steps"][9].contains("val_loss"));
  EXPECT_GT(j["tokens_per_second"].get<double>(), 0.0);
  // Every other command loads the checkpoint, tokenizer included.
  r = run_cli("generate --model " + model + " --prompt 'the cat' -n 8 --temperature 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"].size(), 8u);
  EXPECT_NE(run_cli("train -f " + dir.file("missing.txt") + " -o " + model).exit_code, 0);
  EXPECT_NE(run_cli("train -f " + text + " -o " + model + " --heads 3 --quiet").exit_code, 0);
}

TEST(Cli, TrainTokenizerThenTrainAndGenerateWithIt) {
  testing::TempDir dir;
  const std::string text = dir.file("text.txt"), tok = dir.file("tok.gguf"),
                    model = dir.file("trained.gguf");
  {
    std::ofstream f(text);
    for (int i = 0; i < 300; ++i) f << "the cat sat on the mat. the dog sat on the log.\n";
  }
  auto r = run_cli("train-tokenizer -f " + text + " -o " + tok + " --vocab-size 300 --holdout 0.1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("merge"), std::string::npos) << r.err;  // the progress line
  EXPECT_NE(r.out.find("bytes per token"), std::string::npos) << r.out;
  r = run_cli("train-tokenizer -f " + text + " -o " + tok + " --vocab-size 300 --holdout 0.1 "
              "--json --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // Few distinct pairs in this text: training stops when none is seen twice.
  EXPECT_LE(j["n_vocab"].get<int>(), 300);
  EXPECT_EQ(j["n_special"].get<int>(), 1);
  EXPECT_TRUE(j["heldout_round_trip"].get<bool>());
  EXPECT_GT(j["heldout_bytes_per_token"].get<double>(), 3.0);  // 49 bytes, 15 words a line
  const int n_vocab = j["n_vocab"].get<int>();

  r = run_cli("train -f " + text + " -o " + model + " --vocab " + tok +
              " --dim 32 --layers 1 --heads 2 --kv-heads 1 --ffn 64 --ctx 16 --batch 4 --steps 20 "
              "--lr 3e-3 --warmup 2 --eval-every 10 -t 2 --json --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto t = nlohmann::json::parse(r.out);
  EXPECT_LT(t["final_val_loss"].get<double>(), t["steps"][0]["loss"].get<double>());
  r = run_cli("info " + model + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["hparams"]["n_vocab"].get<int>(), n_vocab);
  r = run_cli("generate --model " + model + " --prompt 'the cat' -n 6 --temperature 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"].size(), 6u);

  EXPECT_NE(run_cli("train-tokenizer -f " + dir.file("missing.txt") + " -o " + tok).exit_code, 0);
  r = run_cli("train-tokenizer -f " + text + " -o " + tok + " --vocab-size 200");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("too small"), std::string::npos) << r.err;
  EXPECT_NE(run_cli("train-tokenizer -f " + text + " -o " + tok + " --pre nope").exit_code, 0);
}

TEST(Cli, TrainResumesBitForBitAndWritesInitAndDataOrder) {
  testing::TempDir dir;
  const std::string text = dir.file("text.txt");
  {
    std::ofstream f(text);
    for (int i = 0; i < 200; ++i) f << "the cat sat on the mat. the dog sat on the log. ";
  }
  const std::string common = "train -f " + text + " --dim 16 --layers 1 --heads 2 --kv-heads 1 "
                             "--ffn 32 --ctx 16 --batch 2 --accum 2 --steps 8 --warmup 2 "
                             "--eval-every 4 -t 2 --quiet --json";
  auto straight = run_cli(common + " -o " + dir.file("straight.gguf") + " --init-out " +
                          dir.file("init.safetensors") + " --data-order-out " + dir.file("order.npy"));
  ASSERT_EQ(straight.exit_code, 0) << straight.err;
  auto half = run_cli(common + " -o " + dir.file("half.gguf") + " --stop-at-step 4");
  ASSERT_EQ(half.exit_code, 0) << half.err;
  EXPECT_EQ(nlohmann::json::parse(half.out)["last_step"], 4);
  auto rest = run_cli(common + " -o " + dir.file("resumed.gguf") + " --resume " + dir.file("half.gguf"));
  ASSERT_EQ(rest.exit_code, 0) << rest.err;
  const auto s = nlohmann::json::parse(straight.out), r = nlohmann::json::parse(rest.out);
  ASSERT_EQ(r["steps"].size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r["steps"][i]["loss"], s["steps"][4 + i]["loss"]) << i;
  auto bytes = [](const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  EXPECT_EQ(bytes(dir.file("resumed.gguf")), bytes(dir.file("straight.gguf")));
  // The data order: 8 steps of 2 x 2 windows of 17 tokens, after a 128-byte .npy header.
  EXPECT_EQ(bytes(dir.file("order.npy")).size(), 128u + 8 * 4 * 17 * 4);
  EXPECT_EQ(bytes(dir.file("order.npy")).substr(0, 6), "\x93NUMPY");
  EXPECT_GT(bytes(dir.file("init.safetensors")).size(), 1000u);
  // Resuming with other options is refused, naming the option.
  auto wrong = run_cli(common + " --lr 0.5 -o " + dir.file("x.gguf") + " --resume " + dir.file("half.gguf"));
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_NE(wrong.err.find("tessera.train.lr"), std::string::npos) << wrong.err;
}

TEST(Cli, TrainLoraWritesPeftAndGgufAdaptersThatGenerateLikeTheMergedModel) {
  testing::TempDir dir;
  const std::string base_text = dir.file("base.txt"), ft_text = dir.file("ft.txt");
  const std::string base = dir.file("base.gguf"), out = dir.file("adapter");
  {
    std::ofstream f(base_text);
    for (int i = 0; i < 300; ++i) f << "the cat sat on the mat. the dog sat on the log. ";
    std::ofstream g(ft_text);
    for (int i = 0; i < 300; ++i) g << "a bird flew over the tree. a fish swam under the boat. ";
  }
  auto r = run_cli("train -f " + base_text + " -o " + base + " --dim 32 --layers 2 --heads 2 "
                   "--kv-heads 1 --ffn 64 --ctx 32 --batch 4 --steps 20 --lr 3e-3 --warmup 5 -t 2 --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string lora = "train --lora --base " + base + " -f " + ft_text + " --rank 4 --alpha 8 "
                           "--ctx 32 --batch 4 --lr 1e-2 --warmup 2 "
                           "--eval-every 5 -t 2";
  r = run_cli(lora + " --lora-targets all --steps 30 -o " + out + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["steps"].size(), 30u);
  EXPECT_TRUE(j["steps"][4].contains("val_loss"));
  EXPECT_LT(j["final_val_loss"].get<double>(), j["initial_val_loss"].get<double>() - 0.3);
  // 2 layers x (q 32x32, k 16x32, v 16x32, o 32x32, gate/up 64x32, down 32x64) at rank 4.
  EXPECT_EQ(j["adapter_parameters"], 2 * 4 * ((32 + 32) * 2 + (32 + 16) * 2 + (32 + 64) * 3));
  EXPECT_GT(j["tokens_per_second"].get<double>(), 0.0);
  EXPECT_NE(r.err.find("step 30/30"), std::string::npos) << r.err;  // the progress line
  // Both files read back against the base.
  r = run_cli("lora info " + out + " --base " + base);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("PEFT"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("matrices: 14"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("scale 2"), std::string::npos) << r.out;
  r = run_cli("lora info " + out + "/adapter.gguf --base " + base);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("GGUF LoRA"), std::string::npos) << r.out;
  // Generating with the adapter applied gives the merged model's greedy tokens.
  ASSERT_EQ(run_cli("lora merge " + base + " " + out + " " + dir.file("merged.gguf")).exit_code, 0);
  const std::string gen = " --prompt 'a bird' -n 12 --temperature 0 --json";
  auto merged = run_cli("generate --model " + dir.file("merged.gguf") + gen);
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  const auto want = nlohmann::json::parse(merged.out)["tokens"];
  EXPECT_EQ(want.size(), 12u);
  for (const std::string& adapter : {out, out + "/adapter.gguf"}) {
    auto served = run_cli("generate --model " + base + " --lora " + adapter + gen);
    ASSERT_EQ(served.exit_code, 0) << served.err;
    EXPECT_EQ(nlohmann::json::parse(served.out)["tokens"], want) << adapter;
  }
  auto plain = run_cli("generate --model " + base + gen);
  EXPECT_NE(nlohmann::json::parse(plain.out)["tokens"], want);  // the adapter changed something
  // A lone GGUF; refusals.
  r = run_cli(lora + " --steps 2 --lora-format gguf -o " + dir.file("only.gguf") + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli("lora info " + dir.file("only.gguf") + " --base " + base);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("matrices: 4"), std::string::npos) << r.out;  // the default: q and v
  EXPECT_NE(run_cli(lora + " --steps 2 -o " + dir.file("x.gguf") + " --quiet").exit_code, 0);
  auto bad = run_cli(lora + " --steps 2 --lora-targets q,lm_head -o " + dir.file("y") + " --quiet");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("lm_head"), std::string::npos) << bad.err;
  bad = run_cli("train --lora -f " + ft_text + " -o " + dir.file("z") + " --quiet");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--base"), std::string::npos) << bad.err;
}

TEST(Cli, BenchTrainLogsMlPerfLinesAndWritesAReport) {
  testing::TempDir dir;
  auto r = run_cli("bench train --synthetic --dim 16 --layers 1 --heads 2 --kv-heads 1 --ffn 32 "
                   "--ctx 16 --batch 4 --steps 12 --warmup 2 --eval-every 4 --eval-windows 4 "
                   "--target-loss 0.01 --fma-gflops 10 -t 2 --json --out " + dir.file("out"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["status"], "aborted");  // a target no 12-step run reaches
  EXPECT_EQ(j["steps_done"], 12);
  EXPECT_GT(j["tokens_per_second"].get<double>(), 0);
  EXPECT_NEAR(j["mfu"].get<double>(), j["achieved_gflops"].get<double>() / 10.0, 1e-12);
  EXPECT_NE(j["corpus"].get<std::string>().find("synthetic"), std::string::npos);
  // The MLLOG lines (on stderr with --json, and in mllog.log): JSON after the prefix, the fields in
  // MLPerf's order, the intervals in order, run_stop last with its status.
  std::ifstream f(dir.file("out") + "/mllog.log");
  std::vector<nlohmann::ordered_json> lines;
  for (std::string line; std::getline(f, line);) {
    ASSERT_TRUE(line.starts_with(":::MLLOG {")) << line;
    lines.push_back(nlohmann::ordered_json::parse(line.substr(9)));
    std::vector<std::string> keys;
    for (auto it = lines.back().begin(); it != lines.back().end(); ++it) keys.push_back(it.key());
    EXPECT_EQ(keys, (std::vector<std::string>{"namespace", "time_ms", "event_type", "key", "value",
                                              "metadata"}));
  }
  ASSERT_GT(lines.size(), 20u);
  std::map<std::string, size_t> first;
  int evals = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    first.emplace(lines[i]["key"].get<std::string>(), i);
    if (lines[i]["key"] == "eval_accuracy") ++evals;
  }
  for (const char* k : {"submission_benchmark", "submission_org", "submission_platform",
                        "submission_status", "global_batch_size", "opt_base_learning_rate",
                        "init_start", "init_stop", "run_start", "eval_accuracy", "run_stop"}) {
    EXPECT_TRUE(first.contains(k)) << k;
  }
  EXPECT_LT(first["init_stop"], first["run_start"]);
  EXPECT_LT(first["run_start"], first["eval_accuracy"]);
  EXPECT_EQ(lines.back()["key"], "run_stop");
  EXPECT_EQ(lines.back()["metadata"]["status"], "aborted");
  EXPECT_EQ(evals, 3);
  EXPECT_EQ(lines[first["global_batch_size"]]["value"], 4);
  EXPECT_NE(r.err.find(":::MLLOG"), std::string::npos);
  std::ifstream html(dir.file("out") + "/report.html");
  const std::string page((std::istreambuf_iterator<char>(html)), {});
  EXPECT_NE(page.find("<canvas id=\"loss\">"), std::string::npos);
  EXPECT_NE(page.find("eval_accuracy"), std::string::npos);
}

TEST(Cli, BenchMachineAndModelJson) {
  auto r = run_cli("bench machine --reps 1 --buffer-mib 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto m = nlohmann::json::parse(r.out);
  EXPECT_GT(m["machine"]["read_gbps"].get<double>(), 0);
  EXPECT_GT(m["machine"]["fma_gflops"].get<double>(), 0);
  EXPECT_GT(m["machine"]["first_touch_us_per_page"].get<double>(), 0);
  EXPECT_FALSE(m["environment"]["commit"].get<std::string>().empty());
  testing::TempDir dir;
  std::ofstream(dir.file("machine.json")) << r.out;
  ASSERT_EQ(run_cli("synth --shape tiny --dtype q8_0 --out " + dir.file("t.gguf")).exit_code, 0);
  r = run_cli("bench model -m " + dir.file("t.gguf") + " -p 16 -n 8 -r 2 --json --probe-mib 16 --machine " +
              dir.file("machine.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][1]["test"], "tg8");
  EXPECT_EQ(j["model"]["dtype"], "q8_0");
  EXPECT_GT(j["results"][1]["mbu"].get<double>(), 0);
  // The probe passes around each repetition give a second MBU figure.
  EXPECT_GT(j["results"][1]["adjacent_probe_gbps_median"].get<double>(), 0);
  EXPECT_GT(j["results"][1]["mbu_adjacent_median"].get<double>(), 0);
  EXPECT_LE(j["results"][1]["mbu_adjacent_min"].get<double>(),
            j["results"][1]["mbu_adjacent_max"].get<double>());
  r = run_cli("bench model -m " + dir.file("t.gguf") + " -p 0 -n 4 -r 1 --json --no-adjacent-probe --machine " +
              dir.file("machine.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_FALSE(j["results"][0].contains("mbu_adjacent_median"));
  EXPECT_NE(run_cli("bench model -m " + dir.file("t.gguf") + " --machine /nonexistent").exit_code, 0);
}

// A KV budget that cannot hold one full-length sequence is refused at start, naming both; a
// percentage outside (0, 100] is refused by name.
TEST(Cli, ServeRefusesAKvBudgetBelowOneSequence) {
  testing::TempDir dir;
  const std::string model = dir.file("tiny.gguf");
  ASSERT_EQ(run_cli("synth --shape tiny --dtype q8_0 --out " + model).exit_code, 0);
  auto r = run_cli("serve --model " + model + " --port 0 -c 512 --kv-memory 64K");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("fewer than one sequence of 512"), std::string::npos) << r.err;
  r = run_cli("serve --model " + model + " --port 0 --kv-memory 150%");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--kv-memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("percentage"), std::string::npos) << r.err;
}

TEST(Cli, SynthWithARealVocabulary) {
  TS_SKIP_WITHOUT_SHARED(vocab, "tokenizers/ggml-vocab-gpt-2.gguf");
  testing::TempDir dir;
  auto r = run_cli("synth --dim 64 --layers 1 --heads 4 --ffn 96 --vocab " + vocab.string() +
                   " --out " + dir.file("v.gguf"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli("generate -m " + dir.file("v.gguf") + " -p 'Hello world' -n 4 --json --seed 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["prompt_tokens"], nlohmann::json({15496, 995}));  // GPT-2's ids, no BOS
  auto info = nlohmann::json::parse(run_cli("info --json " + dir.file("v.gguf")).out);
  EXPECT_EQ(info["hparams"]["n_vocab"], 50257);
}

TEST(Cli, SynthRefusesBadArguments) {
  testing::TempDir dir;
  EXPECT_NE(run_cli("synth --shape nonesuch --out " + dir.file("x.gguf")).exit_code, 0);
  EXPECT_NE(run_cli("synth --shape tiny --dtype q9 --out " + dir.file("x.gguf")).exit_code, 0);
  EXPECT_NE(run_cli("synth --out " + dir.file("x.gguf")).exit_code, 0);
  auto r = run_cli("synth --dim 64 --layers 1 --heads 4 --ffn 96 --vocab-size 600 --dtype f16 --out " +
                   dir.file("c.gguf"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(run_cli("synth --shape tiny --arch falcon --out " + dir.file("g.gguf")).exit_code, 0);
  EXPECT_NE(run_cli("synth --shape tiny --arch qwen2 --sliding-window 8 --out " + dir.file("w.gguf")).exit_code, 0);
}

// Each family synth writes loads back as that family and generates.
TEST(Cli, SynthArchWritesEachFamily) {
  testing::TempDir dir;
  for (const char* arch : {"qwen2", "qwen3", "mistral", "phi3", "gemma2", "gemma3"}) {
    const std::string model = dir.file(std::string(arch) + ".gguf");
    auto r = run_cli(std::string("synth --shape tiny --dtype q8_0 --arch ") + arch + " --out " + model);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run_cli("info --json " + model);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["architecture"], arch);
    r = run_cli("generate -m " + model + " -p hello -n 4 --temperature 0");
    EXPECT_EQ(r.exit_code, 0) << arch << ": " << r.err;
  }
}

TEST(Cli, Stories260KStreamsTheGoldenText) {
  TS_SKIP_WITHOUT_SHARED(model, "models/stories260K.bin");
  TS_SKIP_WITHOUT_SHARED(tok, "models/stories260K-tok512.bin");
  TS_SKIP_WITHOUT_SHARED(golden, "models/stories260K.greedy.jsonl");
  std::ifstream in(golden);
  std::string line;
  std::getline(in, line);
  auto g = nlohmann::json::parse(line);
  const std::string prompt = g["prompt"];
  const std::string text = g["text"];
  // run.c printed the prompt then the continuation; we stream only the continuation.
  ASSERT_EQ(text.rfind(prompt, 0), 0u);
  auto r = run_cli("generate --model " + model.string() + " --tokenizer " + tok.string() +
                   " --prompt '" + prompt + "' --temperature 0 --max-tokens 40");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string continuation = text.substr(prompt.size());
  ASSERT_GT(r.out.size(), 20u);
  const std::string got = r.out.substr(0, r.out.size() - 1);  // trailing newline
  EXPECT_EQ(continuation.substr(0, got.size()), got);
  // Without --tokenizer a llama2.c checkpoint is refused with advice.
  r = run_cli("generate --model " + model.string() + " --prompt hi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--tokenizer"), std::string::npos) << r.err;
}

// --spec: the same golden text with n-gram lookup and with the model drafting for itself, the
// acceptance reported; a draft with another vocabulary is refused naming a token.
TEST(Cli, GenerateWithSpeculationGivesTheGoldenText) {
  TS_SKIP_WITHOUT_SHARED(model, "models/stories260K.bin");
  TS_SKIP_WITHOUT_SHARED(tok, "models/stories260K-tok512.bin");
  const std::string base = "generate --model " + model.string() + " --tokenizer " + tok.string() +
                           " --prompt 'Once upon a time' --temperature 0 --max-tokens 80";
  const RunResult plain = run_cli(base);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  for (const std::string& spec : std::vector<std::string>{"--spec ngram", "--draft-model " + model.string()}) {
    const RunResult r = run_cli(base + " " + spec);
    ASSERT_EQ(r.exit_code, 0) << spec << ": " << r.err;
    EXPECT_EQ(r.out, plain.out) << spec;
    EXPECT_NE(r.err.find("drafts accepted"), std::string::npos) << r.err;
  }
  const RunResult j = run_cli(base + " --spec ngram --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto js = nlohmann::json::parse(j.out);
  EXPECT_EQ(js["speculation"]["method"], "ngram");
  EXPECT_GT(js["speculation"]["draft_tokens"].get<int>(), 0);
  const auto other = testing::shared_file("models/aidreams260K.bin");
  const auto other_tok = testing::shared_file("models/aidreams260K-tok512.bin");
  if (!other.empty() && !other_tok.empty()) {
    const RunResult bad = run_cli(base + " --draft-model " + other.string() +
                                  " --draft-tokenizer " + other_tok.string());
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("same tokenizer"), std::string::npos) << bad.err;
  }
  const RunResult unknown = run_cli(base + " --spec magic");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("ngram"), std::string::npos) << unknown.err;
}

// bench model --spec on a tiny random model: runs, alternates, checks greedy identity.
TEST(Cli, BenchModelSpecJson) {
  TS_SKIP_WITHOUT_SHARED(model, "models/stories260K.bin");
  TS_SKIP_WITHOUT_SHARED(tok, "models/stories260K-tok512.bin");
  const RunResult r = run_cli("bench model -m " + model.string() + " --tokenizer " + tok.string() +
                              " --spec ngram -n 40 -r 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["runs"].size(), 4u);
  EXPECT_EQ(j["decode_ratios"].size(), 2u);
  EXPECT_TRUE(j["greedy_outputs_identical"].get<bool>());
  EXPECT_EQ(j["runs"][0]["speculative"], false);  // repetition 1: off first
  EXPECT_EQ(j["runs"][2]["speculative"], true);   // repetition 2: on first
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

TEST(Cli, BenchServeNullWritesEveryRecord) {
  testing::TempDir dir;
  const std::string out = dir.file("out");
  auto r = run_cli("bench serve --target null --scenario server --request-rate 2000 -n 50 "
                   "--input-len 16 --output-len uniform:2:6 --slo ttft=1000 --no-progress "
                   "--out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("50 completed, 0 failed"), std::string::npos) << r.out;
  std::ifstream sj(out + "/summary.json");
  const auto summary = nlohmann::json::parse(sj);
  EXPECT_EQ(summary["completed"], 50);
  EXPECT_EQ(summary["request_rate"], 2000.0);
  EXPECT_TRUE(summary.contains("p99_ttft_ms"));
  EXPECT_TRUE(summary["environment"].contains("commit"));
  EXPECT_EQ(summary["backend"]["kind"], "null");
  std::ifstream rq(out + "/requests.jsonl");
  int lines = 0;
  for (std::string line; std::getline(rq, line);) ++lines;
  EXPECT_EQ(lines, 51);  // one warm-up query, then 50
  std::ifstream ml(out + "/mlperf_log_summary.txt");
  const std::string mlperf((std::istreambuf_iterator<char>(ml)), {});
  EXPECT_NE(mlperf.find("Result is : VALID"), std::string::npos) << mlperf;
  EXPECT_TRUE(std::ifstream(out + "/report.html").good());

  r = run_cli("bench serve --target null --scenario sweep --concurrency 1,4 -n 20 "
              "--output-len 3 --no-progress");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("concurrency=4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SLOs hold"), std::string::npos) << r.out;
}

// In-process target with speculation: the acceptance rate lands in the table and summary.json.
TEST(Cli, BenchServeInprocRecordsSpeculation) {
  TS_SKIP_WITHOUT_SHARED(model, "models/stories260K.bin");
  TS_SKIP_WITHOUT_SHARED(tok, "models/stories260K-tok512.bin");
  testing::TempDir dir;
  const std::string out = dir.file("out");
  auto r = run_cli("bench serve --target inproc:" + model.string() + " --tokenizer " + tok.string() +
                   " --spec ngram --scenario concurrency --concurrency 2 -n 8 --input-len 64 "
                   "--output-len 48 --ignore-eos --no-progress --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("draft tokens accepted"), std::string::npos) << r.out;
  std::ifstream sj(out + "/summary.json");
  const auto summary = nlohmann::json::parse(sj);
  EXPECT_EQ(summary["backend"]["speculation"], "ngram");
  EXPECT_GT(summary["backend"]["spec_draft_tokens"].get<double>(), 0);
  EXPECT_GE(summary["backend"]["spec_acceptance_rate"].get<double>(), 0);
}

TEST(Cli, BenchServeRefusesBadArguments) {
  for (const char* args : {"--target ftp://x", "--target null --scenario warp",
                           "--target null --slo ttft=fast", "--target null --request-rate -3",
                           "--target null --input-len zipf:2", "--target http://127.0.0.1:1 "
                           "--api rest", "--target null --scenario trace",
                           "--target null --trace /nonexistent.csv --scenario trace"}) {
    auto r = run_cli(std::string("bench serve --no-progress ") + args);
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_NE(r.err.find("error"), std::string::npos) << args << ": " << r.err;
  }
}

TEST(Cli, BenchServeReplaysASharedTrace) {
  TS_SKIP_WITHOUT_SHARED(trace, "traces/vidur/splitwise_conv.csv");
  auto r = run_cli("bench serve --target null --scenario trace --trace " + trace.string() +
                   " -n 40 --time-scale 100 --warmup 0 --no-progress");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("40 completed"), std::string::npos) << r.out;
}

// eval imatrix -> quantize --imatrix on stories260K: the file is written with JSON stats, the
// quantizer reports how many tensors it weighted, and a bad imatrix file is refused clearly.
TEST(Cli, ImatrixCalibratesAndWeightsQuantize) {
  TS_SKIP_WITHOUT_SHARED(model, "models/stories260K.bin");
  TS_SKIP_WITHOUT_SHARED(tok, "models/stories260K-tok512.bin");
  testing::TempDir dir;
  {
    std::ofstream text(dir.file("calib.txt"));
    for (int i = 0; i < 40; ++i) {
      text << "Once upon a time there was a little girl named Lily. She liked to play in the park "
              "with her dog, and one day they found a big red ball under a tree.\n";
    }
  }
  auto r = run_cli("eval imatrix -m " + model.string() + " --tokenizer " + tok.string() + " -f " +
                   dir.file("calib.txt") + " -c 64 --chunks 4 -t 1 --json -o " +
                   dir.file("s.imatrix"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["chunks"], 4);
  EXPECT_EQ(j["tensors"].size(), 36u);  // 5 layers x 7 matrices + the tied output
  EXPECT_EQ(j["tensors"]["blk.0.ffn_down.weight"]["columns"], 172);
  EXPECT_EQ(j["tensors"]["blk.0.ffn_down.weight"]["count"], 256);
  r = run_cli("quantize " + model.string() + " " + dir.file("q.gguf") +
              " --type q4_k_m -t 1 --imatrix " + dir.file("s.imatrix"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("31 tensors weighted by the importance matrix"), std::string::npos) << r.err;
  {
    std::ofstream bad(dir.file("bad.imatrix"));
    bad << "not an importance matrix";
  }
  r = run_cli("quantize " + model.string() + " " + dir.file("q2.gguf") +
              " --type q4_k_m --imatrix " + dir.file("bad.imatrix"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("imatrix"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tessera
