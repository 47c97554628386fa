// `tessera lora info ADAPTER --base MODEL` and `tessera lora merge BASE ADAPTER OUT`: read a LoRA
// adapter (PEFT directory or GGUF LoRA) against its base model, or merge it into a new GGUF
// (model/lora_adapter.h).
#include <fmt/format.h>

#include <cstdio>

#include "commands.h"
#include "common.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/lora_adapter.h"

namespace tessera::cli {
namespace {

struct LoraArgs {
  std::string base, adapter, out;
  float scale = 1.0f;
};

const char* format_name(model::LoraFormat f) {
  return f == model::LoraFormat::kPeft ? "PEFT (safetensors)" : "GGUF LoRA";
}

int run_info(const LoraArgs& a) {
  auto base = model::open_model_file(a.base);
  if (!base.is_ok()) return fail(base.status());
  auto lora = model::load_lora_adapter(a.adapter, *base);
  if (!lora.is_ok()) return fail(lora.status());
  std::printf("adapter:  %s (%s)\nalpha:    %g\nmatrices: %zu, max rank %lld, %.2f MiB as f32\n",
              a.adapter.c_str(), format_name(lora->format), static_cast<double>(lora->alpha),
              lora->matrices.size(), static_cast<long long>(lora->max_rank()),
              static_cast<double>(lora->bytes()) / 1048576.0);
  for (const auto& m : lora->matrices) {
    std::printf("  %-28s rank %-4lld %lld x %lld  scale %g\n", m.target.c_str(),
                static_cast<long long>(m.rank), static_cast<long long>(m.n_out),
                static_cast<long long>(m.n_in), static_cast<double>(m.scale));
  }
  return 0;
}

int run_merge(const LoraArgs& a) {
  auto base = model::open_model_file(a.base);
  if (!base.is_ok()) return fail(base.status());
  auto lora = model::load_lora_adapter(a.adapter, *base);
  if (!lora.is_ok()) return fail(lora.status());
  auto r = model::merge_lora(*base, *lora, a.out, a.scale);
  if (!r.is_ok()) return fail(r.status());
  std::printf("tessera lora merge: wrote %s: %lld matrices updated (scale x%g)%s\n", a.out.c_str(),
              static_cast<long long>(r->n_merged), static_cast<double>(a.scale),
              r->n_requantized > 0
                  ? fmt::format(", {} of them re-quantized to their block type (lossy)",
                                r->n_requantized).c_str()
                  : "");
  return 0;
}

}  // namespace

void add_lora_command(CLI::App& app, RunFn& run) {
  CLI::App* lora = app.add_subcommand("lora", "LoRA adapters: inspect one against its base, merge one in");
  lora->require_subcommand(1);
  {
    auto a = std::make_shared<LoraArgs>();
    CLI::App* cmd = lora->add_subcommand("info", "Read an adapter against its base model and list its matrices");
    cmd->add_option("adapter", a->adapter, "PEFT directory (or its .safetensors) or GGUF LoRA")->required();
    cmd->add_option("--base", a->base, "Base model (GGUF or llama2.c .bin)")->required();
    cmd->callback([&run, a] { run = [a] { return run_info(*a); }; });
  }
  {
    auto a = std::make_shared<LoraArgs>();
    CLI::App* cmd = lora->add_subcommand("merge", "Write BASE with ADAPTER merged in (W + scale * B * A) as GGUF");
    cmd->add_option("base", a->base, "Base model (GGUF or llama2.c .bin)")->required();
    cmd->add_option("adapter", a->adapter, "PEFT directory (or its .safetensors) or GGUF LoRA")->required();
    cmd->add_option("out", a->out, "Output GGUF path")->required();
    cmd->add_option("--scale", a->scale, "Multiplies the adapter's own alpha / rank")->capture_default_str();
    cmd->callback([&run, a] { run = [a] { return run_merge(*a); }; });
  }
}

}  // namespace tessera::cli
