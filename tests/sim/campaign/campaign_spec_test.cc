// Campaign specs: arms and modes parse (and name what is allowed when they do not), cases map to
// arms and seeds, shards split the cases, and the batch systems' environment variables give the
// shard.
#include "sim/campaign/campaign_spec.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

namespace kvsim::sim {
namespace {

CampaignSpec Spec(int64_t cases) {
  CampaignSpec spec;
  spec.seed = 5;
  spec.cases = cases;
  spec.bases = {"campaign-unified"};
  spec.arms = AllArms();
  spec.modes = {TrackerMode::kOff, TrackerMode::kTags, TrackerMode::kSeal};
  return spec;
}

TEST(CampaignSpecTest, ArmsParseAndNameWhatIsAllowed) {
  EXPECT_EQ(ParseArms("all")->size(), static_cast<size_t>(kFaultSites) + 3);
  const std::vector<Arm> arms = ParseArms("clean,double_free,swarm").value();
  ASSERT_EQ(arms.size(), 3u);
  EXPECT_EQ(arms[1].kind, Arm::Kind::kSingle);
  EXPECT_EQ(arms[1].site, FaultSite::kDoubleFree);
  EXPECT_EQ(ArmsText(arms), "clean,double_free,swarm");
  const Status unknown = ParseArms("clean,dubble_free").status();
  EXPECT_NE(unknown.message().find("unknown arm 'dubble_free'; allowed: all, or a list of clean,"),
            std::string::npos)
      << unknown.message();
  EXPECT_NE(ParseArms("swarm,swarm").status().message().find("listed twice"), std::string::npos);
  EXPECT_FALSE(ParseArms("").ok());
  EXPECT_EQ(ParseTrackerMode("seal").value(), TrackerMode::kSeal);
  EXPECT_EQ(ParseTrackerMode("on").status().message(),
            "unknown tracker mode 'on'; allowed: off, tags, seal");
}

TEST(CampaignSpecTest, CasesCycleThroughTheArmsWithSeedsOfTheirOwn) {
  const CampaignSpec spec = Spec(100);
  const size_t arms = spec.arms.size();
  EXPECT_EQ(spec.ArmOf(0).kind, Arm::Kind::kClean);
  EXPECT_EQ(spec.ArmOf(static_cast<int64_t>(arms)).kind, Arm::Kind::kClean);
  EXPECT_EQ(spec.ArmOf(static_cast<int64_t>(arms) - 1).kind, Arm::Kind::kNarrowTags);
  std::set<uint64_t> seeds;
  for (int64_t k = 0; k < spec.cases; ++k) seeds.insert(spec.CaseSeed(k));
  EXPECT_EQ(seeds.size(), 100u);
  CampaignSpec other = spec;
  other.seed = 6;
  EXPECT_NE(other.CaseSeed(3), spec.CaseSeed(3));
}

TEST(CampaignSpecTest, TheKernelSampleTakesTheBasesPathOneForAllOrOneDrawnPerCase) {
  CampaignSpec spec = Spec(400);
  EXPECT_EQ(spec.kernel_path, KernelPathDraw::kBase);
  EXPECT_EQ(spec.KernelPathOf(3, KernelPath::kFast), KernelPath::kFast);
  EXPECT_EQ(spec.KernelPathOf(3, KernelPath::kSimple), KernelPath::kSimple);
  spec.kernel_path = ParseKernelPathDraw("fast").value();
  EXPECT_EQ(spec.KernelPathOf(3, KernelPath::kSimple), KernelPath::kFast);
  spec.kernel_path = ParseKernelPathDraw("simple").value();
  EXPECT_EQ(spec.KernelPathOf(3, KernelPath::kFast), KernelPath::kSimple);
  CampaignSpec drawn = Spec(400);
  drawn.kernel_path = ParseKernelPathDraw("drawn").value();
  EXPECT_FALSE(drawn.SameCampaign(spec));
  int fast = 0;
  for (int64_t k = 0; k < drawn.cases; ++k) {
    const KernelPath path = drawn.KernelPathOf(k, KernelPath::kSimple);
    EXPECT_EQ(path, drawn.KernelPathOf(k, KernelPath::kFast)) << "case " << k;
    fast += path == KernelPath::kFast ? 1 : 0;
  }
  // Half and half, within 5 standard deviations (10) of 200.
  EXPECT_GT(fast, 150);
  EXPECT_LT(fast, 250);
  for (KernelPathDraw draw : {KernelPathDraw::kBase, KernelPathDraw::kSimple, KernelPathDraw::kFast,
                              KernelPathDraw::kDrawn}) {
    EXPECT_EQ(ParseKernelPathDraw(KernelPathDrawName(draw)).value(), draw);
  }
  EXPECT_EQ(ParseKernelPathDraw("tensor").status().message(),
            "kernel path 'tensor' is not allowed; allowed: base (each base scenario's "
            "kernel.path), simple, fast, drawn (each case's from its seed)");
}

TEST(CampaignSpecTest, ShardsSplitTheCasesAndValidate) {
  CampaignSpec spec = Spec(10);
  int32_t index = -1;
  int32_t count = -1;
  ASSERT_TRUE(ParseShard("2/3", index, count).ok());
  EXPECT_EQ(index, 2);
  EXPECT_EQ(count, 3);
  for (const char* bad : {"3/3", "-1/3", "1", "a/b", "1/0", "0/2000000"}) {
    EXPECT_FALSE(ParseShard(bad, index, count).ok()) << bad;
  }
  spec.shard_index = 1;
  spec.shard_count = 3;
  // Shards take whole rounds of arms: shard 1 of 3 runs round 1, cases [arms, 2 arms), and every
  // arm once in it, whatever the number of arms.
  const int64_t arms = static_cast<int64_t>(spec.arms.size());
  EXPECT_FALSE(spec.InShard(0));
  EXPECT_TRUE(spec.InShard(arms));
  EXPECT_TRUE(spec.InShard(2 * arms - 1));
  EXPECT_FALSE(spec.InShard(2 * arms));
  EXPECT_TRUE(spec.InShard(4 * arms + 1));
  spec.shard_index = 0;
  spec.shard_count = 2;
  std::set<size_t> arms_seen;
  for (int64_t k = 0; k < 4 * arms; ++k) {
    if (spec.InShard(k)) arms_seen.insert(static_cast<size_t>(k % arms));
  }
  EXPECT_EQ(arms_seen.size(), spec.arms.size());
  spec.shard_index = 1;
  spec.shard_count = 3;
  EXPECT_TRUE(ValidateCampaignSpec(spec).ok());
  spec.kernel_cases = 11;
  EXPECT_NE(ValidateCampaignSpec(spec).message().find("kernel cases 11 is out of range"),
            std::string::npos);
  spec.kernel_cases = 0;
  spec.modes = {TrackerMode::kTags, TrackerMode::kTags};
  EXPECT_NE(ValidateCampaignSpec(spec).message().find("listed twice"), std::string::npos);
  spec.modes = {};
  EXPECT_FALSE(ValidateCampaignSpec(spec).ok());
  CampaignSpec same = Spec(10);
  same.shard_index = 2;
  same.shard_count = 3;
  EXPECT_TRUE(same.SameCampaign(Spec(10)));
  EXPECT_FALSE(Spec(11).SameCampaign(Spec(10)));
}

// Clears every variable ShardFromEnvironment reads.
void ClearShardEnvironment() {
  for (const char* name :
       {"TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_TASK_COUNT", "JOB_COMPLETION_INDEX", "KVSIM_SHARDS"}) {
    unsetenv(name);
  }
}

TEST(CampaignSpecTest, TheShardComesFromBazelSlurmOrKubernetes) {
  ClearShardEnvironment();
  int32_t index = -1;
  int32_t count = -1;
  std::string source;
  EXPECT_EQ(ShardFromEnvironment(index, count, source).code(), StatusCode::kNotFound);

  setenv("TEST_SHARD_INDEX", "1", 1);
  setenv("TEST_TOTAL_SHARDS", "4", 1);
  ASSERT_TRUE(ShardFromEnvironment(index, count, source).ok());
  EXPECT_EQ(index, 1);
  EXPECT_EQ(count, 4);
  EXPECT_EQ(source, "Bazel test sharding");
  ClearShardEnvironment();

  // A Slurm array --array=1-8 numbers its tasks from 1.
  setenv("SLURM_ARRAY_TASK_ID", "8", 1);
  setenv("SLURM_ARRAY_TASK_MIN", "1", 1);
  setenv("SLURM_ARRAY_TASK_COUNT", "8", 1);
  ASSERT_TRUE(ShardFromEnvironment(index, count, source).ok());
  EXPECT_EQ(index, 7);
  EXPECT_EQ(count, 8);
  EXPECT_EQ(source, "Slurm job array");
  ClearShardEnvironment();

  setenv("JOB_COMPLETION_INDEX", "3", 1);
  const Status missing = ShardFromEnvironment(index, count, source);
  EXPECT_NE(missing.message().find("KVSIM_SHARDS is not"), std::string::npos) << missing.message();
  setenv("KVSIM_SHARDS", "5", 1);
  ASSERT_TRUE(ShardFromEnvironment(index, count, source).ok());
  EXPECT_EQ(index, 3);
  EXPECT_EQ(count, 5);
  setenv("JOB_COMPLETION_INDEX", "5", 1);
  EXPECT_FALSE(ShardFromEnvironment(index, count, source).ok());
  ClearShardEnvironment();
}

}  // namespace
}  // namespace kvsim::sim
