// Scenario YAML: fields and defaults; a bad file is refused with its file, line, column and field
// and what is allowed.
#include "sim/scenario/scenario.h"

#include <gtest/gtest.h>

#include <string>

namespace kvsim::sim {
namespace {

constexpr const char* kMinimal = R"(name: tiny
deployment:
  model: llama-3.1-70b
  gpu: h200-sxm
  gpus: 2
  tp: 2
  page_size: 16
pool:
  pages: 32
workload:
  loop: closed
  clients: 2
  requests: 4
  prompt_tokens: {dist: fixed, value: 20}
  output_tokens: {dist: fixed, value: 3}
)";

std::string ErrorOf(const std::string& text) {
  const Result<Scenario> parsed = ParseScenario(text, "s.yaml");
  return parsed.ok() ? std::string("ok") : parsed.status().message();
}

TEST(ScenarioTest, DefaultsAndFields) {
  const Scenario s = ParseScenario(kMinimal, "s.yaml").value();
  EXPECT_EQ(s.name, "tiny");
  EXPECT_EQ(s.mode, RunMode::kTiming);
  EXPECT_EQ(s.pool_pages, 32);
  EXPECT_EQ(s.server.workload.clients, 2);
  EXPECT_EQ(s.server.workload.prompt_tokens.value, 20);
  EXPECT_FALSE(s.server.tag_tracker);
  EXPECT_EQ(s.server.scheduler.reservation, Reservation::kFull);
  EXPECT_EQ(s.kernel.path, KernelPath::kSimple);
  EXPECT_EQ(ParseScenario(std::string(kMinimal) + "kernel:\n  path: fast\n", "s.yaml")
                .value()
                .kernel.path,
            KernelPath::kFast);
}

TEST(ScenarioTest, ErrorsNameTheFileLineFieldAndWhatIsAllowed) {
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "bogus: 1\n"),
            "s.yaml:16:1: field 'bogus': unknown field; allowed here: name, description, seed, "
            "mode, deployment, calibration, pool, scheduler, workload, integrity, kernel, faults, "
            "disaggregation, kv_store, limits, figures");
  std::string text = kMinimal;
  text.replace(text.find("loop: closed"), 12, "loop: sideways");
  EXPECT_EQ(
      ErrorOf(text),
      "s.yaml:11:9: field 'workload.loop': 'sideways' is not allowed; one of: closed, open, trace");
  text = kMinimal;
  text.replace(text.find("{dist: fixed, value: 20}"), 24, "{dist: fixed, value: 0}");
  EXPECT_NE(ErrorOf(text).find("field 'workload.prompt_tokens.value'"), std::string::npos)
      << ErrorOf(text);
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "integrity:\n  tracker: tag\n  tag_bits: 3\n")
                .find("field 'integrity.tag_bits'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "faults:\n  nope: 0.5\n").find("unknown fault site"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf(std::string(kMinimal) + "kernel:\n  head_dim: 96\n").find("field 'kernel.head_dim'"),
      std::string::npos);
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "kernel:\n  shape: model\n  q_heads: 4\n"),
            "s.yaml:18:12: field 'kernel.q_heads': shape: model takes it from the deployment; "
            "leave it out");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "kernel:\n  path: turbo\n"),
            "s.yaml:17:9: field 'kernel.path': 'turbo' is not allowed; one of: simple, fast");
  text = kMinimal;
  text.replace(text.find("loop: closed"), 12, "loop: open\n  arrival: {process: poisson, rate: 2}");
  EXPECT_NE(ErrorOf(text).find("field 'workload.clients': only a closed loop"), std::string::npos)
      << ErrorOf(text);
  EXPECT_NE(ErrorOf("name: x\n").find("field 'deployment'"), std::string::npos);
  EXPECT_NE(ErrorOf("[1, 2]").find("s.yaml: the file must be a YAML mapping"), std::string::npos);
  EXPECT_NE(ErrorOf("name: [unclosed").find("YAML syntax error"), std::string::npos);
}

// A stated figure written as the comment writes it is the run's value rounded: the tolerance is
// half a unit in its last digit. An "about" figure carries its own.
TEST(ScenarioTest, StatedFiguresKeepTheirDigitsAndRefuseWhatIsNotAFigure) {
  const Scenario s = ParseScenario(std::string(kMinimal) +
                                       "figures:\n  ttft_p50_s: 31.2\n  requests: 6000\n"
                                       "  plan_kv_tokens: {about: 5700000, within: 50000}\n",
                                   "s.yaml")
                         .value();
  ASSERT_EQ(s.figures.size(), 3u);
  EXPECT_EQ(s.figures[0].name, "ttft_p50_s");
  EXPECT_EQ(s.figures[0].text, "31.2");
  EXPECT_DOUBLE_EQ(s.figures[0].value, 31.2);
  EXPECT_DOUBLE_EQ(s.figures[0].within, 0.05);
  EXPECT_DOUBLE_EQ(s.figures[1].within, 0.5);
  EXPECT_EQ(s.figures[2].text, "about 5700000");
  EXPECT_DOUBLE_EQ(s.figures[2].within, 50000);
  EXPECT_DOUBLE_EQ(RoundingHalfUnit("0.0125"), 0.00005);

  EXPECT_NE(
      ErrorOf(std::string(kMinimal) + "figures:\n  ttft_median: 3\n")
          .find("s.yaml:17:3: field 'figures.ttft_median': unknown figure; allowed: requests"),
      std::string::npos)
      << ErrorOf(std::string(kMinimal) + "figures:\n  ttft_median: 3\n");
  for (const char* bad : {"3.1e1", "31,2", "~", "31.", "abc", "--3"}) {
    SCOPED_TRACE(bad);
    EXPECT_NE(ErrorOf(std::string(kMinimal) + "figures:\n  ttft_p50_s: " + bad + "\n")
                  .find("field 'figures.ttft_p50_s': "),
              std::string::npos)
        << ErrorOf(std::string(kMinimal) + "figures:\n  ttft_p50_s: " + bad + "\n");
  }
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "figures:\n  ttft_p50_s: {about: 3}\n")
                .find("field 'figures.ttft_p50_s.within'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "figures:\n  ttft_p50_s: {about: 3, within: -1}\n")
                .find("field 'figures.ttft_p50_s.within'"),
            std::string::npos);
}

}  // namespace
}  // namespace kvsim::sim
