#include "tessera/train/pretrain_job.h"

#include <fmt/format.h>

#include "tessera/train/checkpoint.h"
#include "tessera/train/run_exports.h"

namespace tessera::train {
namespace pretrain_job {

// The parameters and state to start from: read back from a checkpoint, or freshly initialized.
Status start_params(const PretrainJob& job, PretrainSetup& s) {
  if (job.resume.empty()) {
    init_llama_params(job.o.shape, s.params, job.o.seed);
    return Status::ok();
  }
  auto p = read_llama_gguf_params(job.resume, job.o.shape);
  if (!p.is_ok()) return p.status().with_context("--resume");
  s.params = std::move(*p);
  auto st = read_train_state(train_state_path(job.resume), job.o);
  if (!st.is_ok()) return st.status().with_context("--resume");
  s.state = std::move(*st);
  return Status::ok();
}

// What the run writes after the loop: data order, state, the model.
Status write_outputs(const PretrainJob& job, const PretrainSetup& s,
                     const std::vector<int64_t>& window_starts) {
  if (!job.data_order_out.empty()) {
    TS_RETURN_IF_ERROR(write_data_order_npy(job.data_order_out, window_starts, s.data.train(),
                                            job.o.accum * job.o.batch, job.o.shape.context)
                           .with_context("--data-order-out"));
  }
  if (job.save_state || job.stop_at_step > 0) {
    const std::string path = train_state_path(job.out);
    TS_RETURN_IF_ERROR(write_train_state(path, s.state, job.o).with_context("writing " + path));
  }
  const std::string name = fmt::format("tessera-trained {}x{}", job.o.shape.layers, job.o.shape.dim);
  return write_llama_gguf(job.out, job.o.shape, s.params, &s.data.vocab, name)
      .with_context("writing " + job.out);
}

}  // namespace pretrain_job

Result<PretrainSetup> prepare_pretrain(PretrainJob& job) {
  TS_ASSIGN_OR_RETURN(const std::string text, read_training_text(job.text));
  PretrainSetup s;
  TS_ASSIGN_OR_RETURN(s.data, tokenize_training_text(text, job.vocab, job.vocab_size, job.val_fraction));
  job.o.shape.vocab = s.data.n_vocab;
  TS_RETURN_IF_ERROR(validate(job.o.shape));
  llama_param_layout(job.o.shape, &s.n_params);
  s.params.resize(static_cast<size_t>(s.n_params));
  TS_RETURN_IF_ERROR(pretrain_job::start_params(job, s));
  if (!job.init_out.empty()) {
    TS_RETURN_IF_ERROR(write_init_safetensors(job.init_out, job.o.shape, s.params)
                           .with_context("--init-out"));
  }
  return s;
}

Result<PretrainReport> run_pretrain(const PretrainJob& job, PretrainSetup& setup, ThreadPool* pool,
                                    const std::function<void(const StepRecord&)>& on_step) {
  std::vector<int64_t> window_starts;
  PretrainHooks hooks;
  hooks.state = &setup.state;
  if (!job.data_order_out.empty()) hooks.window_starts = &window_starts;
  hooks.on_step = [&](const StepRecord& r) {
    if (on_step) on_step(r);
    return job.stop_at_step <= 0 || r.step < job.stop_at_step;
  };
  TS_ASSIGN_OR_RETURN(PretrainReport report, pretrain(job.o, setup.params, setup.data.train(),
                                                      setup.data.val(), pool, hooks));
  TS_RETURN_IF_ERROR(pretrain_job::write_outputs(job, setup, window_starts));
  return report;
}

}  // namespace tessera::train
