// Narrow tags (2 and 4 bits) at the boundary of the theorem (docs/integrity.md): a stale grant
// whose page has been reallocated k times passes the real tag check exactly when k is a multiple
// of 2^w under generation tags, and exactly when the page's tag happens to equal the recorded one
// under random tags (never for k = 1). Pools of 1 to 4 pages, LIFO or FIFO, with other requests
// allocating and releasing at random in between.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <vector>

#include "sim/memory/page_pool.h"
#include "tests/sim/integrity/stale_read.h"

namespace kvsim {
namespace {

PagePool MakePool(int32_t pages, TagPolicy policy, int32_t width_bits) {
  const ReuseOrder order = *rc::gen::element(ReuseOrder::kLifo, ReuseOrder::kFifo);
  return PagePool::Create(
             {pages, order, false, {width_bits, policy, *rc::gen::arbitrary<uint64_t>()}})
      .value();
}

// Other requests allocate and release pages at random for `steps` steps while `stale` stays
// recorded but freed; `probe` checks the stale read after every step with `expect_pass`, given the
// reallocations of the stale page so far. Returns the reallocations at the end.
template <typename ExpectPass>
int64_t Churn(PagePool& pool, testing::StaleReadProbe& probe, const PageGrant& stale, int steps,
              ExpectPass expect_pass) {
  std::vector<int32_t> held;
  int64_t reallocations = 0;
  for (int step = 0; step < steps; ++step) {
    const bool allocate = held.empty() || (pool.pages_free() > 0 && *rc::gen::arbitrary<bool>());
    if (allocate) {
      const PageGrant grant = pool.Allocate().value();
      reallocations += grant.page == stale.page ? 1 : 0;
      held.push_back(grant.page);
    } else {
      const size_t victim = *rc::gen::inRange<size_t>(0, held.size());
      RC_ASSERT(pool.Release(held[victim]).ok());
      held.erase(held.begin() + static_cast<long>(victim));
    }
    RC_ASSERT(probe.ReadPasses(stale) == expect_pass(reallocations));
  }
  return reallocations;
}

RC_GTEST_PROP(NarrowTagProperties, GenerationTagsEscapeExactlyAtMultiplesOfTwoToTheWidth, ()) {
  const int32_t width = *rc::gen::element(2, 4);
  PagePool pool = MakePool(*rc::gen::inRange(1, 5), TagPolicy::kGeneration, width);
  testing::StaleReadProbe probe(pool);
  const PageGrant stale = pool.Allocate().value();
  RC_ASSERT(pool.Release(stale.page).ok());  // freed while still recorded: a stale reference
  const int64_t period = int64_t{1} << width;
  const int64_t reallocations = Churn(pool, probe, stale, *rc::gen::inRange(0, 120),
                                      [period](int64_t k) { return k % period == 0; });
  RC_CLASSIFY(reallocations >= period, "reached an escape");
}

RC_GTEST_PROP(NarrowTagProperties, GenerationTagsFirstEscapeAfterExactlyTwoToTheWidth, ()) {
  const int32_t width = *rc::gen::element(2, 4);
  const int32_t pages = *rc::gen::inRange(1, 5);
  PagePool pool = MakePool(pages, TagPolicy::kGeneration, width);
  testing::StaleReadProbe probe(pool);
  const PageGrant stale = pool.Allocate().value();
  RC_ASSERT(pool.Release(stale.page).ok());
  const int64_t period = int64_t{1} << width;
  for (int64_t k = 1; k <= period + 1; ++k) {
    // Allocate until the stale page comes back (at most every page once), then free them all.
    std::vector<int32_t> held;
    do {
      held.push_back(pool.Allocate().value().page);
    } while (held.back() != stale.page);
    for (int32_t page : held) RC_ASSERT(pool.Release(page).ok());
    RC_ASSERT(probe.ReadPasses(stale) == (k == period));
  }
}

RC_GTEST_PROP(NarrowTagProperties, RandomTagsEscapeExactlyWhenTheTagRepeats, ()) {
  const int32_t width = *rc::gen::element(2, 4);
  PagePool pool = MakePool(*rc::gen::inRange(1, 5), TagPolicy::kRandom, width);
  testing::StaleReadProbe probe(pool);
  const PageGrant stale = pool.Allocate().value();
  RC_ASSERT(pool.Release(stale.page).ok());
  const PagePool* watched = &pool;
  const int64_t reallocations =
      Churn(pool, probe, stale, *rc::gen::inRange(0, 120), [&](int64_t k) {
        // One reallocation always changes the tag; after that, only equality matters.
        return k != 1 && watched->tag(stale.page) == stale.tag;
      });
  RC_CLASSIFY(reallocations >= 2 && pool.tag(stale.page) == stale.tag, "ended in an escape");
}

}  // namespace
}  // namespace kvsim
