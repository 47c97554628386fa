// Helpers shared by the CLI subcommands: error printing, loading a model with its tokenizer, and
// collecting activation statistics over a calibration text.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/kernels/dtype.h"
#include "tessera/model/activation_stats.h"
#include "tessera/model/model.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::cli {

// Prints "tessera: error: <status message>" to stderr and returns exit code 1.
int fail(const Status& status);
int fail(const std::string& message);

struct LoadedModel {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<model::Tokenizer> tokenizer;
};

// Loads the model at `model_path` and its tokenizer: from `tokenizer_path` when non-empty
// (a llama2.c tokenizer .bin or a GGUF file with tokenizer metadata), else from the model's
// own GGUF metadata. A llama2.c checkpoint without --tokenizer gets a clear error.
// `device` as parse_device returns it (-1: the CPU).
Result<LoadedModel> load_model_and_tokenizer(const std::string& model_path,
                                             const std::string& tokenizer_path, int device = -1);

// `--device cpu|opencl[:N]`: -1 for the CPU, N for OpenCL device N (`opencl` is opencl:0, the
// numbering of `tessera info --devices`). Errors: kInvalidArgument naming the accepted forms.
Result<int> parse_device(const std::string& flag);
// Adds `--device` to `cmd`, storing the flag's text in `*device` (default "cpu").
void add_device_option(CLI::App* cmd, std::string* device);

// How `eval imatrix` and `prune --calib` run a model over a calibration text.
struct CalibrationRun {
  int threads = 0;        // 0: all cores
  int32_t ctx = 512;      // tokens per chunk
  int64_t chunks = 0;     // 0: every whole chunk
  bool covariance = false;
  std::function<void(int64_t chunk, int64_t n_chunks)> progress;  // may be empty
};

// model::collect_activation_stats of `m` over `text` on a pool of run.threads. Errors: its.
Result<model::ActivationStats> collect_calibration(const LoadedModel& m, const std::string& text,
                                                   const CalibrationRun& run);

// Progress over bytes for `tessera NAME`: a bar on a terminal (with the time left when
// `with_eta`), else a line per tenth ("tessera NAME: 40% (1.2 s)") so logs stay short. Time runs
// from the call.
std::function<void(uint64_t done, uint64_t total)> byte_progress(const std::string& name, bool tty,
                                                                 bool with_eta);

// "3 q4_0, 2 f32": how many tensors went to each type, by type name in order.
std::string tensor_type_mix(const std::vector<kernels::DType>& types);

// The whole file at `path` (a text to evaluate or calibrate on). Errors: kNotFound.
Result<std::string> read_text(const std::string& path);

// Chart.js (UMD) to inline in an HTML report: from `flag_path`, else $TESSERA_CHARTJS, else the
// npm cache scripts/fetch-chartjs.sh fills. Empty when none is readable; `*used` (optional) gets
// the path tried.
std::string load_chart_js(const std::string& flag_path, std::string* used = nullptr);

}  // namespace tessera::cli
