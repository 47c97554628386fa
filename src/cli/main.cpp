// tessera: the command-line entry point. One subcommand per job; see `tessera --help`.
#include <cstdio>
#include <exception>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"Tessera: a Llama-family inference engine and ML performance toolkit"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tessera 0.1.0");
  tessera::cli::RunFn run;
  tessera::cli::add_generate_command(app, run);
  tessera::cli::add_synth_command(app, run);
  tessera::cli::add_quantize_command(app, run);
  tessera::cli::add_lora_command(app, run);
  tessera::cli::add_prune_command(app, run);
  tessera::cli::add_eval_command(app, run);
  tessera::cli::add_info_command(app, run);
  tessera::cli::add_convert_command(app, run);
  tessera::cli::add_demo_command(app, run);
  tessera::cli::add_bench_command(app, run);
  tessera::cli::add_serve_command(app, run);
  tessera::cli::add_fleet_command(app, run);
  tessera::cli::add_sim_command(app, run);
  tessera::cli::add_train_command(app, run);
  tessera::cli::add_train_tokenizer_command(app, run);
  tessera::cli::add_cluster_command(app, run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return run ? run() : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera: error: %s\n", e.what());
    return 1;
  }
}
