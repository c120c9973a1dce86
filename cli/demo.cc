// The demo: numeric format tables and what each format costs.
#include "cli/demo.h"

#include <fmt/format.h>

#include "base/seed.h"
#include "cli/format_report.h"

namespace kvsim::cli {

Status RunDemo(const DemoOptions& options, std::ostream& out) {
  if (options.samples < 1 || options.samples > (1 << 24)) {
    return OutOfRangeError(fmt::format("--samples {} is out of range; allowed: 1 to 16777216",
                                       options.samples));
  }
  out << "kvsim demo: the numeric formats of an FP8 KV cache and INT4 weights\n\n";
  PrintFp8E4M3Table(out);
  out << "\n";
  PrintInt4Table(out);
  out << "\n";
  PrintFormatRoundTrips(out, options.seed, options.samples);
  out << fmt::format("\nReproduce: kvsim demo --seed {} --samples {}\n", FormatSeed(options.seed),
                     options.samples);
  return Status::Ok();
}

}  // namespace kvsim::cli
