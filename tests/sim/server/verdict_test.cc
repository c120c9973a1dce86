// The verdict machinery against planted weaknesses: a launched table changed after the check is
// flagged by the oracle; books that agree with the tags blind the check but not the oracle, whose
// verdicts stay what they are with no check at all; every refusal is judged, and a check that
// refuses right accesses no bug touched shows as over-refusals; a copy out to the KV store is
// checked when it completes, where a check at its start would miss the pages freed under it.
#include <gtest/gtest.h>

#include "sim/oracle/ownership_oracle.h"
#include "sim/scenario/scenario.h"
#include "tests/sim/server/simulate.h"

namespace kvsim::sim {
namespace {

// The storm scenario with the oracle on, the tag check as `tags` says, `faults` planted and
// `weakness` in the checks.
Scenario Storm(bool tags, const FaultMix& faults, Weakness weakness) {
  Scenario scenario = LoadScenario("configs/scenarios/page-reuse-storm.yaml").value();
  scenario.oracle = true;
  scenario.server.tag_tracker = tags;
  scenario.server.check_writes = true;
  scenario.server.faults = faults;
  scenario.server.weakness = weakness;
  return scenario;
}

FaultMix Plant(FaultSite site, int64_t ppm) {
  FaultMix mix;
  mix.ppm[static_cast<size_t>(site)] = ppm;
  return mix;
}

TEST(VerdictTest, ATableChangedAfterTheCheckIsWhatTheOracleJudges) {
  const RunReport sound = Simulate(Storm(true, {}, Weakness::kNone));
  EXPECT_EQ(sound.integrity.caught, 0);
  EXPECT_EQ(WrongAccesses(sound.integrity.writes) + WrongAccesses(sound.integrity.reads), 0);
  // No bug, a check that passed every row, and yet the kernels launch with a table mapping one
  // row's last page elsewhere: the oracle judges what was launched, not what was checked.
  const RunReport changed = Simulate(Storm(true, {}, Weakness::kTableAfterCheck));
  EXPECT_EQ(changed.integrity.caught, 0);
  EXPECT_GT(changed.integrity.writes[static_cast<size_t>(AccessVerdict::kWrongPage)], 0);
  EXPECT_GT(changed.findings_by_kind[static_cast<size_t>(Finding::Kind::kSilentWrite)], 0);
}

TEST(VerdictTest, BooksThatAgreeWithTheTagsBlindTheCheckButNotTheOracle) {
  for (FaultSite site : {FaultSite::kDuplicateNotRewritten, FaultSite::kDoubleFree,
                         FaultSite::kAsyncFreeBeforeWrite}) {
    const FaultMix faults = Plant(site, 500'000);
    const RunReport unchecked = Simulate(Storm(false, faults, Weakness::kNone));
    const RunReport checked = Simulate(Storm(true, faults, Weakness::kNone));
    const RunReport lying = Simulate(Storm(true, faults, Weakness::kBooksFollowTags));
    ASSERT_GT(unchecked.faults[static_cast<size_t>(site)].fired, 0) << FaultSiteName(site);
    // The honest books let the check catch the bug; books rewritten to the current tags leave it
    // nothing to catch, so the run goes as it goes with no check at all.
    EXPECT_GT(checked.integrity.caught, 0) << FaultSiteName(site);
    EXPECT_EQ(lying.integrity.caught, 0) << FaultSiteName(site);
    // The oracle never read the books: its verdicts are those of the unchecked run, where the
    // stale pages are read as wrong pages (a zombie's, which only writes, written as such).
    const std::array<int64_t, kAccessVerdicts>& stale = site == FaultSite::kAsyncFreeBeforeWrite
                                                            ? unchecked.integrity.writes
                                                            : unchecked.integrity.reads;
    EXPECT_GT(stale[static_cast<size_t>(AccessVerdict::kWrongPage)], 0) << FaultSiteName(site);
    EXPECT_EQ(lying.integrity.writes, unchecked.integrity.writes) << FaultSiteName(site);
    EXPECT_EQ(lying.integrity.reads, unchecked.integrity.reads) << FaultSiteName(site);
    EXPECT_EQ(lying.findings_total, unchecked.findings_total) << FaultSiteName(site);
  }
}

TEST(VerdictTest, EveryRefusalIsJudged) {
  const FaultMix faults = Plant(FaultSite::kDuplicateNotRewritten, 1'000'000);
  // The check as built: every refusal is of an access the oracle finds wrong, or of one a fired
  // bug touched.
  const RunReport sound = Simulate(Storm(true, faults, Weakness::kNone));
  EXPECT_GT(sound.integrity.caught, 0);
  EXPECT_EQ(sound.integrity.over_refusals, 0);
  EXPECT_EQ(sound.findings_by_kind[static_cast<size_t>(Finding::Kind::kFalseAlarm)], 0);
  // A check that refuses every row once the bug fired refuses right accesses no bug touched.
  const RunReport eager = Simulate(Storm(true, faults, Weakness::kRefuseAfterFault));
  EXPECT_GT(eager.integrity.over_refusals, 0);
  EXPECT_GT(eager.findings_by_kind[static_cast<size_t>(Finding::Kind::kOverRefusal)], 0);
  // With no bug planted, the same weakness never acts (no bug fired).
  const RunReport clean = Simulate(Storm(true, {}, Weakness::kRefuseAfterFault));
  EXPECT_EQ(clean.integrity.caught, 0);
  EXPECT_EQ(clean.findings_total, 0);
}

// The copy out to the KV store. Done right, it holds the pages until it has read them: every
// finished request is copied, nothing is refused, nothing read wrong. With the pages freed when the
// copy starts, the copy reads other requests' pages when it completes: silent with no check, and
// refused by the check at its completion; a check at its start alone passes every copy.
TEST(VerdictTest, TheCopyToTheStoreIsCheckedWhenItCompletes) {
  const auto stored = [](bool tags, const FaultMix& faults, Weakness weakness) {
    Scenario scenario = Storm(tags, faults, weakness);
    scenario.server.kv_store = KvStoreSpec{0.05, 20'000};
    return Simulate(scenario);
  };
  const RunReport right = stored(true, {}, Weakness::kNone);
  EXPECT_GT(right.finished, 10);
  EXPECT_EQ(right.stores, right.finished);
  EXPECT_EQ(right.stores_refused, 0);
  EXPECT_EQ(right.findings_total, 0);
  EXPECT_EQ(WrongAccesses(right.integrity.reads), 0);
  // Holding the pages for the copies delays admissions, not outcomes: as many finished.
  const RunReport without = Simulate(Storm(true, {}, Weakness::kNone));
  EXPECT_EQ(without.finished, right.finished);

  const FaultMix freed = Plant(FaultSite::kStoreReadsFreedPages, 1'000'000);
  const RunReport unchecked = stored(false, freed, Weakness::kNone);
  EXPECT_GT(unchecked.faults[static_cast<size_t>(FaultSite::kStoreReadsFreedPages)].fired, 0);
  EXPECT_GT(unchecked.integrity.reads[static_cast<size_t>(AccessVerdict::kWrongPage)], 0);
  const RunReport checked = stored(true, freed, Weakness::kNone);
  EXPECT_GT(checked.stores_refused, 0);
  EXPECT_EQ(WrongAccesses(checked.integrity.reads), 0);
  EXPECT_EQ(checked.integrity.over_refusals, 0);
  // Checked at the start only: every copy passes there, and the reads at completion run wrong.
  const RunReport at_start = stored(true, freed, Weakness::kStoreCheckedAtStart);
  EXPECT_EQ(at_start.stores_refused, 0);
  EXPECT_GT(at_start.integrity.reads[static_cast<size_t>(AccessVerdict::kWrongPage)], 0);
}

}  // namespace
}  // namespace kvsim::sim
