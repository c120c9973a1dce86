// Running a campaign: shards merged give exactly the campaign run whole (in any number of worker
// processes), reports round-trip through JSON, and merging refuses shards of another campaign or
// a shard given twice.
#include "runner/campaign_runner.h"

#include <gtest/gtest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "kernels/backend_factory.h"
#include "sim/campaign/case_runner.h"
#include "sim/report/provenance.h"
#include "tests/sim/campaign/campaign_fixtures.h"

namespace kvsim::sim {
namespace {

CampaignSpec Spec() {
  CampaignSpec spec = CampaignOverBases(0xfeed, 90);
  spec.kernel_cases = 6;
  return spec;
}

CampaignResults RunShard(CampaignSpec spec, int32_t jobs) {
  CampaignOptions options;
  options.configs_root = "configs";
  options.jobs = jobs;
  Result<CampaignResults> results = RunCampaign(spec, CampaignBases(), options);
  EXPECT_TRUE(results.ok()) << results.status().ToString();
  return results.ok() ? *results : CampaignResults{};
}

// The report without its wall time, which two runs need not share.
std::string Comparable(CampaignResults results) {
  results.wall_s = 0;
  return ResultsToJson(results);
}

// Class 14: with tags of 2 to 8 bits some stale accesses pass the check, and every one of them is
// where docs/integrity.md's escape condition allows (the page reallocated a multiple of 2^w times
// since the grant with generation tags, at least twice with random ones); none is judged a
// surprise.
TEST(CampaignRunnerTest, NarrowTagsEscapeOnlyWhereTheEscapeConditionSays) {
  CampaignSpec spec = CampaignOverBases(0x5eed, 900);
  spec.arms = ParseArms("narrow_tags").value();
  const CampaignResults results = RunShard(spec, 2);
  int64_t predicted = 0;
  int64_t unpredicted = 0;
  for (const auto& [key, tally] : results.tallies) {
    predicted += tally.escapes_predicted;
    unpredicted += tally.escapes_unpredicted;
  }
  EXPECT_GT(predicted, 0);
  EXPECT_EQ(unpredicted, 0);
  EXPECT_EQ(results.total_surprises(), 0) << ResultsToJson(results);
}

// The negative control acts in kernel mode only, from a stream of its own: the other planted bugs
// fire alike in both modes, so a swarm case takes the same steps in kernel mode as in timing mode,
// on whichever kernel path the case drew (--kernel-path drawn: about half fast), with no surprise.
TEST(CampaignRunnerTest, SwarmCasesTakeTheSameStepsInKernelAndTimingMode) {
  CampaignSpec spec = CampaignOverBases(0x5eed, 24);
  spec.arms = ParseArms("swarm").value();
  spec.modes = {TrackerMode::kTags};
  spec.kernel_cases = 24;
  spec.kernel_path = KernelPathDraw::kDrawn;
  int fast = 0;
  for (int64_t k = 0; k < 24; ++k)
    fast += spec.KernelPathOf(k, KernelPath::kSimple) == KernelPath::kFast;
  EXPECT_GT(fast, 4);
  EXPECT_LT(fast, 20);
  // Each case is drawn with its path, so that its scenario file replays it on the same one.
  const CaseRunner runner =
      CaseRunner::Create(spec, CampaignBases(), "configs", BackendChoice::kCpu).value();
  for (int64_t k = 0; k < 24; ++k) {
    EXPECT_EQ(runner.Draw(k)->kernel.path, spec.KernelPathOf(k, KernelPath::kSimple)) << k;
  }
  const CampaignResults results = RunShard(spec, 2);
  EXPECT_EQ(results.total_surprises(), 0) << ResultsToJson(results);
  const Tally& timing = results.tallies.at({"swarm", TrackerMode::kTags, RunMode::kTiming});
  const Tally& kernel = results.tallies.at({"swarm", TrackerMode::kTags, RunMode::kKernel});
  EXPECT_EQ(timing.runs, 24);
  EXPECT_EQ(kernel.runs, 24);
  EXPECT_EQ(kernel.steps, timing.steps);
  // The control did fire in kernel mode: the equality is not for want of it.
  EXPECT_GT(results.site_runs[static_cast<size_t>(FaultSite::kBatchCompositionNoise)], 0);
}

TEST(CampaignRunnerTest, ShardsMergedEqualTheCampaignRunWhole) {
  const CampaignResults whole = RunShard(Spec(), 2);
  EXPECT_EQ(whole.cases, 90);
  EXPECT_EQ(whole.runs, 90 * 3 + 6 * 3);
  EXPECT_EQ(whole.surprises.size(), 0u) << ResultsToJson(whole);
  EXPECT_EQ(whole.total_surprises(), 0);
  // One worker or two: the same sums.
  EXPECT_EQ(Comparable(RunShard(Spec(), 1)), Comparable(whole));

  CampaignResults merged;
  int64_t shard_cases = 0;
  for (int32_t shard : {2, 0, 1}) {
    CampaignSpec spec = Spec();
    spec.shard_index = shard;
    spec.shard_count = 3;
    const CampaignResults part = RunShard(spec, 1);
    // Whole rounds of arms: 90 cases of 16 arms are rounds of 16, the last of 10.
    EXPECT_EQ(part.cases, static_cast<int64_t>(ShardCases(spec).size()));
    EXPECT_EQ(part.cases % static_cast<int64_t>(spec.arms.size()), shard == 2 ? 10 : 0);
    shard_cases += part.cases;
    ASSERT_TRUE(MergeResults(part, merged).ok());
  }
  EXPECT_EQ(shard_cases, 90);
  EXPECT_EQ(merged.shards, (std::vector<int32_t>{0, 1, 2}));
  // The whole campaign, as one shard of one, against three shards of three.
  CampaignResults whole_as_merged = whole;
  whole_as_merged.spec.shard_count = 3;
  whole_as_merged.shards = {0, 1, 2};
  EXPECT_EQ(Comparable(merged), Comparable(whole_as_merged));

  // Every row a run counted in: the table is not empty of bugs that fired.
  int64_t fired = 0;
  for (const auto& [key, tally] : whole.tallies) fired += tally.fired_runs;
  EXPECT_GT(fired, 30);
}

// A small campaign in two shards, timing mode only: its shards are quick to run and to read.
CampaignSpec TwoShardSpec() {
  CampaignSpec spec = Spec();
  spec.cases = 12;
  spec.kernel_cases = 0;
  spec.shard_count = 2;
  return spec;
}

TEST(CampaignRunnerTest, ReportsRoundTripAndMergesRefuseOtherCampaigns) {
  CampaignSpec spec = TwoShardSpec();
  const CampaignResults first = RunShard(spec, 1);
  const Result<CampaignResults> read = ResultsFromJson(ResultsToJson(first), "first.json");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(ResultsToJson(*read), ResultsToJson(first));

  CampaignResults merged;
  ASSERT_TRUE(MergeResults(first, merged).ok());
  EXPECT_NE(MergeResults(first, merged).message().find("shard 0 of 2 is given twice"),
            std::string::npos);
  CampaignSpec other = spec;
  other.seed = 7;
  other.shard_index = 1;
  EXPECT_NE(MergeResults(RunShard(other, 1), merged).message().find("different campaigns"),
            std::string::npos);

  EXPECT_NE(ResultsFromJson("[1,", "y.json").status().message().find("y.json"), std::string::npos);
  // A report of another format version is refused, naming both versions.
  const std::string older = ResultsFromJson("{}", "x.json").status().message();
  EXPECT_NE(older.find("x.json: a campaign report of format version 1 (no 'kvsim_campaign' "
                       "field); this kvsim reads version " +
                       std::to_string(kCampaignFormatVersion)),
            std::string::npos)
      << older;
  std::string text = ResultsToJson(first);
  const std::string field = "\"kvsim_campaign\": " + std::to_string(kCampaignFormatVersion);
  ASSERT_NE(text.find(field), std::string::npos);
  text.replace(text.find(field), field.size(), "\"kvsim_campaign\": 99");
  const std::string newer = ResultsFromJson(text, "z.json").status().message();
  EXPECT_NE(newer.find("z.json: a campaign report of format version 99 ('kvsim_campaign'); this "
                       "kvsim reads version " +
                       std::to_string(kCampaignFormatVersion)),
            std::string::npos)
      << newer;
  EXPECT_NE(ResultsFromJson("{\"kvsim_campaign\": " + std::to_string(kCampaignFormatVersion) + "}",
                            "w.json")
                .status()
                .message()
                .find("w.json: field 'checksum': missing"),
            std::string::npos);
}

// `edit` applied to the JSON of `results`, with its checksum made to match again: what a reader's
// other checks must catch on their own.
std::string Edited(const CampaignResults& results,
                   const std::function<void(nlohmann::ordered_json&)>& edit) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(ResultsToJson(results));
  edit(j);
  j.erase("checksum");
  AddChecksum(j);
  return j.dump(2);
}

std::string ReadError(const std::string& text) {
  const Result<CampaignResults> read = ResultsFromJson(text, "s.json");
  EXPECT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kInvalidArgument);
  return read.ok() ? "" : read.status().message();
}

