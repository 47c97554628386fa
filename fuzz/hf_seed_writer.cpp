// Writes small valid Hugging Face JSON files into a directory, as the seed corpus of hf_fuzzer:
// each prefixed with the byte that selects its parser (0 config.json, 1 index, 2 tokenizer.json
// with tokenizer_config.json after a NUL).
// Usage: hf_seed_writer <dir>
#include <cstdio>
#include <fstream>
#include <string>

namespace {

bool save(const std::string& path, char selector, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << selector << text;
  return static_cast<bool>(f);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <dir>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = true;
  ok = save(dir + "/config-llama.json", '\0',
            R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
"intermediate_size": 128, "vocab_size": 300, "max_position_embeddings": 512,
"rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": false,
"rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
"high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
"bos_token_id": 1, "eos_token_id": [2, 3], "torch_dtype": "bfloat16"})") && ok;
  ok = save(dir + "/config-qwen3.json", '\0',
            R"({"architectures": ["Qwen3ForCausalLM"], "hidden_size": 64, "num_hidden_layers": 1,
"num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 48, "intermediate_size": 96,
"vocab_size": 500, "sliding_window": null, "use_sliding_window": false})") && ok;
  ok = save(dir + "/index.json", '\x01',
            R"({"metadata": {"total_size": 1024}, "weight_map": {
"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
"lm_head.weight": "model-00002-of-00002.safetensors"}})") && ok;
  ok = save(dir + "/tokenizer-bytelevel.json", '\x02',
            std::string(R"({"added_tokens": [{"id": 5, "content": "<|end|>", "special": true}],
"normalizer": null, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false,
"use_regex": true}, "post_processor": {"type": "TemplateProcessing", "single": [
{"SpecialToken": {"id": "<|end|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]},
"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120": 3, "\u0120ab": 4},
"merges": ["a b", ["\u0120", "ab"]]}})") + std::string(1, '\0') +
                R"({"bos_token": "<|end|>", "eos_token": {"content": "<|end|>"},
"add_bos_token": false, "chat_template": "{{ x }}"})") && ok;
  ok = save(dir + "/tokenizer-spm.json", '\x02',
            R"({"added_tokens": [{"id": 0, "content": "<unk>", "special": true}],
"normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
{"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}, "pre_tokenizer": null,
"model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>", "vocab": {"<unk>": 0,
"<0x41>": 1, "\u2581": 2, "h": 3, "i": 4, "hi": 5, "\u2581hi": 6},
"merges": ["h i", "\u2581 hi"]}})") && ok;
  ok = save(dir + "/tokenizer-llama3.json", '\x02',
            R"({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern":
{"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
"behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "use_regex": false}]},
"model": {"type": "BPE", "ignore_merges": true, "vocab": {"x": 0, "y": 1, "xy": 2},
"merges": ["x y"]}})") && ok;
  return ok ? 0 : 1;
}
