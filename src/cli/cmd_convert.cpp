// `tessera convert DIR OUT.gguf`: write a Hugging Face checkpoint directory as GGUF: the very
// tensors and metadata Tessera loads from the directory (model/hf_checkpoint.h), so serving the
// GGUF and serving the directory are the same model.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>

#include "commands.h"
#include "common.h"
#include "tessera/model/format/gguf_writer.h"
#include "tessera/model/hf_checkpoint.h"

namespace tessera::cli {
namespace {

struct ConvertArgs {
  std::string in, out;
};

int run_convert(const ConvertArgs& a) {
  const auto t0 = std::chrono::steady_clock::now();
  auto in = model::open_hf_checkpoint(a.in);
  if (!in.is_ok()) return fail(in.status());
  auto w = model::GgufWriter::referencing(*in);
  if (!w.is_ok()) return fail(w.status().with_context("converting " + a.in));
  if (auto s = w->write(a.out); !s.is_ok()) return fail(s);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto arch_key = in->metadata.get_string_or("general.architecture", "?");
  const std::string arch = arch_key.is_ok() ? *arch_key : "?";
  std::printf("tessera convert: %s -> %s: %s, %zu tensors, %llu parameters, %.1f MiB, %zu metadata "
              "keys, %.2f s\n",
              a.in.c_str(), a.out.c_str(), arch.c_str(), in->tensors.size(),
              static_cast<unsigned long long>(in->n_parameters()),
              static_cast<double>(in->tensor_bytes()) / 1048576.0, in->metadata.size(), secs);
  return 0;
}

}  // namespace

void add_convert_command(CLI::App& app, RunFn& run) {
  auto a = std::make_shared<ConvertArgs>();
  CLI::App* cmd = app.add_subcommand(
      "convert", "Write a Hugging Face checkpoint directory (config.json, *.safetensors, "
                 "tokenizer.json) as GGUF");
  cmd->add_option("dir", a->in, "Checkpoint directory")->required();
  cmd->add_option("out", a->out, "Output .gguf file")->required();
  cmd->callback([&run, a] { run = [a] { return run_convert(*a); }; });
}

}  // namespace tessera::cli
