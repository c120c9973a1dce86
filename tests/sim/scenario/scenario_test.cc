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
}

TEST(ScenarioTest, ErrorsNameTheFileLineFieldAndWhatIsAllowed) {
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "bogus: 1\n"),
            "s.yaml:16:1: field 'bogus': unknown field; allowed here: name, description, seed, "
            "mode, deployment, calibration, pool, scheduler, workload, integrity, kernel, faults, "
            "disaggregation, kv_store, limits");
  std::string text = kMinimal;
  text.replace(text.find("loop: closed"), 12, "loop: sideways");
  EXPECT_EQ(ErrorOf(text),
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
  text = kMinimal;
  text.replace(text.find("loop: closed"), 12, "loop: open\n  arrival: {process: poisson, rate: 2}");
  EXPECT_NE(ErrorOf(text).find("field 'workload.clients': only a closed loop"), std::string::npos)
      << ErrorOf(text);
  EXPECT_NE(ErrorOf("name: x\n").find("field 'deployment'"), std::string::npos);
  EXPECT_NE(ErrorOf("[1, 2]").find("s.yaml: the file must be a YAML mapping"), std::string::npos);
  EXPECT_NE(ErrorOf("name: [unclosed").find("YAML syntax error"), std::string::npos);
}

}  // namespace
}  // namespace kvsim::sim
