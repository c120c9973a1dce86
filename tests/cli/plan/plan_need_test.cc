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
  const size_t searched = report->meeting.size() + report->failing.size();
  EXPECT_NE(text.str().find("searched " + std::to_string(searched) + " deployments of kimi-k2.6"),
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

// Kimi K2.6 at 32K context on H200s: 64 requests at 30 ms per token need 24 GPUs, beyond the 16
// the search once stopped at (16 decode at 35.0 ms per token).
model::PlanSettings KimiOnH200At32K() {
  model::PlanSettings base;
  EXPECT_TRUE(model::SetPlanField(base, "gpu", "h200-sxm").ok());
  EXPECT_TRUE(model::SetPlanField(base, "context", "32768").ok());
  return base;
}

const Need kKimi32KNeed{64, 30, 0};

TEST(SolveNeedTest, SearchesPastSixteenGpusToTheCountThatMeetsTheNeed) {
  const model::PlanSettings base = KimiOnH200At32K();
  const Result<NeedReport> report =
      SolveNeed(model::ShippedCatalog(), model::ShippedParams(), base, kKimi32KNeed);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_FALSE(report->meeting.empty());
  const model::Deployment& cheapest = report->meeting.front().result.settings.deployment;
  EXPECT_EQ(cheapest.gpus, 24);
  EXPECT_EQ(cheapest.tp, 8);
  EXPECT_EQ(KvFormatName(cheapest.kv_format), "fp8_e4m3");
  // Each deployment (gpu, tp, ep, cache, weights) appears at its fewest GPUs that meet the need:
  // the same one with tp fewer GPUs is among the failures.
  for (const NeedCandidate& c : report->meeting) {
    const model::Deployment& d = c.result.settings.deployment;
    if (d.gpus == d.tp) continue;
    int fewer = 0;
    for (const NeedCandidate& f : report->failing) {
      const model::Deployment& e = f.result.settings.deployment;
      fewer += e.gpus == d.gpus - d.tp && e.tp == d.tp && e.ep == d.ep &&
               e.kv_format == d.kv_format && e.weight_variant == d.weight_variant;
    }
    EXPECT_EQ(fewer, 1) << d.gpus << " x tp " << d.tp;
  }
  std::ostringstream text;
  PrintNeed(text, kKimi32KNeed, base, *report, 8);
  EXPECT_NE(text.str().find("cheapest on h200-sxm: 24 x h200-sxm tp 8, fp8_e4m3 cache"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("a larger --max-gpus (now 64) finds nothing cheaper"),
            std::string::npos)
      << text.str();
}

// The limit is the planner's: at 16 GPUs none meets the need, and the answer says where the
// search stopped and how to search further.
TEST(SolveNeedTest, ALowerMaxGpusStopsThereAndSaysToRaiseIt) {
  const model::PlanSettings base = KimiOnH200At32K();
  const Result<NeedReport> report =
      SolveNeed(model::ShippedCatalog(), model::ShippedParams(), base, kKimi32KNeed, 16);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->meeting.empty());
  EXPECT_GT(report->short_at_max_gpus, 0);
  for (const NeedCandidate& c : report->failing) {
    EXPECT_LE(c.result.settings.deployment.gpus, 16);
  }
  std::ostringstream text;
  PrintNeed(text, kKimi32KNeed, base, *report, 8);
  EXPECT_NE(text.str().find("none meets it"), std::string::npos);
  EXPECT_NE(text.str().find("gpus 1..16 (every multiple of tp"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("stopped at --max-gpus 16, where "), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("raise --max-gpus to search further"), std::string::npos) << text.str();
  const nlohmann::json j = NeedJson(kKimi32KNeed, base, *report);
  EXPECT_EQ(j["max_gpus"], 16);
  EXPECT_EQ(j["short_at_max_gpus"], report->short_at_max_gpus);
}

// The closest miss of a reason is the one with the smallest shortfall, not the cheapest: of the
// deployments whose weights do not fit, 8 GPUs with FP8 weights (123.4 GiB of 116.5) rather than
// one GPU (554.1 GiB). The nearest miss of all is the smallest shortfall over every reason.
TEST(SolveNeedTest, TheClosestMissIsTheNearestByShortfallNotTheCheapest) {
  const model::PlanSettings base = KimiOnH200At32K();
  const Result<NeedReport> report =
      SolveNeed(model::ShippedCatalog(), model::ShippedParams(), base, kKimi32KNeed, 16);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const NeedCandidate* cheapest = nullptr;
  const NeedCandidate* nearest = nullptr;
  const NeedCandidate* nearest_weights = nullptr;
  for (const NeedCandidate& c : report->failing) {
    EXPECT_GT(c.shortfall, 1) << c.failure;
    if (cheapest == nullptr || c.usd_per_hour < cheapest->usd_per_hour) cheapest = &c;
    if (nearest == nullptr || c.shortfall < nearest->shortfall) nearest = &c;
    if (c.failure.rfind("weights do not fit", 0) != 0) continue;
    if (nearest_weights == nullptr || c.shortfall < nearest_weights->shortfall) {
      nearest_weights = &c;
    }
  }
  ASSERT_NE(nearest_weights, nullptr);
  EXPECT_EQ(cheapest->result.settings.deployment.gpus, 1);
  EXPECT_EQ(nearest_weights->result.settings.deployment.gpus, 8);
  EXPECT_EQ(nearest_weights->result.settings.deployment.weight_variant, "fp8");
  EXPECT_LT(nearest_weights->shortfall, cheapest->shortfall);
  std::ostringstream text;
  PrintNeed(text, kKimi32KNeed, base, *report, 8);
  EXPECT_NE(text.str().find("weights do not fit (closest: 8 x h200-sxm tp 8, "), std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("fp8 weights: 123.4 GiB needed per GPU, 116.5 available"),
            std::string::npos)
      << text.str();
  // The nearest of all: 16 GPUs decode at 35.0 ms per token, 1.17 times the 30 allowed.
  EXPECT_EQ(nearest->result.settings.deployment.gpus, 16);
  EXPECT_NEAR(nearest->shortfall, 35.0 / 30, 0.01);
  EXPECT_NE(text.str().find("nearest miss: 16 x h200-sxm tp 8, fp8_e4m3 cache, int4 weights: "
                            "decode too slow: 35.0 ms per token, need at most 30; shortfall 1.17"),
            std::string::npos)
      << text.str();
  EXPECT_EQ(NeedJson(kKimi32KNeed, base, *report)["failing"][0].contains("shortfall"), true);
}

TEST(MaxGpusTest, DefaultsTo64AndRefusesOutsideOneTo1024OrBesideAGivenGpuCount) {
  const model::PlanSettings base;
  EXPECT_EQ(*MaxGpusFor(std::nullopt, base), kNeedMaxGpusDefault);
  EXPECT_EQ(*MaxGpusFor(std::string("1"), base), 1);
  EXPECT_EQ(*MaxGpusFor(std::string("1024"), base), 1024);
  for (const char* bad : {"0", "1025", "", "-8", "abc", "16.5", "1e2", " 16"}) {
    const Result<int> r = MaxGpusFor(std::string(bad), base);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(ExitCodeFor(r.status()), 2);
    EXPECT_EQ(r.status().message(), std::string("--max-gpus '") + bad +
                                        "' is not allowed; allowed: an integer 1 to 1024");
  }
  model::PlanSettings given = base;
  ASSERT_TRUE(model::SetPlanField(given, "gpus", "8").ok());
  const Result<int> beside = MaxGpusFor(std::string("32"), given);
  ASSERT_FALSE(beside.ok());
  EXPECT_EQ(ExitCodeFor(beside.status()), 2);
  EXPECT_NE(beside.status().message().find("gpus 8 is given, so it has no effect"),
            std::string::npos)
      << beside.status().message();
  EXPECT_EQ(*MaxGpusFor(std::nullopt, given), kNeedMaxGpusDefault);
}

// A given tp above the limit leaves no GPU count to search: refused, not an empty answer.
TEST(MaxGpusTest, AGivenTpAboveTheLimitIsRefused) {
  model::PlanSettings base;
  ASSERT_TRUE(model::SetPlanField(base, "tp", "8").ok());
  const Result<NeedReport> report =
      SolveNeed(model::ShippedCatalog(), model::ShippedParams(), base, kKimi32KNeed, 4);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(ExitCodeFor(report.status()), 2);
  EXPECT_NE(report.status().message().find("--max-gpus 4 is below tp 8"), std::string::npos)
      << report.status().message();
}

}  // namespace
}  // namespace kvsim::cli
