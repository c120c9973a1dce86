// Every shipped scenario (configs/scenarios/*.yaml) parses, is named after its file, and prepares
// against the shipped configs: its deployment plans, its pool fits, and a trace it replays reads
// and holds the requests it asks for.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "model/catalog.h"
#include "sim/scenario/run_scenario.h"

namespace kvsim::sim {
namespace {

TEST(ScenarioFilesTest, EveryShippedScenarioParsesAndPrepares) {
  const Result<model::Catalog> catalog = model::Catalog::Open("configs");
  ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator("configs/scenarios")) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 6u);
  int traces = 0;
  for (const std::filesystem::path& file : files) {
    SCOPED_TRACE(file.string());
    const Result<Scenario> scenario = LoadScenario(file.string());
    ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
    EXPECT_EQ(scenario->name, file.stem().string());
    EXPECT_FALSE(scenario->description.empty());
    const Result<PreparedScenario> prepared = PrepareScenario(*scenario, *catalog);
    ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
    const WorkloadSpec& workload = prepared->server.workload;
    if (workload.loop != LoopKind::kTrace) continue;
    ++traces;
    ASSERT_NE(workload.trace.requests, nullptr);
    EXPECT_GT(workload.trace.requests->size(), 0u);
  }
  EXPECT_EQ(traces, 3);
}

}  // namespace
}  // namespace kvsim::sim
