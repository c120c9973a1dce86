// Symmetric absmax INT4 quantisation.
#include "kernels/int4_quantizer.h"

#include <cmath>

#include "kernels/formats.h"

namespace kvsim {

float QuantizeGroupSymmetricInt4(const float* values, size_t count, int8_t* codes) {
  float absmax = 0;
  for (size_t i = 0; i < count; ++i) absmax = std::fmax(absmax, std::fabs(values[i]));
  const float scale = absmax / static_cast<float>(kInt4SignedMax);
  for (size_t i = 0; i < count; ++i) {
    codes[i] = static_cast<int8_t>(scale == 0 ? 0 : QuantizeInt4(values[i] / scale));
  }
  return scale;
}

}  // namespace kvsim
