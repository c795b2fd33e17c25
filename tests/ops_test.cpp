// Element-wise operations of the forward pass (tensor/ops.h) against double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tensor/ops.h"

namespace mw {
namespace {

// SwiGLU's SiLU computes exp with a polynomial the compiler vectorises (one version per x86
// vector width): within a few float roundings of silu(g) * up everywhere, saturating cleanly at
// the ends of the float range, and NaN in, NaN out (never a float-to-int conversion of it).
TEST(Ops, SwigluMatchesDoublePrecision) {
    std::vector<float> gate, up;
    for (int i = -4000; i <= 4000; ++i) {
        gate.push_back(float(i) * 0.025f);  // -100 .. 100
        up.push_back(1.0f + float(i % 7) * 0.25f);
    }
    for (float g : {0.0f, -0.0f, 1e-30f, -1e-30f, 86.9f, -86.9f, 88.5f, -88.5f, 120.0f, -120.0f,
                    1e38f, -3e38f}) {
        gate.push_back(g);
        up.push_back(1.5f);
    }
    std::vector<float> out(gate.size());
    swiglu(gate.data(), up.data(), out.data(), int64_t(gate.size()));
    for (size_t i = 0; i < gate.size(); ++i) {
        const double g = gate[i];
        const double want = g / (1.0 + std::exp(-g)) * double(up[i]);
        ASSERT_TRUE(std::isfinite(out[i])) << "g " << g;
        // Below g = -87 the clamped exponential leaves about g * 1.6e-38 instead of ~0.
        EXPECT_NEAR(out[i], want, 4e-7 * std::fabs(want) + 1e-30) << "g " << g;
    }

    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float g_nan[3] = {nan, 1.0f, -nan}, u[3] = {1.0f, nan, 1.0f};
    float y[3];
    swiglu(g_nan, u, y, 3);
    EXPECT_TRUE(std::isnan(y[0]));
    EXPECT_TRUE(std::isnan(y[1]));
    EXPECT_TRUE(std::isnan(y[2]));
}

}  // namespace
}  // namespace mw
