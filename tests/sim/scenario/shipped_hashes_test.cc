// Every shipped scenario, run as `kvsim run NAME` runs it (its own seed and mode), ends in the
// state hash recorded here. The hash mixes every step's rows, page grants and request ends, so a
// change to any scheduling rule that a scenario without `engine:` uses changes it: the rules a
// scenario does not ask for stay bit for bit as they were. A deliberate change of today's rules
// updates this table in the same commit and says why.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "kernels/backend.h"
#include "model/catalog.h"
#include "sim/scenario/run_scenario.h"

namespace kvsim::sim {
namespace {

// `kvsim run NAME --json out.json`, field state_hash.
const std::map<std::string, uint64_t>& RecordedHashes() {
  static const std::map<std::string, uint64_t> hashes = {
      {"azure-conv", 0xcdea677db7904920},
      {"campaign-pd", 0xa5f459f1dc154af2},
      {"campaign-unified", 0xe53486300a9324b7},
      {"cancel-and-retry", 0x7e7f3d21097f59db},
      {"kimi-decode-bf16", 0xa441228e3fdb6f7e},
      {"kimi-decode-fp8", 0x0034cbc7344ba96d},
      {"mooncake-conversation", 0xf016d19af1539ca7},
      {"page-reuse-storm-bugs-unchecked", 0xb5a6a1765a8616ef},
      {"page-reuse-storm-bugs", 0x2a933ef3dbc44a81},
      {"page-reuse-storm", 0x3777b88aa0ff1099},
      {"pd-aborts-in-transfer", 0xff1d444ec8dfbf48},
      {"vidur-azure-conv", 0x912259e09bfb3d47},
  };
  return hashes;
}

TEST(ShippedHashesTest, EveryShippedScenarioEndsInItsRecordedStateHash) {
  const model::Catalog catalog = model::Catalog::Open("configs").value();
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator("configs/scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    const std::string name = entry.path().stem().string();
    SCOPED_TRACE(name);
    const auto recorded = RecordedHashes().find(name);
    ASSERT_NE(recorded, RecordedHashes().end()) << "a shipped scenario with no recorded hash";
    ++seen;
    const Result<Scenario> scenario = LoadScenario(entry.path().string());
    ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
    const Result<PreparedScenario> prepared = PrepareScenario(*scenario, catalog);
    ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
    std::unique_ptr<Backend> backend = CreateCpuBackend();
    RunOptions options;
    options.seed = scenario->seed;
    options.mode = scenario->mode;
    const Result<RunReport> report = RunPrepared(*scenario, *prepared, options, *backend);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_EQ(report->state_hash, recorded->second)
        << "replay: kvsim run " << name << " --json out.json";
  }
  EXPECT_EQ(seen, static_cast<int>(RecordedHashes().size()));
}

}  // namespace
}  // namespace kvsim::sim
