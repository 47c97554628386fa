#include "tessera/train/lora_job.h"

#include <fmt/format.h>

#include <filesystem>

#include "tessera/train/lora_writer.h"

namespace tessera::train {
namespace lora_job {

bool wants_peft(const LoraJob& job) { return job.format != LoraOutput::kGguf; }
bool wants_gguf(const LoraJob& job) { return job.format != LoraOutput::kPeft; }

Result<LoraConfig> lora_config(const LoraJob& job) {
  auto targets = parse_lora_targets(job.targets);
  if (!targets.is_ok()) return targets.status().with_context("--lora-targets");
  LoraConfig lc;
  lc.rank = job.rank;
  lc.alpha = job.alpha > 0 ? job.alpha : static_cast<double>(job.rank);
  lc.targets = *targets;
  return lc;
}

}  // namespace lora_job

Result<LoraOutput> parse_lora_output(std::string_view name) {
  if (name == "peft") return LoraOutput::kPeft;
  if (name == "gguf") return LoraOutput::kGguf;
  if (name == "both") return LoraOutput::kBoth;
  return invalid_argument(fmt::format("--lora-format '{}': expected peft, gguf or both", name));
}

Status validate(const LoraJob& job) {
  if (job.base.empty()) return invalid_argument("--lora needs --base MODEL (the model the adapters train on)");
  const bool out_is_gguf = job.out.size() > 5 && job.out.ends_with(".gguf");
  if (lora_job::wants_peft(job) && out_is_gguf) {
    return invalid_argument(fmt::format("-o {} names a .gguf file but --lora-format {} writes a PEFT "
                                        "directory; pass --lora-format gguf or a directory",
                                        job.out, job.format_name));
  }
  if (!lora_job::wants_peft(job) && !out_is_gguf) {
    return invalid_argument(fmt::format("--lora-format gguf: -o {} must end in .gguf", job.out));
  }
  return Status::ok();
}

Result<LoraSetup> prepare_lora(LoraJob& job) {
  LoraSetup s;
  auto base = load_llama_base(job.base);
  if (!base.is_ok()) return base.status().with_context("--base");
  s.base = std::move(base).value();
  s.base_context = s.base.shape.context;
  const int64_t context = job.o.shape.context;
  job.o.shape = s.base.shape;
  job.o.shape.context = context;

  TS_ASSIGN_OR_RETURN(const std::string text, read_training_text(job.text));
  TS_ASSIGN_OR_RETURN(s.data, tokenize_training_text(text, job.vocab.empty() ? job.base : job.vocab,
                                                     0, job.val_fraction));
  if (s.data.n_vocab > job.o.shape.vocab) {
    return invalid_argument(fmt::format("the tokenizer has {} tokens, the base model's output {}",
                                        s.data.n_vocab, job.o.shape.vocab));
  }
  TS_ASSIGN_OR_RETURN(s.config, lora_job::lora_config(job));
  TS_ASSIGN_OR_RETURN(s.layout, make_lora_layout(job.o.shape, s.config));
  s.adapters.resize(static_cast<size_t>(s.layout.n_params));
  init_lora_params(s.layout, s.adapters, job.o.seed);
  return s;
}

Result<PretrainReport> run_lora(const LoraJob& job, LoraSetup& setup, ThreadPool* pool,
                                const std::function<void(const StepRecord&)>& on_step) {
  PretrainHooks hooks;
  hooks.on_step = [&](const StepRecord& r) {
    if (on_step) on_step(r);
    return true;
  };
  return finetune_lora(job.o, setup.layout, setup.base.params, setup.adapters, setup.data.train(),
                       setup.data.val(), pool, hooks);
}

Result<std::vector<std::string>> write_lora_outputs(const LoraJob& job, const LoraSetup& s) {
  namespace fs = std::filesystem;
  std::vector<std::string> written;
  if (lora_job::wants_peft(job)) {
    TS_RETURN_IF_ERROR(write_peft_adapter(job.out, job.o.shape, s.layout, s.adapters, job.base)
                           .with_context("writing " + job.out));
    written.push_back(job.out + " (PEFT)");
  }
  if (lora_job::wants_gguf(job)) {
    const std::string path =
        lora_job::wants_peft(job) ? (fs::path(job.out) / "adapter.gguf").string() : job.out;
    const std::string name =
        fmt::format("tessera LoRA r{} of {}", s.config.rank, fs::path(job.base).filename().string());
    TS_RETURN_IF_ERROR(write_gguf_lora(path, job.o.shape, s.layout, s.adapters, name)
                           .with_context("writing " + path));
    written.push_back(path + " (GGUF LoRA)");
  }
  return written;
}

}  // namespace tessera::train
