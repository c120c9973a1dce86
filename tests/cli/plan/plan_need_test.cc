// kvsim plan --need: the need's grammar, and a search whose every answer meets the need, cheapest
// first, with every other deployment's reason.
#include "cli/plan_need.h"

#include <gtest/gtest.h>

#include <sstream>

#include "base/kv_format.h"
#include "tests/model/capacity/shipped_configs.h"

namespace kvsim::cli {
namespace {

TEST(ParseNeedTest, TakesTheKeysOnceAndRefusesTheRest) {
  const Result<Need> need = ParseNeed("concurrency=64,ms-per-token=30,ttft-ms=2000");
  ASSERT_TRUE(need.ok()) << need.status().ToString();
  EXPECT_EQ(need->concurrency, 64);
  EXPECT_EQ(need->ms_per_token_max, 30);
  EXPECT_EQ(need->ttft_ms_max, 2000);
  EXPECT_EQ(ParseNeed("ms-per-token=12.5,concurrency=1")->ttft_ms_max, 0);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"concurrency=64", "--need must be concurrency=N,ms-per-token=T[,ttft-ms=F]"},
      {"", "--need must be concurrency=N,ms-per-token=T[,ttft-ms=F]"},
      {"concurrency=0,ms-per-token=30", "--need concurrency '0' is not allowed"},
      {"concurrency=0x40,ms-per-token=30", "--need concurrency '0x40' is not allowed"},
      {"concurrency=64,ms-per-token= 30", "--need ms-per-token ' 30' is not allowed"},
      {"concurrency=64,ms-per-token=-1", "--need ms-per-token '-1' is not allowed"},
      {"concurrency=8,concurrency=9,ms-per-token=30", "--need gives concurrency twice"},
      {"concurrency=8,ms-per-token=30,tpot=3", "--need key 'tpot' is not known; allowed: "},
  };
  for (const auto& [text, message] : bad) {
    const Result<Need> r = ParseNeed(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(ExitCodeFor(r.status()), 2);
    EXPECT_EQ(r.status().message().find(message), 0u) << r.status().message();
  }
}

// 64 Kimi K2.6 requests of 21,000 tokens at 30 ms per token: the search covers every GPU kind,
// count, tp, cache and weight variant; what it offers meets the need, cheapest first.
TEST(SolveNeedTest, EveryAnswerMeetsTheNeedCheapestFirst) {
  model::PlanSettings base;
  base.deployment.output_tokens = 1000;
  const Need need{64, 30, 0};
  const Result<NeedReport> report =
      SolveNeed(model::ShippedCatalog(), model::ShippedParams(), base, need);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  // 4 GPU kinds x 14 (gpus, tp) pairs x 2 caches x 2 weight variants.
  EXPECT_EQ(report->meeting.size() + report->failing.size(), 224u);
  ASSERT_FALSE(report->meeting.empty());
  for (size_t i = 0; i < report->meeting.size(); ++i) {
    const NeedCandidate& c = report->meeting[i];
    ASSERT_TRUE(c.result.planned());
    EXPECT_TRUE(c.result.decode.front().fits);
    EXPECT_LE(c.result.decode.front().ms_per_token, 30);
    EXPECT_EQ(c.result.decode.front().concurrency, 64);
    if (i > 0) {
      EXPECT_GE(c.usd_per_hour, report->meeting[i - 1].usd_per_hour);
    }
  }
  for (const NeedCandidate& c : report->failing) {
    EXPECT_FALSE(c.failure.empty());
    if (!c.result.planned() || !c.result.decode.front().fits) continue;
    EXPECT_GT(c.result.decode.front().ms_per_token, 30) << c.failure;
  }
  // Eight H200s hold 65 such requests in an FP8 cache but decode them too slowly.
  std::ostringstream text;
  PrintNeed(text, need, base, *report, 8);
  EXPECT_NE(text.str().find("searched 224 deployments of kimi-k2.6"), std::string::npos);
  EXPECT_NE(text.str().find("decode too slow (closest: "), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("cheapest on h200-sxm: 16 x h200-sxm tp 8"), std::string::npos)
      << text.str();
}

// Fields the planner gave stay as given; an impossible need is met by none, with the reasons.
TEST(SolveNeedTest, GivenFieldsStayAndAnImpossibleNeedHasReasons) {
  model::PlanSettings base;
  ASSERT_TRUE(model::SetPlanField(base, "gpu", "h200-sxm").ok());
  ASSERT_TRUE(model::SetPlanField(base, "kv-dtype", "fp8_e4m3").ok());
  const Result<NeedReport> report =
      SolveNeed(model::ShippedCatalog(), model::ShippedParams(), base, Need{8, 1, 0});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->meeting.empty());
  EXPECT_EQ(report->failing.size(), 14u * 2);
  for (const NeedCandidate& c : report->failing) {
    EXPECT_EQ(c.result.settings.gpu, "h200-sxm");
    EXPECT_EQ(KvFormatName(c.result.settings.deployment.kv_format), "fp8_e4m3");
  }
  std::ostringstream text;
  PrintNeed(text, Need{8, 1, 0}, base, *report, 8);
  EXPECT_NE(text.str().find("none meets it"), std::string::npos);
  EXPECT_NE(text.str().find("weights do not fit (closest: "), std::string::npos) << text.str();
}

}  // namespace
}  // namespace kvsim::cli
