// Checks of the NaN and infinity policy of decode attention.
#include "tests/kernels/attention/nonfinite_checks.h"

#include <cmath>
#include <cstdint>
#include <sstream>
#include <utility>
#include <vector>

#include "base/check.h"
#include "kernels/attention/decode_attention.h"
#include "tests/kernels/attention/attention_case.h"

namespace kvsim::testing {
namespace {

constexpr int kHeadDim = 64;
constexpr int kKvHeads = 2;
constexpr int kQueryHeads = 4;  // query heads 0 and 1 read KV head 0; 2 and 3 read KV head 1
constexpr uint16_t kNaN = 0x7FC0;
constexpr uint16_t kPlusInf = 0x7F80;
constexpr uint16_t kMinusInf = 0xFF80;
constexpr uint16_t kPlusOne = 0x3F80;
constexpr uint16_t kMinusOne = 0xBF80;

AttentionCase MakeCase(KvFormat format, std::vector<int> seq_lens) {
  AttentionCaseParams params;
  params.shape = GqaCacheShape(0, 5, kKvHeads, kHeadDim, format);
  params.num_q_heads = kQueryHeads;
  params.seq_lens = std::move(seq_lens);
  params.seed = 0x7e57;
  return MakeAttentionCase(params);
}

size_t QueryValue(int request, int head, int dim) {
  return (static_cast<size_t>(request) * kQueryHeads + static_cast<size_t>(head)) * kHeadDim +
         static_cast<size_t>(dim);
}

// Where (request, position)'s value at `dim` of `kv_head` lies in the case's k_new and v_new.
size_t TokenValue(const AttentionCase& c, int request, int position, int kv_head, int dim) {
  for (size_t t = 0; t < c.token_request.size(); ++t) {
    if (c.token_request[t] == request && c.token_position[t] == position) {
      return (t * kKvHeads + static_cast<size_t>(kv_head)) * kHeadDim + static_cast<size_t>(dim);
    }
  }
  KVSIM_CHECK(false);
  return 0;
}

Result<DecodeOutputs> Run(Backend& backend, const AttentionCase& c, AttentionOutputDtype dtype,
                          const DecodeRunner& run) {
  KVSIM_ASSIGN_OR_RETURN(DeviceCase device, UploadAndAppend(backend, c));
  return RunDecodeWith(backend, c, device, dtype, run);
}

const char* DtypeName(AttentionOutputDtype dtype) {
  return dtype == AttentionOutputDtype::kFp32 ? "fp32 outputs" : "bf16 outputs";
}

// Collects the first way a run differs from what the policy says.
class Expect {
 public:
  Expect(const AttentionCase& c, const DecodeOutputs& got, std::string what)
      : c_(c), got_(got), what_(std::move(what)) {}

  const std::string& failure() const { return failure_; }

  void Ok() {
    for (size_t r = 0; r < got_.status.size(); ++r) {
      if (got_.status[r] != 0) Fail(static_cast<int>(r), 0, "status " + Show(got_.status[r]));
    }
  }

  // Every output and the log-sum-exp of the head equal `want`'s.
  void Same(const DecodeOutputs& want, int request, int head, int except_dim = -1) {
    for (int i = 0; i < kHeadDim; ++i) {
      const size_t at = Out(request, head, i);
      if (i != except_dim && !(got_.out[at] == want.out[at])) {
        Fail(request, head,
             "dim " + Show(i) + " " + Show(got_.out[at]) + ", expected " + Show(want.out[at]));
      }
    }
    const size_t at = Lse(request, head);
    if (!(got_.lse[at] == want.lse[at])) {
      Fail(request, head, "lse " + Show(got_.lse[at]) + ", expected " + Show(want.lse[at]));
    }
  }

  void AllNaN(int request, int head) {
    for (int i = 0; i < kHeadDim; ++i) {
      if (!std::isnan(got_.out[Out(request, head, i)])) {
        Fail(request, head,
             "dim " + Show(i) + " " + Show(got_.out[Out(request, head, i)]) + ", expected NaN");
      }
    }
    if (!std::isnan(got_.lse[Lse(request, head)])) {
      Fail(request, head, "lse " + Show(got_.lse[Lse(request, head)]) + ", expected NaN");
    }
  }

  void AllFinite(int request, int head) {
    for (int i = 0; i < kHeadDim; ++i) {
      if (!std::isfinite(got_.out[Out(request, head, i)])) {
        Fail(request, head, "dim " + Show(i) + " " + Show(got_.out[Out(request, head, i)]));
      }
    }
    if (!std::isfinite(got_.lse[Lse(request, head)])) {
      Fail(request, head, "lse " + Show(got_.lse[Lse(request, head)]));
    }
  }

  void Element(int request, int head, int dim, float want) {
    const float got = got_.out[Out(request, head, dim)];
    if (!(got == want)) {
      Fail(request, head, "dim " + Show(dim) + " " + Show(got) + ", expected " + Show(want));
    }
  }

 private:
  template <class T>
  static std::string Show(T value) {
    std::ostringstream out;
    out << value;
    return out.str();
  }

  static size_t Out(int request, int head, int dim) {
    return QueryValue(request, head, dim);  // v_head_dim == head_dim for GQA
  }
  static size_t Lse(int request, int head) {
    return static_cast<size_t>(request) * kQueryHeads + static_cast<size_t>(head);
  }

  void Fail(int request, int head, const std::string& what) {
    if (!failure_.empty()) return;
    failure_ = what_ + ": request " + Show(request) + " head " + Show(head) + ": " + what + " in " +
               DescribeCase(c_);
  }

