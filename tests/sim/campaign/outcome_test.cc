// The catalogue's verdict on a run: with the tags on, each class of access that ran wrong is
// excused only by a fired bug the layers that ran cannot catch; and what is always a surprise.
#include "sim/campaign/outcome.h"

#include <gtest/gtest.h>

namespace kvsim::sim {
namespace {

// A run in `mode` in which `site` fired, with `count` silent reads of verdict `verdict`.
CaseOutcome Fired(FaultSite site, TrackerMode mode, AccessVerdict verdict, int64_t count) {
  CaseOutcome o;
  o.fired[static_cast<size_t>(site)] = 2;
  o.mode = mode;
  o.read_verdicts[static_cast<size_t>(verdict)] = count;
  o.silent_reads = count;
  return o;
}

// The same run with `count` silent writes of `verdict` as well.
CaseOutcome AndWrites(CaseOutcome o, AccessVerdict verdict, int64_t count) {
  o.write_verdicts[static_cast<size_t>(verdict)] += count;
  o.silent_writes += count;
  return o;
}

// With no check, an access that ran wrong is expected when a bug fired whose registry row says it
// may cause that class of wrong access, and a surprise otherwise: an S bug reads unwritten slots,
// it does not hand out another allocation's page.
TEST(OutcomeTest, WithNoCheckEachVerdictIsExpectedFromTheBugsThatMayCauseIt) {
  for (FaultSite site :
       {FaultSite::kDuplicateNotRewritten, FaultSite::kAsyncFreeBeforeWrite, FaultSite::kDoubleFree,
        FaultSite::kReadPastLength, FaultSite::kPrefixHashCollision}) {
    for (AccessVerdict verdict : {AccessVerdict::kWrongPage, AccessVerdict::kUnwritten,
                                  AccessVerdict::kForeignWrite, AccessVerdict::kWrongContent}) {
      const bool may = (FaultRowOf(site).may_produce & (1 << static_cast<int>(verdict))) != 0;
      EXPECT_EQ(Judge(Fired(site, TrackerMode::kOff, verdict, 5), false),
                may ? SurpriseKind::kNone : SurpriseKind::kSilentCorruption)
          << FaultSiteName(site) << " " << AccessVerdictName(verdict);
    }
  }
  EXPECT_EQ(
      Judge(Fired(FaultSite::kReadPastLength, TrackerMode::kOff, AccessVerdict::kWrongPage, 1),
            false),
      SurpriseKind::kSilentCorruption);
  EXPECT_EQ(
      Judge(Fired(FaultSite::kPrefixHashCollision, TrackerMode::kOff, AccessVerdict::kUnwritten, 1),
            false),
      SurpriseKind::kSilentCorruption);
}

TEST(OutcomeTest, WithTheTagsEachVerdictIsExcusedOnlyByTheClassThatProducesIt) {
  // R, W and RW bugs are the tags' to catch: a wrong-page access or a foreign write that ran is a
  // surprise in either mode.
  for (FaultSite site : {FaultSite::kDuplicateNotRewritten, FaultSite::kAsyncFreeBeforeWrite,
                         FaultSite::kDoubleFree}) {
    for (TrackerMode mode : {TrackerMode::kTags, TrackerMode::kSeal}) {
      EXPECT_EQ(Judge(Fired(site, mode, AccessVerdict::kWrongPage, 5), false),
                SurpriseKind::kSilentCorruption);
      EXPECT_EQ(Judge(Fired(site, mode, AccessVerdict::kForeignWrite, 1), false),
                SurpriseKind::kSilentCorruption);
      EXPECT_EQ(
          Judge(AndWrites(Fired(site, mode, AccessVerdict::kOk, 0), AccessVerdict::kWrongPage, 1),
                false),
          SurpriseKind::kSilentCorruption);
    }
  }
  // S: unwritten slots get through the tags, not the seal.
  EXPECT_EQ(
      Judge(Fired(FaultSite::kReadPastLength, TrackerMode::kTags, AccessVerdict::kUnwritten, 5),
            false),
      SurpriseKind::kNone);
  EXPECT_EQ(
      Judge(Fired(FaultSite::kReadPastLength, TrackerMode::kSeal, AccessVerdict::kUnwritten, 5),
            false),
      SurpriseKind::kSilentCorruption);
  // N: wrong content gets through every ownership check.
  for (TrackerMode mode : {TrackerMode::kTags, TrackerMode::kSeal}) {
    EXPECT_EQ(
        Judge(Fired(FaultSite::kPrefixHashCollision, mode, AccessVerdict::kWrongContent, 5), false),
        SurpriseKind::kNone);
  }
  // An S or N bug excuses only its own verdict: not a wrong-page access beside it (what the old
  // rule let through: any silent run with an S or N bug fired passed).
  CaseOutcome beside =
      Fired(FaultSite::kDoubleFree, TrackerMode::kTags, AccessVerdict::kWrongPage, 1);
  beside.fired[static_cast<size_t>(FaultSite::kCommittedAheadOfWrites)] = 1;
  beside.fired[static_cast<size_t>(FaultSite::kPrefixHashCollision)] = 1;
  EXPECT_EQ(Judge(beside, false), SurpriseKind::kSilentCorruption);
  // Nor the other's verdict.
  EXPECT_EQ(
      Judge(Fired(FaultSite::kReadPastLength, TrackerMode::kTags, AccessVerdict::kWrongContent, 1),
            false),
      SurpriseKind::kSilentCorruption);
  EXPECT_EQ(Judge(Fired(FaultSite::kPrefixHashCollision, TrackerMode::kTags,
                        AccessVerdict::kUnwritten, 1),
                  false),
            SurpriseKind::kSilentCorruption);
  // Both excused when both bugs fired.
  CaseOutcome both =
      Fired(FaultSite::kReadPastLength, TrackerMode::kTags, AccessVerdict::kUnwritten, 3);
  both = AndWrites(both, AccessVerdict::kOk, 0);
  both.read_verdicts[static_cast<size_t>(AccessVerdict::kWrongContent)] = 2;
  both.silent_reads += 2;
  both.fired[static_cast<size_t>(FaultSite::kPrefixHashCollision)] = 1;
  EXPECT_EQ(Judge(both, false), SurpriseKind::kNone);
}

TEST(OutcomeTest, NarrowTagsExcuseWrongPagesOnlyWhereTheEscapeConditionPredictsThem) {
  CaseOutcome wrapped =
      Fired(FaultSite::kDoubleFree, TrackerMode::kTags, AccessVerdict::kWrongPage, 5);
  wrapped.read_verdicts[static_cast<size_t>(AccessVerdict::kForeignWrite)] = 1;
  wrapped.escapes_predicted = 5;
  EXPECT_EQ(Judge(wrapped, true), SurpriseKind::kNone);
  // The same with 64-bit tags: no escape is predicted there.
  EXPECT_EQ(Judge(wrapped, false), SurpriseKind::kSilentCorruption);
  wrapped.escapes_unpredicted = 1;
  EXPECT_EQ(Judge(wrapped, true), SurpriseKind::kSilentCorruption);
  wrapped.mode = TrackerMode::kOff;
  EXPECT_EQ(Judge(wrapped, true), SurpriseKind::kNone);
  // Past a predicted escape the escaped bug acts as though unchecked: what it may cause then (a
  // stale write cached and read back as another prefix's content) is excused, and nothing else.
  CaseOutcome content =
      Fired(FaultSite::kDoubleFree, TrackerMode::kTags, AccessVerdict::kWrongContent, 1);
  EXPECT_EQ(Judge(content, true), SurpriseKind::kSilentCorruption);  // no escape: nothing passed
  content.escapes_predicted = 3;
  EXPECT_EQ(Judge(content, true), SurpriseKind::kNone);
  EXPECT_EQ(Judge(content, false), SurpriseKind::kSilentCorruption);  // 64-bit tags never wrap
  content.escapes_unpredicted = 1;
  EXPECT_EQ(Judge(content, true), SurpriseKind::kSilentCorruption);
  // An S bug's unwritten slots are the seal's: an escape of the tags does not excuse them there.
  CaseOutcome sealed =
      Fired(FaultSite::kReadPastLength, TrackerMode::kSeal, AccessVerdict::kUnwritten, 1);
  sealed.escapes_predicted = 3;
  EXPECT_EQ(Judge(sealed, true), SurpriseKind::kSilentCorruption);
  // Nor does it excuse what no fired bug may cause: an S bug reads unwritten slots, never another
  // sequence's content.
  CaseOutcome foreign =
      Fired(FaultSite::kReadPastLength, TrackerMode::kTags, AccessVerdict::kWrongContent, 1);
  foreign.escapes_predicted = 3;
  EXPECT_EQ(Judge(foreign, true), SurpriseKind::kSilentCorruption);
}

TEST(OutcomeTest, OutputsOutOfBoundAreExcusedOnlyBesideExcusedAccesses) {
  CaseOutcome outputs =
      Fired(FaultSite::kReadPastLength, TrackerMode::kTags, AccessVerdict::kUnwritten, 1);
  outputs.bad_outputs = 3;
  EXPECT_EQ(Judge(outputs, false), SurpriseKind::kNone);
  // With no access that ran wrong, outputs out of bound are the kernels' own error.
  CaseOutcome alone = Fired(FaultSite::kDoubleFree, TrackerMode::kTags, AccessVerdict::kOk, 0);
  alone.bad_outputs = 3;
  EXPECT_EQ(Judge(alone, false), SurpriseKind::kSilentCorruption);
}

TEST(OutcomeTest, WithNoBugThatCorruptsAnyFindingIsASurprise) {
  CaseOutcome clean;
  clean.mode = TrackerMode::kOff;
  EXPECT_EQ(Judge(clean, false), SurpriseKind::kNone);
  clean.silent_writes = 1;
  clean.write_verdicts[static_cast<size_t>(AccessVerdict::kWrongPage)] = 1;
  EXPECT_EQ(Judge(clean, true), SurpriseKind::kSilentCorruption);
  // The negative control changes outputs' rounding, not ownership: nothing may show.
  CaseOutcome control =
      Fired(FaultSite::kBatchCompositionNoise, TrackerMode::kTags, AccessVerdict::kOk, 0);
  EXPECT_EQ(control.fired_corrupting(), 0);
  EXPECT_EQ(Judge(control, false), SurpriseKind::kNone);
  control.bad_outputs = 1;
  EXPECT_EQ(Judge(control, false), SurpriseKind::kSilentCorruption);
  CaseOutcome alarm =
      Fired(FaultSite::kBatchCompositionNoise, TrackerMode::kSeal, AccessVerdict::kOk, 0);
  alarm.false_alarms = 1;
  EXPECT_EQ(Judge(alarm, false), SurpriseKind::kFalseAlarm);
}

TEST(OutcomeTest, RefusalsOfRightAccessesCountOnlyWhereAFiredBugTouchedThem) {
  CaseOutcome refused =
      Fired(FaultSite::kDuplicateNotRewritten, TrackerMode::kTags, AccessVerdict::kOk, 0);
  refused.over_refusals_excused = 4;
  EXPECT_EQ(Judge(refused, false), SurpriseKind::kNone);
  refused.over_refusals = 1;
  EXPECT_EQ(Judge(refused, false), SurpriseKind::kOverRefusal);
  EXPECT_STREQ(SurpriseKindName(SurpriseKind::kOverRefusal), "over-refusal");
}

TEST(OutcomeTest, ARunStoppedByItsLimitWithNoBugFiredIsASurprise) {
  CaseOutcome stuck;
  stuck.mode = TrackerMode::kTags;
  stuck.drained = false;
  EXPECT_EQ(Judge(stuck, false), SurpriseKind::kStopped);
  // The control's bug changes no bookkeeping: a livelock beside it is still one.
  stuck.fired[static_cast<size_t>(FaultSite::kBatchCompositionNoise)] = 1;
  EXPECT_EQ(Judge(stuck, false), SurpriseKind::kStopped);
  // A bug that loses pages can leave a pool too small for what waits: measured, not judged.
  CaseOutcome lost = Fired(FaultSite::kDoubleFree, TrackerMode::kTags, AccessVerdict::kOk, 0);
  lost.drained = false;
  EXPECT_EQ(Judge(lost, false), SurpriseKind::kNone);
  EXPECT_STREQ(SurpriseKindName(SurpriseKind::kStopped), "stopped");
}

TEST(OutcomeTest, ErrorsAndCrashesAreAlwaysSurprises) {
  CaseOutcome o =
      Fired(FaultSite::kPrefixHashCollision, TrackerMode::kOff, AccessVerdict::kWrongContent, 9);
  o.error = true;
  EXPECT_EQ(Judge(o, false), SurpriseKind::kError);
  o.crashed = true;
  EXPECT_EQ(Judge(o, true), SurpriseKind::kCrash);
  EXPECT_STREQ(SurpriseKindName(SurpriseKind::kFalseAlarm), "false alarm");
}

}  // namespace
}  // namespace kvsim::sim
