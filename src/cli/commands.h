// Subcommands of the `tessera` CLI. Each add_* registers its options on `app` and sets `run` to
// the function that executes it; run returns the process exit code. Commands are thin: they parse
// flags, call the library layers and print. Errors go to stderr with a non-zero exit.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace tessera::cli {

using RunFn = std::function<int()>;

void add_generate_command(CLI::App& app, RunFn& run);
void add_synth_command(CLI::App& app, RunFn& run);
void add_quantize_command(CLI::App& app, RunFn& run);
void add_lora_command(CLI::App& app, RunFn& run);
void add_prune_command(CLI::App& app, RunFn& run);
void add_eval_command(CLI::App& app, RunFn& run);
void add_info_command(CLI::App& app, RunFn& run);
void add_convert_command(CLI::App& app, RunFn& run);
void add_demo_command(CLI::App& app, RunFn& run);
void add_bench_command(CLI::App& app, RunFn& run);
void add_serve_command(CLI::App& app, RunFn& run);
// `bench serve`, registered under the `bench` command by add_bench_command.
void add_bench_serve_command(CLI::App* bench, RunFn& run);
// `bench resume`, likewise.
void add_bench_resume_command(CLI::App* bench, RunFn& run);
void add_bench_fleet_command(CLI::App* bench, RunFn& run);
// `bench train`: the MLPerf-style training benchmark (cmd_bench_train.cpp).
void add_bench_train_command(CLI::App* bench, RunFn& run);
void add_fleet_command(CLI::App& app, RunFn& run);
void add_sim_command(CLI::App& app, RunFn& run);
void add_train_command(CLI::App& app, RunFn& run);
void add_train_tokenizer_command(CLI::App& app, RunFn& run);
void add_cluster_command(CLI::App& app, RunFn& run);

}  // namespace tessera::cli
