// Fuzz harness for the run report reader `kvsim replay` uses: any bytes as a report. With the
// first byte odd, an input that parses as a JSON object gets its checksum recomputed first, so
// that the reader's checks past the checksum (versions, the content hash, each field's type and
// range) are reached and not only the checksum's. Reading never crashes, hangs or leaks; a
// refusal is an error of exit code 2 whose message starts with the file's name; an accepted
// report has a time limit inside kvsim run's range, and a report differs from itself nowhere.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "base/check.h"
#include "fuzz/fuzz_target.h"
#include "fuzz/resealed_json.h"
#include "sim/report/provenance.h"
#include "sim/report/report_io.h"

namespace {

constexpr char kPath[] = "fuzz.json";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::optional<std::string> resealed = kvsim::fuzz::ResealedJson(data, size);
  if (!resealed) return 0;
  const std::string& text = *resealed;
  const kvsim::Result<kvsim::sim::ReplayInput> read = kvsim::sim::ReadReplayInput(text, kPath);
  if (!read.ok()) {
    const kvsim::Status& status = read.status();
    KVSIM_CHECK_EQ(kvsim::ExitCodeFor(status), 2) << status.ToString();
    KVSIM_CHECK_EQ(status.message().rfind(kPath, 0), size_t{0}) << status.ToString();
    return 0;
  }
  KVSIM_CHECK(read->max_time_s >= 0 && read->max_time_s <= 9e9) << read->max_time_s;
  KVSIM_CHECK_EQ(kvsim::sim::FirstReportDifference(text, text), "");
  return 0;
}
