// The CUDA launchers of the tag-check family; called by TagCheck and ScatterPageTags after they
// have validated every size.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/tag_check/tag_check.h"
#include "kernels/tag_check/tag_check_view.h"

namespace kvsim::cuda {

// One launch for the whole batch: a thread block per request. The view's pointers are device
// pointers. Returns after the launch without waiting for the kernel; an error raised while it
// runs surfaces at the next synchronising call. Internal error when the launch fails.
Status LaunchTagCheck(const TagCheckView& view);

// Writes updates[i].tag to page_tags[updates[i].page] for i < count (device pointers; pages in
// range and distinct, as ScatterPageTags has checked). Ordered before later work on the default
// stream; does not wait for it.
Status LaunchScatterPageTags(const PageTagUpdate* updates, int32_t count, uint64_t* page_tags);

}  // namespace kvsim::cuda
