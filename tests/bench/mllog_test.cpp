// MLPerf-style log lines: the prefix and JSON field order, the call site in the metadata, the
// whole-log check (required keys, run_start before run_stop, a status), and the training report
// page with its loss chart data.
#include "tessera/bench/mllog.h"

#include <gtest/gtest.h>

#include "tessera/bench/train_corpus.h"
#include "tessera/bench/train_report_html.h"

namespace tessera::bench {
namespace mllog_test {

std::vector<std::string> complete_log(bool with_stop) {
  int64_t t = 1000;
  MlLogger log(nullptr, [&] { return t++; });
  for (std::string_view key : kMlPerfRequiredKeys) {
    if (key == "run_stop" || key == "eval_accuracy") continue;
    if (key == "init_start" || key == "run_start") {
      log.start(key);
    } else if (key == "init_stop") {
      log.end(key);
    } else {
      log.event(key, 1);
    }
  }
  log.event("eval_accuracy", 3.5, {{"samples_count", 64}});
  if (with_stop) log.end("run_stop", nullptr, {{"status", "success"}});
  return log.lines();
}

TEST(MlLog, LinesAreJsonInMlPerfOrderWithTheCallSite) {
  std::vector<std::string> sunk;
  MlLogger log([&](const std::string& l) { sunk.push_back(l); }, [] { return int64_t{42}; });
  log.event("global_batch_size", 8);
  const int line = __LINE__ - 1;
  log.start("run_start");
  ASSERT_EQ(sunk.size(), 2u);
  EXPECT_EQ(sunk, log.lines());
  EXPECT_TRUE(sunk[0].starts_with(":::MLLOG {\"namespace\":\"\",\"time_ms\":42,\"event_type\":\"POINT_IN_TIME\","
                                  "\"key\":\"global_batch_size\",\"value\":8,\"metadata\":{\"file\":"))
      << sunk[0];
  auto j = parse_mllog_line(sunk[0]);
  ASSERT_TRUE(j.is_ok()) << j.status().to_string();
  EXPECT_EQ((*j)["metadata"]["lineno"].get<int>(), line);
  EXPECT_NE((*j)["metadata"]["file"].get<std::string>().find("mllog_test.cpp"), std::string::npos);
  EXPECT_EQ((*parse_mllog_line(sunk[1]))["event_type"], "INTERVAL_START");
  EXPECT_FALSE(parse_mllog_line("MLLOG {}").is_ok());
  EXPECT_FALSE(parse_mllog_line(":::MLLOG {\"key\": 1").is_ok());
  EXPECT_FALSE(parse_mllog_line(":::MLLOG {\"time_ms\":1,\"namespace\":\"\",\"event_type\":\"POINT_IN_TIME\","
                                "\"key\":\"a\",\"value\":1,\"metadata\":{}}").is_ok());  // order
}

TEST(MlLog, CheckWantsEveryRequiredKeyAndRunStopLast) {
  EXPECT_TRUE(check_mllog(complete_log(true)).is_ok()) << check_mllog(complete_log(true)).to_string();
  EXPECT_FALSE(check_mllog(complete_log(false)).is_ok());
  auto lines = complete_log(true);
  std::swap(lines[lines.size() - 1], lines[lines.size() - 2]);  // time goes backwards
  EXPECT_FALSE(check_mllog(lines).is_ok());
  lines = complete_log(true);
  lines.erase(lines.begin());  // no submission_benchmark
  EXPECT_NE(check_mllog(lines).to_string().find("submission_benchmark"), std::string::npos);
}

TEST(TrainReport, PageCarriesTheCurvesAndTheLog) {
  nlohmann::json summary = {{"status", "success"}, {"target_loss", 2.5}, {"target_step", 2},
                            {"tokens_per_second", 100.0}, {"mfu", 0.01},
                            {"steps", {{{"step", 1}, {"loss", 3.0}},
                                       {{"step", 2}, {"loss", 2.4}, {"val_loss", 2.45}}}}};
  const std::string h = render_train_report_html(summary, {":::MLLOG {\"a\":\"<b>\"}"}, "");
  EXPECT_NE(h.find("<canvas id=\"loss\">"), std::string::npos);
  EXPECT_NE(h.find("\"val\":[{\"x\":2,\"y\":2.45}]"), std::string::npos);
  EXPECT_NE(h.find("1.00%"), std::string::npos);
  EXPECT_NE(h.find("&lt;b&gt;"), std::string::npos);
  EXPECT_EQ(h.find("<b>\"}"), std::string::npos);
}

TEST(TrainCorpus, SyntheticTextIsDeterministicSentences) {
  const std::string a = synthetic_training_text(5000, 3), b = synthetic_training_text(5000, 3);
  EXPECT_EQ(a, b);
  EXPECT_GE(a.size(), 5000u);
  EXPECT_NE(a, synthetic_training_text(5000, 4));
  EXPECT_EQ(a.find_first_not_of("abcdefghijklmnopqrstuvwxyzATOE. \n"), std::string::npos);
}

}  // namespace mllog_test
}  // namespace tessera::bench
