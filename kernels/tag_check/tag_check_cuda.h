// The CUDA launchers of the tag-check family; called by TagCheck and ScatterPageTags after they
// have validated every size.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/launch_options.h"
#include "kernels/tag_check/tag_check.h"
#include "kernels/tag_check/tag_check_view.h"

namespace kvsim::cuda {

// One launch for the whole batch on launch.stream: a thread block per request, the kernel of
// launch.path. The view's pointers are device pointers. Returns after the launch without waiting
// for the kernel and allocates nothing; an error raised while it runs surfaces at the next
// synchronising call. Internal error when the launch fails.
Status LaunchTagCheck(const TagCheckView& view, const LaunchOptions& launch);

// Copies `count` updates from host memory into `staging` (device memory) and writes
// updates[i].tag to page_tags[updates[i].page], both in order on launch.stream (pages in range and
// distinct, as ScatterPageTags has checked). Does not wait for either.
Status LaunchScatterPageTags(const PageTagUpdate* host_updates, int32_t count,
                             PageTagUpdate* staging, uint64_t* page_tags,
                             const LaunchOptions& launch);

}  // namespace kvsim::cuda
