#include "train_lora.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common.h"
#include "train_data.h"
#include "train_progress.h"
#include "tessera/base/thread_pool.h"
#include "tessera/train/base_model.h"
#include "tessera/train/lora_layout.h"
#include "tessera/train/lora_writer.h"

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

int run_train_lora(const LoraTrainOptions& l, TrainRunOptions a) {
  namespace fs = std::filesystem;
  if (l.base.empty()) return fail("--lora needs --base MODEL (the model the adapters train on)");
  const bool want_peft = l.format != "gguf", want_gguf = l.format != "peft";
  const bool out_is_gguf = a.out.size() > 5 && a.out.ends_with(".gguf");
  if (want_peft && out_is_gguf) {
    return fail(fmt::format("-o {} names a .gguf file but --lora-format {} writes a PEFT "
                            "directory; pass --lora-format gguf or a directory", a.out, l.format));
  }
  if (!want_peft && !out_is_gguf) {
    return fail(fmt::format("--lora-format gguf: -o {} must end in .gguf", a.out));
  }
  auto base = train::load_llama_base(l.base);
  if (!base.is_ok()) return fail(base.status().with_context("--base"));
  const int64_t base_context = base->shape.context;
  train::PretrainOptions& o = a.o;
  o.shape = base->shape;
  o.shape.context = a.o.shape.context;

  std::ifstream in(a.text, std::ios::binary);
  if (!in) return fail("cannot read --text '" + a.text + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  auto data = tokenize_training_text(ss.str(), a.vocab.empty() ? l.base : a.vocab, 0, a.val_fraction);
  if (!data.is_ok()) return fail(data.status());
  if (data->n_vocab > o.shape.vocab) {
    return fail(fmt::format("the tokenizer has {} tokens, the base model's output {}",
                            data->n_vocab, o.shape.vocab));
  }
  auto targets = train::parse_lora_targets(l.targets);
  if (!targets.is_ok()) return fail(targets.status().with_context("--lora-targets"));
  train::LoraConfig lc;
  lc.rank = l.rank;
  lc.alpha = l.alpha > 0 ? l.alpha : static_cast<double>(l.rank);
  lc.targets = *targets;
  auto layout = train::make_lora_layout(o.shape, lc);
  if (!layout.is_ok()) return fail(layout.status());
  std::vector<float> adapters(static_cast<size_t>(layout->n_params));
  train::init_lora_params(*layout, adapters, o.seed);

  ThreadPool pool(a.threads > 0 ? a.threads : hardware_threads());
  const int64_t tokens_per_step = o.batch * o.shape.context * o.accum;
  const auto train_split = data->train(), val_split = data->val();
  if (!a.quiet) {
    std::string names;
    for (train::LoraTarget t : layout->config.targets) {
      names += (names.empty() ? "" : ",") + std::string(train::lora_target_name(t));
    }
    std::fprintf(stderr,
                 "tessera train --lora: %zu tokens of '%s' (%zu train / %zu validation, tokenized "
                 "in %.1f s); base '%s': dim %lld, %lld layers, %lld heads (%lld kv), ffn %lld, "
                 "vocab %lld, %.2f M parameters frozen (%lld tensors dequantized to f32), trained "
                 "context %lld; adapters: rank %lld, alpha %g on %s: %lld parameters (%.2f%%); "
                 "context %lld, %lld tokens per step, %d threads\n",
                 data->tokens.size(), a.text.c_str(), train_split.size(), val_split.size(),
                 data->tokenize_s, l.base.c_str(), static_cast<long long>(o.shape.dim),
                 static_cast<long long>(o.shape.layers), static_cast<long long>(o.shape.heads),
                 static_cast<long long>(o.shape.kv_heads), static_cast<long long>(o.shape.ffn),
                 static_cast<long long>(o.shape.vocab),
                 static_cast<double>(base->params.size()) / 1e6,
                 static_cast<long long>(base->n_dequantized), static_cast<long long>(base_context),
                 static_cast<long long>(lc.rank), lc.alpha, names.c_str(),
                 static_cast<long long>(layout->n_params),
                 100.0 * static_cast<double>(layout->n_params) / static_cast<double>(base->params.size()),
                 static_cast<long long>(o.shape.context), static_cast<long long>(tokens_per_step),
                 pool.size());
  }
  TrainProgress progress(o.steps, tokens_per_step, 0);
  train::PretrainHooks hooks;
  hooks.on_step = [&](const train::StepRecord& r) {
    if (!a.quiet) progress.print(r);
    return true;
  };
  auto report = train::finetune_lora(o, *layout, base->params, adapters, train_split, val_split,
                                     &pool, hooks);
  if (!report.is_ok()) return fail(report.status());

  std::vector<std::string> written;
  if (want_peft) {
    if (Status s = train::write_peft_adapter(a.out, o.shape, *layout, adapters, l.base); !s.is_ok()) {
      return fail(s.with_context("writing " + a.out));
    }
    written.push_back(a.out + " (PEFT)");
  }
  if (want_gguf) {
    const std::string path = want_peft ? (fs::path(a.out) / "adapter.gguf").string() : a.out;
    const std::string name = fmt::format("tessera LoRA r{} of {}", lc.rank, fs::path(l.base).filename().string());
    if (Status s = train::write_gguf_lora(path, o.shape, *layout, adapters, name); !s.is_ok()) {
      return fail(s.with_context("writing " + path));
    }
    written.push_back(path + " (GGUF LoRA)");
  }
  const double tps = static_cast<double>(report->tokens) / report->seconds;
  const double gflops = tps * report->flops_per_token / 1e9;
  if (a.json) {
    const nlohmann::json j = {{"out", written},
                              {"base", l.base},
                              {"rank", lc.rank},
                              {"alpha", lc.alpha},
                              {"adapter_parameters", layout->n_params},
                              {"base_parameters", base->params.size()},
                              {"tokens", report->tokens},
                              {"seconds", report->seconds},
                              {"eval_seconds", report->eval_seconds},
                              {"tokens_per_second", tps},
                              {"flops_per_token", report->flops_per_token},
                              {"achieved_gflops", gflops},
                              {"initial_val_loss", report->initial_val_loss},
                              {"final_val_loss", report->final_val_loss},
                              {"threads", pool.size()},
                              {"seed", o.seed},
                              {"steps", steps_json(*report)}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::string outs;
    for (const auto& w : written) outs += (outs.empty() ? "" : " and ") + w;
    std::printf("tessera train --lora: wrote %s: %lld steps, %lld tokens in %s (%.0f tokens/s, "
                "%.1f GFLOP/s), validation loss %.4f -> %.4f\n",
                outs.c_str(), static_cast<long long>(report->steps.size()),
                static_cast<long long>(report->tokens), clock_string(report->seconds).c_str(), tps,
                gflops, report->initial_val_loss, report->final_val_loss);
  }
  return 0;
}

}  // namespace tessera::cli
