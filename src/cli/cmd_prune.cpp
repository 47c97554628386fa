// `tessera prune IN OUT --pattern 2:4 --method magnitude|wanda [--calib TEXT]`: N:M pruning of a
// model's block matrices, packed in Tessera's 2:4 types or stored dense (model/prune.h).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "commands.h"
#include "common.h"
#include "tessera/kernels/dtype.h"
#include "tessera/model/format/model_file.h"
#include "tessera/base/thread_pool.h"
#include "tessera/model/activation_stats.h"
#include "tessera/model/imatrix_file.h"
#include "tessera/model/prune.h"

namespace tessera::cli {
namespace {

struct PruneArgs {
  std::string in, out, pattern = "2:4", method = "magnitude", type, calib, imatrix, tokenizer;
  bool dense = false;
  int threads = 0;
  int32_t ctx = 512;
  int64_t chunks = 0;
};

// Wanda's per-column activation norms: from a statistics file saved by `tessera eval imatrix`, or
// from running the model over a calibration text.
Result<std::function<std::vector<float>(std::string_view)>> wanda_column_norms(const PruneArgs& a) {
  auto stats = std::make_shared<model::ActivationStats>();
  if (!a.imatrix.empty()) {
    TS_ASSIGN_OR_RETURN(*stats, model::read_imatrix(a.imatrix));
  } else {
    TS_ASSIGN_OR_RETURN(std::string text, read_text(a.calib));
    TS_ASSIGN_OR_RETURN(LoadedModel loaded, load_model_and_tokenizer(a.in, a.tokenizer));
    const auto progress = [](int64_t c, int64_t n) {
      std::fprintf(stderr, "tessera prune: calibration chunk %lld/%lld\n",
                   static_cast<long long>(c + 1), static_cast<long long>(n));
    };
    TS_ASSIGN_OR_RETURN(*stats,
                        collect_calibration(loaded, text, {a.threads, a.ctx, a.chunks, false, progress}));
  }
  return std::function<std::vector<float>(std::string_view)>(
      [stats](std::string_view tensor) { return stats->column_rms(tensor); });
}

// The pattern, method, output type and threads. Errors: kInvalidArgument naming the flag.
Result<model::PruneOptions> prune_options(const PruneArgs& a) {
  model::PruneOptions o;
  TS_ASSIGN_OR_RETURN(o.pattern, model::parse_prune_pattern(a.pattern));
  TS_ASSIGN_OR_RETURN(o.method, model::parse_prune_method(a.method));
  o.dense = a.dense;
  o.n_threads = a.threads;
  if (!a.type.empty()) {
    const auto t = kernels::dtype_from_name(a.type);
    if (!t || !kernels::dtype_info(*t).supported || kernels::is_tessera_dtype(*t)) {
      return Status(ErrorCode::kInvalidArgument,
                    fmt::format("--type '{}' is not a dense type Tessera supports (packed "
                                "output takes f16, q8_0 or q4_0)",
                                a.type));
    }
    o.type = *t;
  }
  return o;
}

void print_prune_result(const PruneArgs& a, const model::ModelFile& in, const model::PruneReport& r) {
  std::vector<kernels::DType> types;
  for (const auto& e : r.entries) types.push_back(e.to);
  for (const auto& e : r.entries) {
    if (e.pruned && e.why != "packed" && e.why != "dense") {
      std::fprintf(stderr, "tessera prune: %s: %s\n", e.tensor.c_str(), e.why.c_str());
    }
  }
  std::printf("tessera prune: wrote %s (%s %s%s): %.1f MiB -> %.1f MiB (%.2f bits per parameter); "
              "%lld matrices pruned, %.1f%% of their weights zero, in %.1f s; tensor types: %s\n",
              a.out.c_str(), a.pattern.c_str(), a.method.c_str(), a.dense ? ", dense" : "",
              r.bytes_in / 1048576.0, r.bytes_out / 1048576.0,
              8.0 * static_cast<double>(r.bytes_out) / static_cast<double>(in.n_parameters()),
              static_cast<long long>(r.n_pruned),
              r.n_weights_pruned > 0 ? 100.0 * static_cast<double>(r.n_weights_zeroed) /
                                           static_cast<double>(r.n_weights_pruned)
                                     : 0.0,
              r.seconds, tensor_type_mix(types).c_str());
}

int run_prune(const PruneArgs& a) {
  auto o = prune_options(a);
  if (!o.is_ok()) return fail(o.status());
  auto in = model::open_model_file(a.in);
  if (!in.is_ok()) return fail(in.status());
  if (o->method == model::PruneMethod::kWanda) {
    if (a.calib.empty() == a.imatrix.empty()) {
      return fail(Status(ErrorCode::kInvalidArgument,
                         "--method wanda needs one of --calib TEXT (activation norms from a "
                         "calibration text) or --imatrix FILE (saved by tessera eval imatrix)"));
    }
    auto norms = wanda_column_norms(a);
    if (!norms.is_ok()) return fail(norms.status());
    o->column_norms = *norms;
  }
  const bool tty = isatty(STDERR_FILENO) != 0;
  o->progress = byte_progress("prune", tty, /*with_eta=*/false);
  auto r = model::prune_model(*in, a.out, *o);
  if (tty) std::fputc('\n', stderr);
  if (!r.is_ok()) return fail(r.status());
  print_prune_result(a, *in, *r);
  return 0;
}

}  // namespace

void add_prune_command(CLI::App& app, RunFn& run) {
  auto a = std::make_shared<PruneArgs>();
  CLI::App* cmd = app.add_subcommand(
      "prune", "N:M-prune a model's block matrices (2:4 packed in Tessera's sparse types, or dense)");
  cmd->add_option("in", a->in, "Input model (GGUF or llama2.c .bin)")->required();
  cmd->add_option("out", a->out, "Output GGUF path")->required();
  cmd->add_option("--pattern", a->pattern, "Keep N of every M weights, N:M")->capture_default_str();
  cmd->add_option("--method", a->method, "magnitude (|W|) or wanda (|W| * ||x||)")
      ->capture_default_str();
  cmd->add_option("--calib", a->calib, "Calibration text for wanda's activation norms");
  cmd->add_option("--imatrix", a->imatrix, "Activation statistics saved by tessera eval imatrix (instead of --calib)");
  cmd->add_option("--tokenizer", a->tokenizer, "Tokenizer for --calib (llama2.c .bin or GGUF; default: the model's)");
  cmd->add_option("--ctx,-c", a->ctx, "Calibration chunk length in tokens")->capture_default_str();
  cmd->add_option("--chunks", a->chunks, "Calibration chunks (0: every whole chunk of the text)")
      ->capture_default_str();
  cmd->add_option("--type", a->type,
                  "Dense type of the pruned matrices: f16, q8_0, q4_0 (default: each matrix's own)");
  cmd->add_flag("--dense", a->dense, "Store pruned matrices in the dense type, zeros kept (any N:M; "
                                     "loads in llama.cpp)");
  cmd->add_option("--threads,-t", a->threads, "Threads (0: all cores)")->capture_default_str();
  cmd->callback([&run, a] { run = [a] { return run_prune(*a); }; });
}

}  // namespace tessera::cli
