// The presets against the fault registry: the bars the registry says each preset raises are the
// ones its rules raise, and a bug barred by a rule never acts under it (while it does once the
// swarm lifts the bar).
#include "sim/sched/engine_preset.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/faults/fault_mix.h"
#include "sim/faults/fault_registry.h"
#include "sim/sched/scheduler.h"

namespace kvsim::sim {
namespace {

TEST(EnginePresetTest, TheRegistrysPresetBarsAreThePresetsRules) {
  const EnginePreset presets[] = {EnginePreset::kCustom, EnginePreset::kVllmV1,
                                  EnginePreset::kSglang, EnginePreset::kVidur};
  ASSERT_EQ(std::size(presets), kPresetBars.size());
  for (size_t i = 0; i < kPresetBars.size(); ++i) {
    SchedulerConfig config;
    ApplyEnginePreset(presets[i], config);
    EXPECT_EQ(std::string(EnginePresetName(config.engine)), kPresetBars[i].preset);
    EXPECT_EQ(RuleBarsOf(config), kPresetBars[i].bars) << kPresetBars[i].preset;
    LiftRuleBars(RuleBarsOf(config), config);
    EXPECT_EQ(RuleBarsOf(config), 0) << kPresetBars[i].preset;
  }
}

// A rule set after the preset is reported with the preset's value it replaced.
TEST(EnginePresetTest, RulesSetOverThePresetAreNamedWithThePresetsValue) {
  SchedulerConfig config;
  ApplyEnginePreset(EnginePreset::kSglang, config);
  EXPECT_TRUE(RulesOverPreset(config).empty());
  config.reservation = Reservation::kPrompt;
  config.mixed_steps = true;
  const auto over = RulesOverPreset(config);
  ASSERT_EQ(over.size(), 2u);
  EXPECT_EQ(over[0], (std::pair<std::string, std::string>{"reservation", "sglang"}));
  EXPECT_EQ(over[1], (std::pair<std::string, std::string>{"mixed_steps", "false"}));
}

// Two requests with one 64-token prompt admitted in one step under after-chunk publication: the
// second's copies of the four pages are duplicates of the first's once both are cached. Where
// duplicates are freed the planted mini-sglang bug frees them without rewriting the table; where
// they are kept there is nothing for it to act on.
int64_t DuplicateBugFirings(bool free_duplicates) {
  SchedulerConfig config;
  config.pool.num_pages = 32;
  config.page_size = 16;
  config.prefix_cache = true;
  ApplyEnginePreset(EnginePreset::kSglang, config);
  config.reservation = Reservation::kPrompt;
  config.free_duplicates = free_duplicates;
  Scheduler scheduler = Scheduler::Create(config).value();
  FaultMix mix;
  mix.ppm[static_cast<size_t>(FaultSite::kDuplicateNotRewritten)] = 1'000'000;
  FaultInjector faults(mix, 7);
  scheduler.set_faults(&faults, 0);
  for (int64_t id = 0; id < 2; ++id) {
    RequestSpec r;
    r.id = id;
    r.prompt = {{77, 64}};
    r.prompt_tokens = 64;
    r.output_tokens = 2;
    r.max_new_tokens = 2;
    scheduler.Enqueue(r);
  }
  SimNs now = 0;
  for (int i = 0; i < 8; ++i) {
    std::vector<RequestEnd> ended;
    const FormedStep step = scheduler.ScheduleStep(now, ended);
    now += 10;
    scheduler.CompleteStep(step, std::vector<bool>(step.rows.size(), true), now, ended);
    for (const RequestEnd& end : ended) scheduler.Retire(end.slot);
  }
  return faults.fired(FaultSite::kDuplicateNotRewritten);
}

TEST(EnginePresetTest, ABarredBugNeverActsUnderTheRuleThatBarsIt) {
  EXPECT_EQ(DuplicateBugFirings(/*free_duplicates=*/false), 0);
  EXPECT_GT(DuplicateBugFirings(/*free_duplicates=*/true), 0);
}

}  // namespace
}  // namespace kvsim::sim
