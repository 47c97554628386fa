#include "train_flags.h"

namespace tessera::cli {

void add_shape_and_batch_options(CLI::App* cmd, train::PretrainOptions& o) {
  cmd->add_option("--dim", o.shape.dim, "Model width")->capture_default_str();
  cmd->add_option("--layers", o.shape.layers, "Layers")->capture_default_str();
  cmd->add_option("--heads", o.shape.heads, "Attention heads")->capture_default_str();
  cmd->add_option("--kv-heads", o.shape.kv_heads, "Key/value heads")->capture_default_str();
  cmd->add_option("--ffn", o.shape.ffn, "Feed-forward width")->capture_default_str();
  cmd->add_option("--ctx,-c", o.shape.context, "Training window (tokens)")->capture_default_str();
  cmd->add_option("--batch,-b", o.batch, "Sequences per micro-batch")->capture_default_str();
  cmd->add_option("--accum", o.accum, "Micro-batches per optimizer step")->capture_default_str();
}

}  // namespace tessera::cli
