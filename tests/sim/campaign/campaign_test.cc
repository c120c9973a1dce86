// The in-suite fault-injection campaign: every arm of the catalogue, each case with no check, with
// the tag check and with the tag check and the seal, and a kernel-mode sample whose outputs are
// checked against the reference. Any surprise fails the test and prints its replay command. Bazel
// shards it (shard_count in the BUILD file): each shard runs the campaign's cases its
// TEST_SHARD_INDEX names and touches TEST_SHARD_STATUS_FILE, as the sharding protocol asks. main()
// takes the shard before GoogleTest sees the variables (it would shard its test cases by them,
// leaving one shard with nothing to run).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "runner/campaign_runner.h"
#include "tests/sim/campaign/campaign_fixtures.h"

namespace kvsim::sim {
namespace {

// The shard from the environment, taken in main().
int32_t g_shard_index = 0;
int32_t g_shard_count = 1;

TEST(CampaignTest, NoSurprisesAcrossTheCatalogue) {
  CampaignSpec spec = CampaignOverBases(0x7e57, 12000);
  spec.kernel_cases = 150;
  spec.shard_index = g_shard_index;
  spec.shard_count = g_shard_count;
  const std::vector<Scenario> bases = CampaignBases();
  CampaignOptions options;
  options.configs_root = "configs";
  options.jobs = 1;
  options.command =
      "kvsim campaign --seed 0x7e57 --cases 12000 --bases campaign-unified,"
      "campaign-pd --arms all --modes off,tags,seal --kernel-cases 150";
  const Result<CampaignResults> results = RunCampaign(spec, bases, options);
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  for (const Surprise& s : results->surprises) {
    ADD_FAILURE() << "case " << s.case_index << " (" << s.row << ", " << TrackerModeName(s.mode)
                  << ", " << RunModeName(s.run_mode) << " mode): " << SurpriseKindName(s.kind)
                  << ": " << s.detail << "\n  replay: " << s.replay;
  }
  // The campaign measured something: with no check, the bugs that fired corrupted silently; with
  // the tags they were caught; every site that can fire in timing mode fired.
  // Narrow tags let stale accesses through only where the escape condition predicts it.
  int64_t off_silent = 0;
  int64_t caught = 0;
  for (const auto& [key, tally] : results->tallies) {
    if (std::get<1>(key) == TrackerMode::kOff) off_silent += tally.silent_runs;
    caught += tally.caught_tag + tally.caught_seal;
    EXPECT_EQ(tally.escapes_unpredicted, 0) << std::get<0>(key);
  }
  EXPECT_GT(off_silent, 100);
  EXPECT_GT(caught, 1000);
  for (int site = 0; site < kFaultSites; ++site) {
    EXPECT_GT(results->site_runs[static_cast<size_t>(site)], 0)
        << FaultSiteName(static_cast<FaultSite>(site)) << " never fired";
  }
  std::cout << ResultsToJson(*results).substr(0, 2000) << "\n";
}

}  // namespace
}  // namespace kvsim::sim

int main(int argc, char** argv) {
  std::string source;
  const kvsim::Status sharded = kvsim::sim::ShardFromEnvironment(kvsim::sim::g_shard_index,
                                                                 kvsim::sim::g_shard_count, source);
  if (!sharded.ok() && sharded.code() != kvsim::StatusCode::kNotFound) {
    std::cerr << sharded.ToString() << "\n";
    return 2;
  }
  if (sharded.ok()) {
    std::cout << "campaign shard " << kvsim::sim::g_shard_index << " of "
              << kvsim::sim::g_shard_count << " (" << source << ")\n";
    unsetenv("TEST_SHARD_INDEX");
    unsetenv("TEST_TOTAL_SHARDS");
    unsetenv("GTEST_SHARD_INDEX");
    unsetenv("GTEST_TOTAL_SHARDS");
  }
  if (const char* status_file = std::getenv("TEST_SHARD_STATUS_FILE")) {
    std::ofstream(status_file).flush();
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
