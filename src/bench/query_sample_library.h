// QuerySampleLibrary: the prompts a benchmark may send (MLPerf LoadGen's QSL). Each sample is a
// prompt, as text and, when its exact token ids for the target are known, as ids, plus how many
// tokens to generate. The harness picks samples by index; backends read them and never own them.
// Thread-safety: immutable once built; any thread may read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::bench {

struct QuerySample {
  std::string prompt;            // the prompt text (what HTTP backends send)
  std::vector<int32_t> tokens;   // exact prompt token ids when known (in-process); may be empty
  int32_t input_tokens = 0;      // intended prompt length: tokens.size() when tokens are set
  int32_t max_output_tokens = 16;
};

class QuerySampleLibrary {
 public:
  virtual ~QuerySampleLibrary() = default;
  virtual size_t size() const = 0;
  // Precondition: index < size().
  virtual const QuerySample& sample(size_t index) const = 0;
};

// A library held in memory (synthetic prompts, a prompt file, a trace).
class InMemoryLibrary final : public QuerySampleLibrary {
 public:
  InMemoryLibrary() = default;
  explicit InMemoryLibrary(std::vector<QuerySample> samples) : samples_(std::move(samples)) {}
  size_t size() const override { return samples_.size(); }
  const QuerySample& sample(size_t index) const override { return samples_.at(index); }
  void add(QuerySample s) { samples_.push_back(std::move(s)); }
  std::vector<QuerySample>& samples() { return samples_; }

 private:
  std::vector<QuerySample> samples_;
};

}  // namespace tessera::bench