  const AttentionCase& c_;
  const DecodeOutputs& got_;
  const std::string what_;
  std::string failure_;
};

// Runs `baseline` and `special` on the backend with both output dtypes; `check(expect, want)`
// states what the policy expects of the special run, given the baseline run `want`. Every status
// must be kOk. Empty, or the first failure.
template <class Check>
std::string CompareRuns(Backend& backend, const DecodeRunner& run, const AttentionCase& baseline,
                        const AttentionCase& special, const std::string& what, Check check) {
  for (AttentionOutputDtype dtype : {AttentionOutputDtype::kFp32, AttentionOutputDtype::kBf16}) {
    const Result<DecodeOutputs> want = Run(backend, baseline, dtype, run);
    const Result<DecodeOutputs> got = Run(backend, special, dtype, run);
    if (!want.ok()) return want.status().ToString();
    if (!got.ok()) return got.status().ToString();
    Expect expect(special, *got, what + ", " + DtypeName(dtype));
    expect.Ok();
    check(expect, *want);
    if (!expect.failure().empty()) return expect.failure();
  }
  return "";
}

}  // namespace

std::string CheckNonFiniteQuery(Backend& backend, KvFormat format, const DecodeRunner& run) {
  const AttentionCase clean = MakeCase(format, {23, 41, 17});
  AttentionCase special = clean;
  special.q[QueryValue(1, 0, 3)] = kNaN;
  special.q[QueryValue(1, 1, 10)] = kPlusInf;
  special.q[QueryValue(1, 3, 63)] = kMinusInf;
  return CompareRuns(backend, run, clean, special,
                     "NaN and infinities in q, " + KvFormatName(format),
                     [](Expect& expect, const DecodeOutputs& want) {
                       for (int request : {0, 1, 2}) {
                         for (int head = 0; head < kQueryHeads; ++head) {
                           if (request == 1 && head != 2) {
                             expect.AllNaN(request, head);
                           } else {
                             expect.Same(want, request, head);
                           }
                         }
                       }
                     });
}

std::string CheckInfinityInBf16K(Backend& backend, bool negative, const DecodeRunner& run) {
  // Request 1's last token (position 40, in a tile with finite tokens before it) and request 3's
  // only token store the infinity at dimension 3 of KV head 0; query heads 0 and 1 of both
  // requests have q = +1 and -1 there.
  AttentionCase full = MakeCase({KvDtype::kBf16, KvScaling::kNone}, {23, 41, 17, 1});
  const uint16_t infinity = negative ? kMinusInf : kPlusInf;
  full.k_new[TokenValue(full, 1, 40, 0, 3)] = infinity;
  full.k_new[TokenValue(full, 3, 0, 0, 3)] = infinity;
  for (int request : {1, 3}) {
    full.q[QueryValue(request, 0, 3)] = kPlusOne;
    full.q[QueryValue(request, 1, 3)] = kMinusOne;
  }
  // The head whose score is +inf, and the one whose score is -inf.
  const int plus_head = negative ? 1 : 0;
  const int minus_head = 1 - plus_head;
  // The same cache and queries, with request 1 stopping before its last token.
  AttentionCase shorter = full;
  shorter.seq_lens[1] = 40;
  return CompareRuns(backend, run, shorter, full,
                     std::string(negative ? "-inf" : "+inf") + " in a bf16 K row",
                     [&](Expect& expect, const DecodeOutputs& want) {
                       for (int head = 0; head < kQueryHeads; ++head) {
                         expect.Same(want, 0, head);
                         expect.Same(want, 2, head);
                       }
                       expect.AllNaN(1, plus_head);
                       expect.Same(want, 1, minus_head);
                       expect.AllFinite(1, 2);
                       expect.AllFinite(1, 3);
                       expect.AllNaN(3, 0);
                       expect.AllNaN(3, 1);
                       expect.Same(want, 3, 2);
                       expect.Same(want, 3, 3);
                     });
}

std::string CheckInfinityInBf16V(Backend& backend, bool negative, const DecodeRunner& run) {
  const AttentionCase clean = MakeCase({KvDtype::kBf16, KvScaling::kNone}, {23, 41, 17});
  AttentionCase special = clean;
  special.v_new[TokenValue(special, 1, 12, 0, 9)] = negative ? kMinusInf : kPlusInf;
  const float infinity = negative ? -INFINITY : INFINITY;
  return CompareRuns(backend, run, clean, special,
                     std::string(negative ? "-inf" : "+inf") + " in a bf16 V row",
                     [&](Expect& expect, const DecodeOutputs& want) {
                       for (int request : {0, 1, 2}) {
                         for (int head = 0; head < kQueryHeads; ++head) {
                           // Token 12 of request 1 is read by query heads 0 and 1.
                           const bool reads_it = request == 1 && head < 2;
                           expect.Same(want, request, head, reads_it ? 9 : -1);
                           if (reads_it) expect.Element(request, head, 9, infinity);
                         }
                       }
                     });
}

std::string CheckNonFinitePolicy(Backend& backend, const DecodeRunner& run) {
  std::string failures;
  const auto add = [&failures](const std::string& failure) {
    if (!failure.empty()) failures += failure + "\n";
  };
  for (const KvFormat format : AllKvFormats()) {
    if (format.scaling != KvScaling::kMlaBlock128) add(CheckNonFiniteQuery(backend, format, run));
  }
  for (bool negative : {false, true}) {
    add(CheckInfinityInBf16K(backend, negative, run));
    add(CheckInfinityInBf16V(backend, negative, run));
  }
  return failures;
}

}  // namespace kvsim::testing