TEST(CampaignRunnerTest, ShardsSayWhereTheyCameFromAndMalformedOnesAreRefused) {
  CampaignSpec spec = TwoShardSpec();
  const CampaignResults shard = RunShard(spec, 1);
  const std::string text = ResultsToJson(shard);
  EXPECT_NE(text.find("\"kvsim_version\": \"" + std::string(kKvsimVersion) + "\""),
            std::string::npos);
  EXPECT_NE(text.find("\"bases_hash\": \"0x"), std::string::npos);
  // An edited count without its checksum redone: an accident the checksum catches.
  std::string edited = text;
  edited.replace(edited.find("\"runs\": "), 9, "\"runs\": 1");
  EXPECT_NE(ReadError(edited).find("s.json: field 'checksum'"), std::string::npos);
  // With the checksum redone, the contents are checked on their own.
  using J = nlohmann::ordered_json;
  EXPECT_NE(ReadError(Edited(shard,
                             [](J& j) {
                               j["shards"] = {0, 0};
                             }))
                .find("field 'shards': [0,0] is not a strictly ascending list"),
            std::string::npos);
  EXPECT_NE(
      ReadError(Edited(shard, [](J& j) { j["shards"] = {5}; })).find("field 'shards': [5] is not"),
      std::string::npos);
  EXPECT_NE(ReadError(Edited(shard, [](J& j) { j["shards"] = J::array(); }))
                .find("field 'shards': empty"),
            std::string::npos);
  EXPECT_NE(ReadError(Edited(shard, [](J& j) { j["runs"] = int64_t{1} << 62; }))
                .find("field 'runs = 4611686018427387904': a count is a whole number from 0 to"),
            std::string::npos);
  EXPECT_NE(ReadError(Edited(shard, [](J& j) { j["tallies"][0]["fired"] = -3; }))
                .find("field 'tallies[0].fired = -3'"),
            std::string::npos);
  EXPECT_NE(ReadError(Edited(shard, [](J& j) { j["cases_run"] = 5; }))
                .find("fields 'cases_run' and 'runs': 5 and"),
            std::string::npos);
  EXPECT_NE(ReadError(Edited(shard, [](J& j) { j["tallies"][0]["runs"] = 0; }))
                .find("field 'tallies': their runs add up to"),
            std::string::npos);
  // Another kvsim version is read, and said.
  std::string note;
  const Result<CampaignResults> older =
      ResultsFromJson(Edited(shard, [](J& j) { j["kvsim_version"] = "0.0.1"; }), "old.json", &note);
  ASSERT_TRUE(older.ok()) << older.status().ToString();
  EXPECT_EQ(note,
            "old.json was written by kvsim 0.0.1; this is kvsim " + std::string(kKvsimVersion));
  // Shards of different base contents under the same names do not merge.
  spec.shard_index = 1;
  CampaignResults other = RunShard(spec, 1);
  other.bases_hash ^= 1;
  CampaignResults merged;
  ASSERT_TRUE(MergeResults(shard, merged).ok());
  EXPECT_NE(MergeResults(other, merged).message().find("base scenarios of different contents"),
            std::string::npos);
}

}  // namespace
}  // namespace kvsim::sim
