// TagCheckBatch: a batch of reference requests uploaded to a backend as TagCheck's buffers, and
// random batches (with every kind of fault) for the tests and benchmarks of the tag check.
#pragma once

#include <cstdint>
#include <vector>

#include "base/prng.h"
#include "base/status.h"
#include "kernels/backend.h"
#include "kernels/tag_check/tag_check.h"
#include "kernels/tag_check/tag_check_reference.h"

namespace kvsim::testing {

// The buffers of one check. Results are poisoned with 0xFF, so a verdict the check failed to write
// cannot pass for kOk (code -1 is no TagCheckCode).
struct TagCheckBatch {
  // The check's arguments, pointing into this batch (so valid while it stays where it is).
  TagCheckArgs args();

  DeviceBuffer block_table;
  DeviceBuffer seq_lens;
  DeviceBuffer first_tokens;
  DeviceBuffer recorded_offsets;
  DeviceBuffer recorded_pages;
  DeviceBuffer recorded_tags;
  DeviceBuffer page_tags;
  DeviceBuffer results;
  TagCheckArgs sizes;  // the sizes; its buffer pointers stay null
  bool with_first_tokens = true;
};

// Uploads `requests` (all with block-table rows of one length) with a row stride of
// max_pages + row_padding; the padding is filled with -7 so a read past a row is caught.
Result<TagCheckBatch> UploadTagCheckBatch(Backend& backend,
                                          const std::vector<reference::TagCheckRequest>& requests,
                                          int32_t page_size, int32_t row_padding,
                                          const std::vector<uint64_t>& page_tags,
                                          bool with_first_tokens);

// Runs TagCheck on `batch` with `launch` and downloads the verdicts (after synchronising
// launch.stream when it is not the default stream).
Result<std::vector<TagCheckResult>> RunTagCheck(Backend& backend, TagCheckBatch& batch,
                                                const LaunchOptions& launch = {});

// What a random batch looks like.
struct RandomBatchShape {
  int32_t batch = 0;
  int32_t max_pages_per_request = 0;
  int32_t page_size = 0;
  int32_t num_pages = 0;
  int32_t tag_bits = 64;     // tags drawn below 2^tag_bits
  uint64_t fault_per_mille;  // chance per request that one of its pages is damaged
};

// A batch of requests that read their whole sequences (or write their last tokens), each holding
// distinct-looking recorded pages with the current tags; `fault_per_mille` of them carry one
// fault: a wrong, out-of-range or stale entry, an unrecorded tail, or a malformed range.
std::vector<reference::TagCheckRequest> RandomTagCheckRequests(const RandomBatchShape& shape,
                                                               const std::vector<uint64_t>& tags,
                                                               Prng& prng);

// Adds 2 to 6 more faults to every request with recorded pages (wrong, out-of-range or stale
// entries at random pages, some `kFastTagCheckThreads` apart so that one thread of the fast
// kernel meets two, some in neighbouring pages of one warp, sometimes a truncated record), so that
// the first failing page is a minimum over several candidates of different kinds.
void AddAdversarialFaults(std::vector<reference::TagCheckRequest>& requests,
                          const RandomBatchShape& shape, Prng& prng);

// Current tags of `num_pages` pages, drawn below 2^tag_bits.
std::vector<uint64_t> RandomPageTags(int32_t num_pages, int32_t tag_bits, Prng& prng);

}  // namespace kvsim::testing
