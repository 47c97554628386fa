// `tessera quantize IN OUT --type T [--imatrix FILE]`: re-encode a model's weight matrices
// (model/quantize.h), optionally weighting the rounding search by an importance matrix.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>

#include "commands.h"
#include "common.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/hf_checkpoint.h"
#include "tessera/model/imatrix_file.h"
#include "tessera/model/quantize.h"

namespace tessera::cli {
namespace {

struct QuantizeArgs {
  std::string in, out, type, imatrix;
  int threads = 0;
  bool plan = false;
};

std::string type_names() {
  std::string s;
  for (const auto& t : model::quant_types()) s += (s.empty() ? "" : ", ") + t.name;
  return s;
}

// --plan: each tensor's type and why.
int print_quantization_plan(const model::ModelFile& in, const model::QuantType& type) {
  auto plan = model::plan_quantization(in, type);
  if (!plan.is_ok()) return fail(plan.status());
  for (const auto& e : *plan) {
    std::printf("%-32s %-7s -> %-7s %s\n", e.tensor.c_str(),
                std::string(kernels::dtype_name(e.from)).c_str(),
                std::string(kernels::dtype_name(e.to)).c_str(), e.why.c_str());
  }
  return 0;
}

void print_imatrix_loaded(const std::string& path, const model::ActivationStats& imatrix) {
  std::fprintf(stderr, "tessera quantize: importance matrix %s: %zu tensors, %lld chunks%s from "
               "'%s'\n",
               path.c_str(), imatrix.tensors.size(), static_cast<long long>(imatrix.n_chunks),
               imatrix.chunk_size > 0 ? fmt::format(" of {} tokens", imatrix.chunk_size).c_str()
                                      : "",
               imatrix.dataset.c_str());
}

void print_imatrix_use(const model::QuantizeReport& r) {
  std::fprintf(stderr, "tessera quantize: %lld tensors weighted by the importance matrix",
               static_cast<long long>(r.n_weighted));
  if (r.n_error_feedback > 0) {
    std::fprintf(stderr, " (%lld with error feedback over its covariances)",
                 static_cast<long long>(r.n_error_feedback));
  }
  if (r.without_imatrix.empty()) {
    std::fputc('\n', stderr);
  } else {
    std::fprintf(stderr, "; %zu without statistics there, coded unweighted:",
                 r.without_imatrix.size());
    for (const auto& t : r.without_imatrix) std::fprintf(stderr, " %s", t.c_str());
    std::fputc('\n', stderr);
  }
}

int run_quantize(const QuantizeArgs& a) {
  auto type = model::find_quant_type(a.type);
  if (!type.is_ok()) return fail(type.status());
  auto in = model::open_model_path(a.in);
  if (!in.is_ok()) return fail(in.status());
  if (a.plan) return print_quantization_plan(*in, *type);
  const bool tty = isatty(STDERR_FILENO) != 0;
  model::QuantizeOptions o;
  o.n_threads = a.threads;
  o.progress = byte_progress("quantize", tty, /*with_eta=*/true);
  model::ActivationStats imatrix;
  if (!a.imatrix.empty()) {
    auto im = model::read_imatrix(a.imatrix);
    if (!im.is_ok()) return fail(im.status().with_context("--imatrix"));
    imatrix = std::move(im).value();
    print_imatrix_loaded(a.imatrix, imatrix);
    o.imatrix = &imatrix;
  }
  auto r = model::quantize_model(*in, *type, a.out, o);
  if (tty) std::fputc('\n', stderr);
  if (!r.is_ok()) return fail(r.status());
  if (!a.imatrix.empty()) print_imatrix_use(*r);
  std::vector<kernels::DType> types;
  for (const auto& e : r->plan) types.push_back(e.to);
  std::printf("tessera quantize: wrote %s (%s): %.1f MiB -> %.1f MiB (%.2f bits per parameter), %lld "
              "tensors re-encoded in %.1f s; tensor types: %s\n",
              a.out.c_str(), type->name.c_str(), r->bytes_in / 1048576.0, r->bytes_out / 1048576.0,
              8.0 * static_cast<double>(r->bytes_out) / static_cast<double>(in->n_parameters()),
              static_cast<long long>(r->n_quantized), r->seconds, tensor_type_mix(types).c_str());
  return 0;
}

}  // namespace

void add_quantize_command(CLI::App& app, RunFn& run) {
  auto a = std::make_shared<QuantizeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "quantize", "Re-encode a model's weights in another type or llama.cpp mix (GGUF or llama2.c in, GGUF out)");
  cmd->add_option("in", a->in, "Input model (GGUF or llama2.c .bin)")->required();
  cmd->add_option("out", a->out, "Output GGUF path")->required();
  cmd->add_option("--type", a->type, "Type or mix: " + type_names())->required();
  cmd->add_option("--imatrix", a->imatrix,
                  "Importance matrix (`tessera eval imatrix` or llama-imatrix, GGUF or legacy "
                  ".dat) weighting each matrix's rounding search; matrices it holds covariances "
                  "for (`eval imatrix --covariance`) are coded with error feedback");
  cmd->add_option("--threads,-t", a->threads, "Threads (0: all cores)")->capture_default_str();
  cmd->add_flag("--plan", a->plan, "Print each tensor's type and why, write nothing");
  cmd->callback([&run, a] { run = [a] { return run_quantize(*a); }; });
}

}  // namespace tessera::cli
