// Fuzz harness for the campaign shard reader and merge that `kvsim campaign merge` uses: any bytes
// as a shard's JSON. With the first byte odd, an input that parses as a JSON object gets its
// checksum recomputed first, so that the checks past it (shard lists, count ranges, the cases
// and runs the shards hold) are reached. Reading never crashes, hangs or leaks; a refusal is an
// error of exit code 2 whose message starts with the file's name. An accepted shard holds
// counts in range, is written back by ResultsToJson as JSON that reads back the same, merges
// into an empty result, and is refused when merged a second time (its shards given twice).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "base/check.h"
#include "fuzz/fuzz_target.h"
#include "fuzz/resealed_json.h"
#include "sim/campaign/campaign_results.h"
#include "sim/report/provenance.h"

namespace {

constexpr char kPath[] = "fuzz.json";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kvsim::sim::CampaignResults;
  const std::optional<std::string> resealed = kvsim::fuzz::ResealedJson(data, size);
  if (!resealed) return 0;
  const std::string& text = *resealed;
  const kvsim::Result<CampaignResults> read = kvsim::sim::ResultsFromJson(text, kPath);
  if (!read.ok()) {
    const kvsim::Status& status = read.status();
    KVSIM_CHECK_EQ(kvsim::ExitCodeFor(status), 2) << status.ToString();
    KVSIM_CHECK_EQ(status.message().rfind(kPath, 0), size_t{0}) << status.ToString();
    return 0;
  }
  const CampaignResults& r = *read;
  KVSIM_CHECK(r.cases >= 0 && r.cases <= r.spec.cases) << r.cases;
  KVSIM_CHECK(r.runs >= 0) << r.runs;
  const std::string written = kvsim::sim::ResultsToJson(r);
  const kvsim::Result<CampaignResults> again = kvsim::sim::ResultsFromJson(written, "written.json");
  KVSIM_CHECK(again.ok()) << again.status().ToString() << "\n" << written;
  KVSIM_CHECK_EQ(kvsim::sim::ResultsToJson(*again), written);
  CampaignResults merged;
  KVSIM_CHECK(kvsim::sim::MergeResults(r, merged).ok());
  const kvsim::Status twice = kvsim::sim::MergeResults(r, merged);
  KVSIM_CHECK(!twice.ok() && twice.message().find("is given twice") != std::string::npos)
      << twice.ToString();
  return 0;
}
