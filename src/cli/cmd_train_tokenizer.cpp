// tessera train-tokenizer: learns a byte-level BPE vocabulary from a text file and writes it as a
// tokenizer-only GGUF, which `tessera train --vocab` (and every command taking a GGUF tokenizer)
// reads. The last --holdout of the text is kept out of training and encoded with the written
// file to measure compression on unseen text.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "tessera/model/format/gguf_writer.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/tokenizer/bpe_trainer.h"

namespace tessera::cli {
namespace {

struct TrainTokenizerArgs {
  std::string text, out;
  model::BpeTrainerOptions o;
  double holdout = 0.01;
  bool json = false;
  bool quiet = false;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Where the held-out tail starts: `fraction` of the text from the end, moved back to just after
// a newline (so no word is cut in two) when one is near enough not to double the tail.
size_t holdout_start(const std::string& text, double fraction) {
  if (fraction <= 0) return text.size();
  const auto n_tail = static_cast<size_t>(static_cast<double>(text.size()) * fraction);
  const size_t at = text.size() - n_tail;
  const size_t nl = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
  return nl == std::string::npos || at - (nl + 1) > n_tail ? at : nl + 1;
}

// The vocabulary alone as a GGUF (what --vocab and every command taking a tokenizer read).
Status write_tokenizer_gguf(const std::string& path, const model::BpeTrainResult& r) {
  model::GgufWriter w;
  w.metadata().set("general.name", model::GgufValue::string("tessera-bpe-" + std::to_string(r.tokens.size())));
  const model::Metadata vocab = model::bpe_vocab_metadata(r);
  for (const auto& [key, value] : vocab.entries()) w.metadata().set(key, value);
  return w.write(path).with_context("writing " + path);
}

// The held-out text through the written file's tokenizer (the one every command uses).
struct HeldOut {
  std::string_view text;
  std::vector<int32_t> ids;
  bool round_trip = false;
};

Result<HeldOut> encode_held_out(const std::string& path, std::string_view text) {
  TS_ASSIGN_OR_RETURN(auto file, model::open_model_file(path));
  auto tok = model::make_tokenizer(file.metadata);
  if (!tok.is_ok()) return tok.status().with_context(path);
  HeldOut h{text, (*tok)->encode(text, false, false), false};
  h.round_trip = (*tok)->decode(h.ids) == text;
  return h;
}

void print_tokenizer_result(const TrainTokenizerArgs& a, const model::BpeTrainResult& r,
                            double count_s, double merge_s, const HeldOut& held) {
  const size_t n_special = r.tokens.size() - 256 - r.merges.size();
  const double train_bpt = r.n_tokens > 0 ? static_cast<double>(r.n_bytes) / static_cast<double>(r.n_tokens) : 0;
  const double held_bpt = held.ids.empty() ? 0 : static_cast<double>(held.text.size()) / static_cast<double>(held.ids.size());
  if (a.json) {
    nlohmann::json j = {{"out", a.out},
                        {"n_vocab", r.tokens.size()},
                        {"n_merges", r.merges.size()},
                        {"n_special", n_special},
                        {"pre_tokenizer", r.pre_tokenizer},
                        {"train_bytes", r.n_bytes},
                        {"train_words", r.n_words},
                        {"distinct_words", r.words.size()},
                        {"skipped_pairs", r.n_skipped_pairs},
                        {"below_min_frequency", r.below_min_frequency},
                        {"count_seconds", count_s},
                        {"merge_seconds", merge_s},
                        {"train_tokens", r.n_tokens},
                        {"train_bytes_per_token", train_bpt},
                        {"heldout_bytes", held.text.size()},
                        {"heldout_tokens", held.ids.size()},
                        {"heldout_bytes_per_token", held_bpt},
                        {"heldout_round_trip", held.round_trip}};
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf(
      "tessera train-tokenizer: wrote %s: %zu tokens (256 bytes + %zu merges + %zu special), "
      "pre-tokenizer %s\n"
      "  training text: %lld bytes, %lld words (%zu distinct); counted in %.2f s, merged in %.2f s%s\n"
      "  %lld pairs not merged (they spell a special token)\n"
      "  bytes per token: %.3f on the training text, %s\n",
      a.out.c_str(), r.tokens.size(), r.merges.size(), n_special, r.pre_tokenizer.c_str(),
      static_cast<long long>(r.n_bytes), static_cast<long long>(r.n_words), r.words.size(), count_s,
      merge_s, r.below_min_frequency ? " (stopped: no pair seen --min-frequency times)" : "",
      static_cast<long long>(r.n_skipped_pairs), train_bpt,
      held.text.empty() ? "no held-out text (--holdout 0)"
                        : fmt::format("{:.3f} on the held-out {} bytes (round trip {})", held_bpt,
                                      held.text.size(), held.round_trip ? "exact" : "DIFFERS")
                              .c_str());
}

int run_train_tokenizer(TrainTokenizerArgs a) {
  if (!(a.holdout >= 0 && a.holdout < 0.5)) return fail("--holdout must be in [0, 0.5)");
  auto text = read_text(a.text);
  if (!text.is_ok()) return fail(text.status());
  auto trainer = model::BpeTrainer::create(a.o);
  if (!trainer.is_ok()) return fail(trainer.status());

  const auto t0 = std::chrono::steady_clock::now();
  const size_t split = holdout_start(*text, a.holdout);
  trainer->add_text(std::string_view(*text).substr(0, split));
  const double count_s = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  const model::BpeTrainResult r =
      trainer->train([&](int32_t n, int32_t target, int64_t count) {
        if (a.quiet) return;
        std::fprintf(stderr, "\rtessera train-tokenizer: merge %d/%d (pair seen %lld times), %.1f s   ",
                     n, target, static_cast<long long>(count), seconds_since(t0));
      });
  const double merge_s = seconds_since(t1);
  if (!a.quiet) std::fprintf(stderr, "\n");
  if (Status s = write_tokenizer_gguf(a.out, r); !s.is_ok()) return fail(s);
  auto held = encode_held_out(a.out, std::string_view(*text).substr(split));
  if (!held.is_ok()) return fail(held.status());
  print_tokenizer_result(a, r, count_s, merge_s, *held);
  return held->round_trip ? 0 : fail("decoding the held-out text did not give it back");
}

}  // namespace

void add_train_tokenizer_command(CLI::App& app, RunFn& run) {
  auto* cmd = app.add_subcommand(
      "train-tokenizer", "Learn a byte-level BPE tokenizer from a text file; writes a tokenizer GGUF");
  auto args = std::make_shared<TrainTokenizerArgs>();
  auto& o = args->o;
  o.eos = "<|endoftext|>";
  cmd->add_option("--text,-f", args->text, "Training text; the last --holdout is kept out")->required();
  cmd->add_option("--out,-o", args->out, "Output GGUF (tokenizer metadata only)")->required();
  cmd->add_option("--vocab-size", o.vocab_size, "Tokens in all: 256 bytes + merges + special tokens")
      ->capture_default_str();
  cmd->add_option("--min-frequency", o.min_frequency, "Stop when no pair occurs this often")
      ->capture_default_str();
  cmd->add_option("--pre", o.pre_tokenizer, "Pre-tokenizer (tokenizer.ggml.pre name)")->capture_default_str();
  cmd->add_option("--special", o.special_tokens, "Extra control tokens (repeatable), after the merges");
  cmd->add_option("--bos", o.bos, "BOS token string (\"\" for none)")->capture_default_str();
  cmd->add_option("--eos", o.eos, "EOS token string (\"\" for none)")->capture_default_str();
  cmd->add_option("--holdout", args->holdout, "Fraction of the text (from the end) kept out of training")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print the summary as JSON");
  cmd->add_flag("--quiet,-q", args->quiet, "No progress line");
  cmd->callback([&run, args] { run = [args] { return run_train_tokenizer(*args); }; });
}

}  // namespace tessera::cli
