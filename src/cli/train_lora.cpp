#include "train_lora.h"

#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "common.h"
#include "train_progress.h"
#include "tessera/base/thread_pool.h"
#include "tessera/bench/train_record.h"
#include "tessera/train/lora_job.h"

namespace tessera::cli {

void add_lora_train_options(CLI::App& cmd, LoraTrainOptions& o) {
  cmd.add_flag("--lora", o.enabled,
               "Fine-tune LoRA adapters on the frozen --base instead of pretraining (the shape and "
               "tokenizer are the base's; -o names the adapter)");
  cmd.add_option("--base", o.base, "--lora: the base model (llama GGUF of any type, or llama2.c)");
  cmd.add_option("--rank", o.rank, "--lora: adapter rank")->capture_default_str();
  cmd.add_option("--alpha", o.alpha, "--lora: LoRA alpha (scale = alpha / rank; default: the rank)");
  cmd.add_option("--lora-targets", o.targets,
                 "--lora: matrices to adapt, comma-separated: q,k,v,o,gate,up,down or all")
      ->capture_default_str();
  cmd.add_option("--lora-format", o.format,
                 "--lora: peft (-o is a directory), gguf (-o is a .gguf file) or both (-o is a PEFT "
                 "directory that also holds adapter.gguf)")
      ->check(CLI::IsMember({"peft", "gguf", "both"}))
      ->capture_default_str();
}

namespace {

train::LoraJob lora_job(const LoraTrainOptions& l, const TrainRunOptions& a) {
  train::LoraJob job;
  job.base = l.base;
  job.text = a.text;
  job.out = a.out;
  job.vocab = a.vocab;
  job.val_fraction = a.val_fraction;
  job.rank = l.rank;
  job.alpha = l.alpha;
  job.targets = l.targets;
  job.format_name = l.format;
  job.o = a.o;
  return job;
}

void print_lora_banner(const train::LoraJob& job, const train::LoraSetup& s, int threads) {
  const train::LlamaShape& sh = job.o.shape;
  const int64_t tokens_per_step = job.o.batch * sh.context * job.o.accum;
  std::string names;
  for (train::LoraTarget t : s.layout.config.targets) {
    names += (names.empty() ? "" : ",") + std::string(train::lora_target_name(t));
  }
  const double n_base = static_cast<double>(s.base.params.size());
  std::fprintf(stderr,
               "tessera train --lora: %zu tokens of '%s' (%zu train / %zu validation, tokenized "
               "in %.1f s); base '%s': dim %lld, %lld layers, %lld heads (%lld kv), ffn %lld, "
               "vocab %lld, %.2f M parameters frozen (%lld tensors dequantized to f32), trained "
               "context %lld; adapters: rank %lld, alpha %g on %s: %lld parameters (%.2f%%); "
               "context %lld, %lld tokens per step, %d threads\n",
               s.data.tokens.size(), job.text.c_str(), s.data.train().size(), s.data.val().size(),
               s.data.tokenize_s, job.base.c_str(), static_cast<long long>(sh.dim),
               static_cast<long long>(sh.layers), static_cast<long long>(sh.heads),
               static_cast<long long>(sh.kv_heads), static_cast<long long>(sh.ffn),
               static_cast<long long>(sh.vocab), n_base / 1e6,
               static_cast<long long>(s.base.n_dequantized), static_cast<long long>(s.base_context),
               static_cast<long long>(s.config.rank), s.config.alpha, names.c_str(),
               static_cast<long long>(s.layout.n_params),
               100.0 * static_cast<double>(s.layout.n_params) / n_base,
               static_cast<long long>(sh.context), static_cast<long long>(tokens_per_step), threads);
}

void print_lora_result(const train::LoraJob& job, const train::LoraSetup& s,
                       const train::PretrainReport& report, const std::vector<std::string>& written,
                       bool json, int threads) {
  if (json) {
    nlohmann::json j = bench::train_totals_json(report);
    j.update({{"out", written},
              {"base", job.base},
              {"rank", s.config.rank},
              {"alpha", s.config.alpha},
              {"adapter_parameters", s.layout.n_params},
              {"base_parameters", s.base.params.size()},
              {"initial_val_loss", report.initial_val_loss},
              {"threads", threads},
              {"seed", job.o.seed}});
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::string outs;
  for (const auto& w : written) outs += (outs.empty() ? "" : " and ") + w;
  const bench::TrainRates rates = bench::train_rates(report);
  std::printf("tessera train --lora: wrote %s: %lld steps, %lld tokens in %s (%.0f tokens/s, "
              "%.1f GFLOP/s), validation loss %.4f -> %.4f\n",
              outs.c_str(), static_cast<long long>(report.steps.size()),
              static_cast<long long>(report.tokens), clock_string(report.seconds).c_str(),
              rates.tokens_per_second, rates.gflops, report.initial_val_loss, report.final_val_loss);
}

}  // namespace

int run_train_lora(const LoraTrainOptions& l, TrainRunOptions a) {
  train::LoraJob job = lora_job(l, a);
  auto format = train::parse_lora_output(l.format);
  if (!format.is_ok()) return fail(format.status());
  job.format = *format;
  if (Status s = train::validate(job); !s.is_ok()) return fail(s);
  auto setup = train::prepare_lora(job);
  if (!setup.is_ok()) return fail(setup.status());
  ThreadPool pool(a.threads > 0 ? a.threads : hardware_threads());
  if (!a.quiet) print_lora_banner(job, *setup, pool.size());
  TrainProgress progress(job.o.steps, job.o.batch * job.o.shape.context * job.o.accum, 0);
  auto report = train::run_lora(job, *setup, &pool, [&](const train::StepRecord& r) {
    if (!a.quiet) progress.print(r);
  });
  if (!report.is_ok()) return fail(report.status());
  auto written = train::write_lora_outputs(job, *setup);
  if (!written.is_ok()) return fail(written.status());
  print_lora_result(job, *setup, *report, *written, a.json, pool.size());
  return 0;
}

}  // namespace tessera::cli
