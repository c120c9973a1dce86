// kvsim plan --need: the need's grammar, and a search whose every answer meets the need, cheapest
// first, with every other deployment's reason.
#include "cli/plan_need.h"

#include <gtest/gtest.h>

#include <limits>
#include <optional>
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
  EXPECT_EQ(report->max_gpus, kNeedMaxGpusDefault);
  ASSERT_FALSE(report->meeting.empty());
  for (size_t i = 0; i < report->meeting.size(); ++i) {
    const NeedCandidate& c = report->meeting[i];
    ASSERT_TRUE(c.result.planned());
    EXPECT_TRUE(c.result.decode.front().fits);
    EXPECT_LE(c.result.decode.front().ms_per_token, 30);
    EXPECT_EQ(c.result.decode.front().concurrency, 64);
    EXPECT_LE(c.shortfall, 1);
    EXPECT_EQ(c.result.settings.deployment.gpus % c.result.settings.deployment.tp, 0);
    if (i > 0) {
      EXPECT_GE(c.usd_per_hour, report->meeting[i - 1].usd_per_hour);
    }
  }
  for (const NeedCandidate& c : report->failing) {
    EXPECT_FALSE(c.failure.empty());
    EXPECT_GT(c.shortfall, 1) << c.failure;
    if (!c.result.planned() || !c.result.decode.front().fits) continue;
    EXPECT_GT(c.result.decode.front().ms_per_token, 30) << c.failure;
  }
  // Eight H200s hold 65 such requests in an FP8 cache but decode them too slowly.
  std::ostringstream text;
  PrintNeed(text, need, base, *report, 8);
  EXPECT_NE(text.str().find(fmt::format("searched {} deployments of kimi-k2.6",
                                         report->meeting.size() + report->failing.size())),
            std::string::npos);
  EXPECT_NE(text.str().find("gpus 1..64 (every multiple of tp"), std::string::npos);
  EXPECT_NE(text.str().find("decode too slow (closest: "), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("cheapest on h200-sxm: 16 x h200-sxm tp 8"), std::string::npos)
      << text.str();
}

// Fields the planner gave stay as given; an impossible need is met by none, with the reasons.
TEST(SolveNeedTest, GivenFieldsStayAndAnImpossibleNeedHasReasons) {
  model::PlanSettings base;
  ASSERT_TRUE(model::SetPlanField(base, "gpu", "h200-sxm").ok());
  ASSERT_TRUE(model::SetPlanField(base, "kv-format", "fp8_e4m3").ok());
  const Result<NeedReport> report =
      SolveNeed(model::ShippedCatalog(), model::ShippedParams(), base, Need{8, 1, 0});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->meeting.empty());
  ASSERT_FALSE(report->failing.empty());
  for (const NeedCandidate& c : report->failing) {
    EXPECT_EQ(c.result.settings.gpu, "h200-sxm");
    EXPECT_EQ(KvFormatName(c.result.settings.deployment.kv_format), "fp8_e4m3");
  }
  std::ostringstream text;
  PrintNeed(text, Need{8, 1, 0}, base, *report, 8);
  EXPECT_NE(text.str().find("none meets it"), std::string::npos);
  EXPECT_NE(text.str().find("weights do not fit (closest: "), std::string::npos) << text.str();
  // At 1 ms per token no GPU count helps: every deployment stops where more GPUs change nothing
  // (one request per pool at the latest), short of the limit.
  EXPECT_EQ(report->short_at_max_gpus, 0);
  EXPECT_NE(text.str().find("so a larger --max-gpus would not help"), std::string::npos)
      << text.str();
}

// Expert parallelism is searched only where there are routed experts; the JSON lists every
// deployment searched, the failing ones with their reason.
TEST(SolveNeedTest, ExpertParallelismIsSearchedForMoeModelsAndJsonListsEveryDeployment) {
  model::PlanSettings dense;
  ASSERT_TRUE(model::SetPlanField(dense, "model", "llama-3.1-70b").ok());
  ASSERT_TRUE(model::SetPlanField(dense, "gpu", "h100-sxm").ok());
  const Need need{16, 40, 0};
  const Result<NeedReport> report =
      SolveNeed(model::ShippedCatalog(), model::ShippedParams(), dense, need);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  for (const auto* list : {&report->meeting, &report->failing}) {
    for (const NeedCandidate& c : *list) EXPECT_EQ(c.result.settings.deployment.ep, 1);
  }
  const nlohmann::json j = NeedJson(need, dense, *report);
  EXPECT_EQ(j["meeting"].size(), report->meeting.size());
  EXPECT_EQ(j["failing"].size(), report->failing.size());
  EXPECT_EQ(j["need"]["concurrency"], 16);
  for (const nlohmann::json& f : j["failing"]) EXPECT_TRUE(f.contains("failure"));
  for (const nlohmann::json& m : j["meeting"]) {
    EXPECT_FALSE(m.contains("failure"));
    EXPECT_LE(m["ms_per_token"].get<double>(), 40);
  }

  model::PlanSettings moe;
  ASSERT_TRUE(model::SetPlanField(moe, "model", "glm-5.2").ok());
  ASSERT_TRUE(model::SetPlanField(moe, "gpu", "h200-sxm").ok());
  ASSERT_TRUE(model::SetPlanField(moe, "gpus", "8").ok());
  ASSERT_TRUE(model::SetPlanField(moe, "tp", "8").ok());
  const Result<NeedReport> moe_report =
      SolveNeed(model::ShippedCatalog(), model::ShippedParams(), moe, need);
  ASSERT_TRUE(moe_report.ok()) << moe_report.status().ToString();
  int expert_parallel = 0;
  for (const auto* list : {&moe_report->meeting, &moe_report->failing}) {
    for (const NeedCandidate& c : *list) expert_parallel += c.result.settings.deployment.ep == 8;
  }
  // 2 caches x 3 weight variants, each with ep 1 and ep 8.
  EXPECT_EQ(moe_report->meeting.size() + moe_report->failing.size(), 12u);
  EXPECT_EQ(expert_parallel, 6);
}

}  // namespace
}  // namespace kvsim::cli
