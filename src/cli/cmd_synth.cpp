// `tessera synth`: write a random-weight GGUF with a real model's shape.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/synth.h"

namespace tessera::cli {
namespace {

struct SynthArgs {
  std::string shape;
  std::string dtype = "f32";
  std::string out;
  std::string vocab;
  std::string chat_template;  // a file whose text becomes tokenizer.chat_template
  std::string arch = "llama";
  int64_t sliding_window = 0;
  uint64_t seed = 1;
  int64_t dim = 0, layers = 0, heads = 0, kv_heads = 0, ffn = 0, vocab_size = 0, ctx = 0;
};

int run_synth(const SynthArgs& a) {
  model::SynthShape shape;
  if (!a.shape.empty()) {
    auto s = model::find_synth_shape(a.shape);
    if (!s) {
      std::string names;
      for (const auto& x : model::synth_shapes()) names += (names.empty() ? "" : ", ") + x.name;
      return fail(fmt::format("unknown shape '{}' (known: {})", a.shape, names));
    }
    shape = *s;
  } else {
    shape.name = "custom";
  }
  if (a.dim) shape.dim = a.dim;
  if (a.layers) shape.n_layers = a.layers;
  if (a.heads) shape.n_heads = a.heads;
  if (a.kv_heads) shape.n_kv_heads = a.kv_heads;
  if (a.ffn) shape.ffn_dim = a.ffn;
  if (a.vocab_size) shape.n_vocab = a.vocab_size;
  if (a.ctx) shape.context_length = a.ctx;
  if (shape.n_kv_heads == 0) shape.n_kv_heads = shape.n_heads;

  model::SynthOptions opts;
  opts.shape = shape;
  opts.seed = a.seed;
  opts.arch = a.arch;
  opts.sliding_window = a.sliding_window;
  auto dtype = kernels::dtype_from_name(a.dtype);
  if (!dtype) {
    return fail(fmt::format(
        "unknown dtype '{}' (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_K, q3_K, q4_K, "
        "q5_K, q6_K, iq4_nl, iq4_xs)",
        a.dtype));
  }
  opts.dtype = *dtype;
  if (!a.vocab.empty()) {
    auto f = model::open_model_file(a.vocab);
    if (!f.is_ok()) return fail(f.status());
    opts.vocab = f->metadata;
  }
  if (!a.chat_template.empty()) {
    std::ifstream f(a.chat_template, std::ios::binary);
    if (!f) return fail(fmt::format("--chat-template '{}': cannot read the file", a.chat_template));
    std::stringstream text;
    text << f.rdbuf();
    if (!opts.vocab) opts.vocab = model::synthetic_vocab(shape.n_vocab);
    opts.vocab->set("tokenizer.chat_template", model::GgufValue::string(text.str()));
  }
  Status s = model::write_synthetic_model(opts, a.out);
  if (!s.is_ok()) return fail(s);
  auto check = model::open_model_file(a.out);
  if (!check.is_ok()) return fail(check.status().with_context("re-reading the written file"));
  std::fprintf(stderr, "tessera: wrote %s: %s %s-shaped, %s, %.1f M parameters, %.1f MiB\n",
               a.out.c_str(), a.arch.c_str(), shape.name.c_str(), a.dtype.c_str(),
               static_cast<double>(check->n_parameters()) / 1e6,
               static_cast<double>(check->tensor_bytes()) / (1 << 20));
  return 0;
}

}  // namespace

void add_synth_command(CLI::App& app, RunFn& run) {
  auto a = std::make_shared<SynthArgs>();
  CLI::App* cmd = app.add_subcommand(
      "synth", "Write a random-weight GGUF model with a real model's shape (for benchmarks)");
  cmd->add_option("--shape", a->shape,
                  "Shape name: tinyllama-1.1b, llama-3.2-1b, smollm2-135m, tiny");
  cmd->add_option("--dtype", a->dtype,
                  "Weight type: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_K, q3_K, q4_K, "
                  "q5_K, q6_K, iq4_nl, iq4_xs")
      ->capture_default_str();
  cmd->add_option("--out,-o", a->out, "Output GGUF path")->required();
  cmd->add_option("--vocab", a->vocab, "Copy the tokenizer from this (vocab-only) GGUF");
  cmd->add_option("--chat-template", a->chat_template,
                  "Write this file's text as the model's tokenizer.chat_template");
  cmd->add_option("--arch", a->arch, "Model family: llama, qwen2, qwen3, mistral, phi3, gemma2, gemma3")
      ->capture_default_str();
  cmd->add_option("--sliding-window", a->sliding_window,
                  "mistral, gemma2, gemma3: write <arch>.attention.sliding_window (0: none)");
  cmd->add_option("--seed", a->seed, "Random seed")->capture_default_str();
  cmd->add_option("--dim", a->dim, "Override: embedding size");
  cmd->add_option("--layers", a->layers, "Override: number of layers");
  cmd->add_option("--heads", a->heads, "Override: attention heads");
  cmd->add_option("--kv-heads", a->kv_heads, "Override: key/value heads");
  cmd->add_option("--ffn", a->ffn, "Override: feed-forward size");
  cmd->add_option("--vocab-size", a->vocab_size, "Override: vocabulary size (generated vocab)");
  cmd->add_option("--ctx", a->ctx, "Override: context length");
  cmd->callback([&run, a] {
    if (a->shape.empty() && (a->dim == 0 || a->layers == 0 || a->heads == 0 || a->ffn == 0 ||
                             (a->vocab_size == 0 && a->vocab.empty()))) {
      throw CLI::ValidationError(
          "--shape", "give --shape NAME, or all of --dim --layers --heads --ffn --vocab-size");
    }
    run = [a] { return run_synth(*a); };
  });
}

}  // namespace tessera::cli
