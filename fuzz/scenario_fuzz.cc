// Fuzz harness for the scenario parser: any bytes as scenario YAML. Parsing never crashes, hangs
// or leaks. A refusal is an InvalidArgument error whose message starts with the file's name. An
// accepted scenario keeps its path and text; written back by ScenarioToYaml it reads back as the
// same scenario, every field compared, and is written the same again. Parsing reads no other
// file (model, GPU and trace names are resolved when a scenario is prepared, not here), and the
// harness runs no simulation, so every input is fast and deterministic.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/check.h"
#include "fuzz/fuzz_target.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_yaml.h"
#include "tests/sim/scenario/scenario_differences.h"

namespace {

constexpr char kPath[] = "fuzz.yaml";
constexpr char kWrittenPath[] = "written.yaml";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kvsim::sim::Scenario;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const kvsim::Result<Scenario> parsed = kvsim::sim::ParseScenario(text, kPath);
  if (!parsed.ok()) {
    const kvsim::Status& status = parsed.status();
    KVSIM_CHECK(status.code() == kvsim::StatusCode::kInvalidArgument) << status.ToString();
    KVSIM_CHECK_EQ(status.message().rfind(kPath, 0), size_t{0}) << status.ToString();
    return 0;
  }
  KVSIM_CHECK_EQ(parsed->path, kPath);
  KVSIM_CHECK(parsed->text == text);
  const std::string yaml = kvsim::sim::ScenarioToYaml(*parsed);
  const kvsim::Result<Scenario> read = kvsim::sim::ParseScenario(yaml, kWrittenPath);
  KVSIM_CHECK(read.ok()) << read.status().ToString() << "\n" << yaml;
  for (const std::string& field : kvsim::sim::ScenarioDifferences(*parsed, *read)) {
    KVSIM_CHECK(false) << field << " differs after the round trip\n" << yaml;
  }
  KVSIM_CHECK_EQ(kvsim::sim::ScenarioToYaml(*read), yaml);
  return 0;
}
