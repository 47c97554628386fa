#include "tessera/bench/trace.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tessera/base/rng.h"
#include "tessera/bench/csv.h"

namespace tessera::bench {

std::string_view trace_format_name(TraceFormat f) {
  switch (f) {
    case TraceFormat::kAzure: return "azure";
    case TraceFormat::kMooncake: return "mooncake";
    case TraceFormat::kSplitwise: return "splitwise";
  }
  return "?";
}

Result<TraceFormat> parse_trace_format(std::string_view name) {
  if (name == "azure") return TraceFormat::kAzure;
  if (name == "mooncake") return TraceFormat::kMooncake;
  if (name == "splitwise" || name == "vidur") return TraceFormat::kSplitwise;
  return invalid_argument("unknown trace format '" + std::string(name) +
                          "': expected azure, mooncake or splitwise");
}

Result<TraceFormat> detect_trace_format(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found("cannot open trace " + path);
  std::string first;
  std::getline(in, first);
  if (!first.empty() && first[0] == '{') return TraceFormat::kMooncake;
  if (first.rfind("TIMESTAMP", 0) == 0) return TraceFormat::kAzure;
  if (first.rfind("arrived_at", 0) == 0) return TraceFormat::kSplitwise;
  return invalid_argument("cannot tell the format of trace " + path +
                          " from its first line: pass --trace-format azure|mooncake|splitwise");
}

namespace {
// Days from 1970-01-01 to y-m-d (Howard Hinnant's days_from_civil).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

}  // namespace

Result<double> parse_timestamp(std::string_view text) {
  int y, mo, d, h, mi;
  double sec;
  const std::string s(text);
  if (std::sscanf(s.c_str(), "%d-%d-%d %d:%d:%lf", &y, &mo, &d, &h, &mi, &sec) != 6 || mo < 1 ||
      mo > 12 || d < 1 || d > 31) {
    return invalid_argument("'" + s + "' is not a YYYY-MM-DD HH:MM:SS.fraction timestamp");
  }
  return static_cast<double>(days_from_civil(y, static_cast<unsigned>(mo),
                                             static_cast<unsigned>(d))) * 86400.0 +
         h * 3600.0 + mi * 60.0 + sec;
}

Result<std::vector<TraceEntry>> load_trace(const std::string& path, TraceFormat format,
                                           int64_t max_entries) {
  std::ifstream in(path);
  if (!in) return not_found("cannot open trace " + path);
  std::vector<TraceEntry> out;
  std::string line;
  int64_t n = 0;
  auto bad = [&](const std::string& what) {
    return corrupt_data(path + ":" + std::to_string(n) + ": " + what);
  };
  if (format != TraceFormat::kMooncake) {
    std::getline(in, line);  // the header
    ++n;
  }
  while (std::getline(in, line)) {
    ++n;
    if (max_entries > 0 && static_cast<int64_t>(out.size()) >= max_entries) break;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    TraceEntry e;
    if (format == TraceFormat::kMooncake) {
      try {
        const auto j = nlohmann::json::parse(line);
        e.t_s = j.at("timestamp").get<double>() * 1e-3;
        e.input_tokens = j.at("input_length").get<int32_t>();
        e.output_tokens = j.at("output_length").get<int32_t>();
        if (j.contains("hash_ids")) e.hash_ids = j.at("hash_ids").get<std::vector<int64_t>>();
      } catch (const std::exception& ex) {
        return bad(std::string("expected {\"timestamp\": ms, \"input_length\": n, "
                               "\"output_length\": n, \"hash_ids\": [...]}: ") + ex.what());
      }
    } else {
      const auto f = split_csv_line(line);
      double a, b;
      if (f.size() < 3 || !parse_finite_double(f[1], a) || !parse_finite_double(f[2], b)) {
        return bad(format == TraceFormat::kAzure
                       ? "expected TIMESTAMP,ContextTokens,GeneratedTokens"
                       : "expected arrived_at,num_prefill_tokens,num_decode_tokens");
      }
      e.input_tokens = static_cast<int32_t>(a);
      e.output_tokens = static_cast<int32_t>(b);
      if (format == TraceFormat::kAzure) {
        auto t = parse_timestamp(f[0]);
        if (!t.is_ok()) return bad(t.status().message());
        e.t_s = *t;
      } else if (!parse_finite_double(f[0], e.t_s)) {
        return bad("arrived_at '" + f[0] + "' is not a number of seconds");
      }
    }
    if (e.input_tokens < 1 || e.output_tokens < 0) {
      return bad("token counts must be input >= 1 and output >= 0");
    }
    out.push_back(std::move(e));
  }
  if (out.empty()) return corrupt_data(path + ": no entries");
  std::stable_sort(out.begin(), out.end(),
                   [](const TraceEntry& x, const TraceEntry& y) { return x.t_s < y.t_s; });
  const double t0 = out.front().t_s;
  for (auto& e : out) e.t_s -= t0;
  return out;
}

Replay build_replay(const std::vector<TraceEntry>& entries, const ReplayOptions& o,
                    const PromptSynthesizer& synth) {
  Replay r;
  Rng rng(o.seed ^ 0x7ace);
  for (const TraceEntry& e : entries) {
    // A scaled block size scales the prompt with it (at least one token): the trace's prefix
    // sharing at a fraction of its prefill.
    const int32_t block_len = o.scaled_block_tokens > 0 ? o.scaled_block_tokens : o.block_tokens;
    int32_t scaled_in = e.input_tokens;
    if (!e.hash_ids.empty() && block_len != o.block_tokens) {
      scaled_in = std::max<int32_t>(
          1, static_cast<int32_t>(static_cast<int64_t>(e.input_tokens) * block_len / o.block_tokens));
    }
    const int32_t n_in = o.max_input_tokens > 0 ? std::min(scaled_in, o.max_input_tokens)
                                                : scaled_in;
    int32_t n_out = std::max(1, e.output_tokens);
    if (o.max_output_tokens > 0) n_out = std::min(n_out, o.max_output_tokens);
    QuerySample s;
    synth.begin(s);
    if (e.hash_ids.empty()) {
      synth.append(n_in - static_cast<int32_t>(s.tokens.size()), rng, s);
    } else {
      // Block k holds tokens [k*B, (k+1)*B) of the prompt, drawn from a stream seeded by its
      // hash id alone; a partial last block is a prefix of that stream.
      int32_t have = 0;
      for (size_t k = 0; k < e.hash_ids.size() && have < n_in; ++k) {
        const int32_t take = std::min(block_len, n_in - have);
        Rng block(static_cast<uint64_t>(e.hash_ids[k]) * 0x9e3779b97f4a7c15ULL + 1);
        synth.append(take - (k == 0 ? static_cast<int32_t>(s.tokens.size()) : 0), block, s);
        have += take;
      }
      if (have < n_in) synth.append(n_in - have, rng, s);  // longer than its blocks
    }
    synth.finish(s);
    s.max_output_tokens = n_out;
    r.library.add(std::move(s));
    r.times_s.push_back(e.t_s / o.time_scale);
  }
  return r;
}

}  // namespace tessera::bench
