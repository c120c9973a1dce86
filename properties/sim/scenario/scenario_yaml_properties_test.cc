// ScenarioToYaml over generated scenarios: every scenario the generators make, with any name,
// description and run limits, reads back as the same scenario, and is written the same again.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "properties/sim/scenario/scenario_generators.h"
#include "sim/scenario/scenario_yaml.h"
#include "tests/sim/scenario/scenario_differences.h"

namespace kvsim::sim {
namespace {

// Printable text with the characters YAML treats specially, and line breaks.
rc::Gen<std::string> GenText() {
  return rc::gen::container<std::string>(rc::gen::weightedOneOf<char>(
      {{8, rc::gen::inRange<char>(' ', '~' + 1)},
       {1, rc::gen::element(':', '#', '"', '\'', '-', '{', '[', '&', '*', '!', '|', '>', '\n')}}));
}

RC_GTEST_PROP(ScenarioYamlPropertiesTest, AGeneratedScenarioReadsBackTheSame, ()) {
  Scenario s = *rc::gen::oneOf(GenScenario(ModeDraw::kMostlyTiming), GenScenarioWithPlantedBugs());
  s.name = *GenText();
  s.description = *GenText();
  if (*rc::gen::arbitrary<bool>()) {
    s.server.limits.max_time_ns = *rc::gen::inRange<SimNs>(1, SimNs{1} << 50);
  }
  if (*rc::gen::arbitrary<bool>()) {
    s.server.limits.max_events = *rc::gen::inRange<int64_t>(1, std::numeric_limits<int64_t>::max());
  }
  const std::string yaml = ScenarioToYaml(s);
  RC_LOG() << yaml;
  const Result<Scenario> read = ParseScenario(yaml, "generated.yaml");
  if (!read.ok()) RC_FAIL(read.status().ToString());
  for (const std::string& field : ScenarioDifferences(s, *read)) RC_FAIL(field + " differs");
  RC_ASSERT(ScenarioToYaml(*read) == yaml);
}

}  // namespace
}  // namespace kvsim::sim
