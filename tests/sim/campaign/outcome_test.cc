// The catalogue's verdict on a run: which silent corruptions each mode may show, and what is always
// a surprise.
#include "sim/campaign/outcome.h"

#include <gtest/gtest.h>

namespace kvsim::sim {
namespace {

CaseOutcome Fired(FaultSite site, TrackerMode mode, int64_t silent_reads) {
  CaseOutcome o;
  o.fired[static_cast<size_t>(site)] = 2;
  o.mode = mode;
  o.silent_reads = silent_reads;
  return o;
}

TEST(OutcomeTest, SilentCorruptionIsExpectedOnlyWhereNoLayerThatRanCatchesTheBug) {
  // R, W and RW: only with no check.
  for (FaultSite site : {FaultSite::kDuplicateNotRewritten, FaultSite::kAsyncFreeBeforeWrite,
                         FaultSite::kDoubleFree}) {
    EXPECT_EQ(Judge(Fired(site, TrackerMode::kOff, 5), false), SurpriseKind::kNone);
    EXPECT_EQ(Judge(Fired(site, TrackerMode::kTags, 5), false), SurpriseKind::kSilentCorruption);
    EXPECT_EQ(Judge(Fired(site, TrackerMode::kSeal, 5), false), SurpriseKind::kSilentCorruption);
  }
  // S: the tags let it through, the seal does not.
  EXPECT_EQ(Judge(Fired(FaultSite::kReadPastLength, TrackerMode::kTags, 5), false),
            SurpriseKind::kNone);
  EXPECT_EQ(Judge(Fired(FaultSite::kReadPastLength, TrackerMode::kSeal, 5), false),
            SurpriseKind::kSilentCorruption);
  // N: no ownership check catches it.
  EXPECT_EQ(Judge(Fired(FaultSite::kPrefixHashCollision, TrackerMode::kSeal, 5), false),
            SurpriseKind::kNone);
  // An R bug with an S bug in the same run: the S bug may account for what got through the tags.
  CaseOutcome both = Fired(FaultSite::kDoubleFree, TrackerMode::kTags, 5);
  both.fired[static_cast<size_t>(FaultSite::kCommittedAheadOfWrites)] = 1;
  EXPECT_EQ(Judge(both, false), SurpriseKind::kNone);
  // Narrow tags may wrap: their silent corruptions are measured, and judged only by whether each
  // escape of the check is one the escape condition predicts.
  CaseOutcome wrapped = Fired(FaultSite::kDoubleFree, TrackerMode::kTags, 5);
  wrapped.escapes_predicted = 2;
  EXPECT_EQ(Judge(wrapped, true), SurpriseKind::kNone);
  wrapped.escapes_unpredicted = 1;
  EXPECT_EQ(Judge(wrapped, true), SurpriseKind::kSilentCorruption);
  wrapped.mode = TrackerMode::kOff;
  EXPECT_EQ(Judge(wrapped, true), SurpriseKind::kNone);
  // Kernel outputs outside their bound count as corruption too.
  CaseOutcome outputs = Fired(FaultSite::kDoubleFree, TrackerMode::kTags, 0);
  outputs.bad_outputs = 3;
  EXPECT_EQ(Judge(outputs, false), SurpriseKind::kSilentCorruption);
}

TEST(OutcomeTest, WithNoBugThatCorruptsAnyFindingIsASurprise) {
  CaseOutcome clean;
  clean.mode = TrackerMode::kOff;
  EXPECT_EQ(Judge(clean, false), SurpriseKind::kNone);
  clean.silent_writes = 1;
  EXPECT_EQ(Judge(clean, true), SurpriseKind::kSilentCorruption);
  // The negative control changes outputs' rounding, not ownership: nothing may show.
  CaseOutcome control = Fired(FaultSite::kBatchCompositionNoise, TrackerMode::kTags, 0);
  EXPECT_EQ(control.fired_corrupting(), 0);
  EXPECT_EQ(Judge(control, false), SurpriseKind::kNone);
  control.bad_outputs = 1;
  EXPECT_EQ(Judge(control, false), SurpriseKind::kSilentCorruption);
  CaseOutcome alarm = Fired(FaultSite::kBatchCompositionNoise, TrackerMode::kSeal, 0);
  alarm.false_alarms = 1;
  EXPECT_EQ(Judge(alarm, false), SurpriseKind::kFalseAlarm);
}

TEST(OutcomeTest, ErrorsAndCrashesAreAlwaysSurprises) {
  CaseOutcome o = Fired(FaultSite::kPrefixHashCollision, TrackerMode::kOff, 9);
  o.error = true;
  EXPECT_EQ(Judge(o, false), SurpriseKind::kError);
  o.crashed = true;
  EXPECT_EQ(Judge(o, true), SurpriseKind::kCrash);
  EXPECT_STREQ(SurpriseKindName(SurpriseKind::kFalseAlarm), "false alarm");
}

}  // namespace
}  // namespace kvsim::sim
