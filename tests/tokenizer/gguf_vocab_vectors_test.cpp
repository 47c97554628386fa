// llama.cpp's tokenizer test vectors (tests/test-tokenizer-0): for each vocabulary, inputs in
// <vocab>.gguf.inp separated by "\n__ggml_vocab_test__\n", and in <vocab>.gguf.out one line of
// expected ids per input. The ids come from the HuggingFace tokenizers, not from Tessera. They
// were made without BOS/EOS and without parsing special tokens (the empty input encodes to
// nothing, and no input contains a special token's text).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "hf_fixture.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/tokenizer/hf_tokenizer_json.h"
#include "tessera/model/tokenizer/tokenizer.h"
#include "test_util.h"

namespace tessera::model {
namespace gguf_vocab_vectors_test {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Splits the .inp file as llama.cpp's test does: each input is followed by the separator.
std::vector<std::string> read_inputs(const std::filesystem::path& path) {
  const std::string text = read_text(path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  for (size_t pos = 0; pos < text.size();) {
    size_t next = text.find(sep, pos);
    if (next == std::string::npos) next = text.size();
    inputs.push_back(text.substr(pos, next - pos));
    pos = next + sep.size();
  }
  return inputs;
}

std::vector<std::vector<int32_t>> read_outputs(const std::filesystem::path& path) {
  std::vector<std::vector<int32_t>> outputs;
  std::istringstream lines(read_text(path));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream ids(line);
    std::vector<int32_t> row;
    for (int32_t id; ids >> id;) row.push_back(id);
    outputs.push_back(std::move(row));
  }
  return outputs;
}

// Control characters escaped, for failure messages.
std::string show(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\n' || c == '\t') {
      out.push_back('\\');
      out.push_back(c == '\n' ? 'n' : 't');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string show(const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) {
    out.push_back(' ');
    out.append(std::to_string(id));
  }
  return out;
}

class VocabVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabVectors, EncodesLikeTheReferenceAndRoundTrips) {
  const std::string name = "tokenizers/ggml-vocab-" + GetParam() + ".gguf";
  TS_SKIP_WITHOUT_SHARED(gguf_path, name);
  auto file = open_model_file(gguf_path.string());
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  const auto t0 = std::chrono::steady_clock::now();
  auto tokenizer = make_tokenizer(file->metadata);
  const auto t1 = std::chrono::steady_clock::now();
  ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().to_string();
  const Tokenizer& tok = **tokenizer;

  const auto inputs = read_inputs(gguf_path.string() + ".inp");
  const auto expected = read_outputs(gguf_path.string() + ".out");
  ASSERT_EQ(inputs.size(), expected.size());
  ASSERT_FALSE(inputs.empty());

  size_t n_pass = 0;
  size_t n_round_trip = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto ids = tok.encode(inputs[i], /*add_special=*/false, /*parse_special=*/false);
    if (ids == expected[i]) {
      ++n_pass;
    } else {
      ADD_FAILURE() << GetParam() << " input " << i << " '" << show(inputs[i]) << "'\n  expected"
                    << show(expected[i]) << "\n  got     " << show(ids);
    }
    const std::string back = tok.decode(ids);
    if (back == inputs[i]) {
      ++n_round_trip;
    } else {
      ADD_FAILURE() << GetParam() << " input " << i << " does not round-trip: '" << show(inputs[i])
                    << "' decodes to '" << show(back) << "'";
    }
  }
  const double load_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  std::cout << "[ vectors  ] " << GetParam() << ": " << n_pass << "/" << inputs.size()
            << " encode, " << n_round_trip << "/" << inputs.size() << " round trip; "
            << tok.n_vocab() << " tokens built in " << load_ms << " ms\n";
}

// The same vectors through Hugging Face's form of the vocabulary: the test writes the GGUF
// vocabulary as the tokenizer.json HF uses for it (hf_fixture.h), and Tessera's tokenizer.json
// reader turns that back into a tokenizer, which must encode the inputs to the reference ids.
TEST_P(VocabVectors, EncodesLikeTheReferenceThroughTokenizerJson) {
  const std::string name = "tokenizers/ggml-vocab-" + GetParam() + ".gguf";
  TS_SKIP_WITHOUT_SHARED(gguf_path, name);
  auto file = open_model_file(gguf_path.string());
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  const std::string json = testing::tokenizer_json_of(file->metadata);
  if (json.empty()) {
    GTEST_SKIP() << GetParam() << ": the test has no tokenizer.json form for pre-tokenizer '"
                 << file->metadata.get_string_or("tokenizer.ggml.pre", "").value() << "'";
  }
  HfTokenizerInputs in;
  in.tokenizer_json = json;
  auto md = hf_tokenizer_to_gguf(in);
  ASSERT_TRUE(md.is_ok()) << md.status().to_string();
  auto tokenizer = make_tokenizer(*md);
  ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().to_string();
  const auto inputs = read_inputs(gguf_path.string() + ".inp");
  const auto expected = read_outputs(gguf_path.string() + ".out");
  ASSERT_EQ(inputs.size(), expected.size());
  size_t n_pass = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto ids = (*tokenizer)->encode(inputs[i], /*add_special=*/false, /*parse_special=*/false);
    if (ids == expected[i]) {
      ++n_pass;
    } else {
      ADD_FAILURE() << GetParam() << " (tokenizer.json) input " << i << " '" << show(inputs[i])
                    << "'\n  expected" << show(expected[i]) << "\n  got     " << show(ids);
    }
  }
  std::cout << "[ vectors  ] " << GetParam() << " via tokenizer.json ("
            << md->get_string("tokenizer.ggml.model").value() << "): " << n_pass << "/"
            << inputs.size() << " encode\n";
}

// gtest names may not contain '-'.
std::string vocab_test_name(const ::testing::TestParamInfo<std::string>& param_info) {
  std::string n = param_info.param;
  for (char& c : n) c = (c == '-') ? '_' : c;
  return n;
}

INSTANTIATE_TEST_SUITE_P(SharedVocabularies, VocabVectors,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "starcoder", "falcon",
                                           "deepseek-coder"),
                         vocab_test_name);

}  // namespace gguf_vocab_vectors_test
}  // namespace tessera::model
