// Per-tensor reconstruction error of two quantizations of one model, side by side:
//   quant_rmse SOURCE.gguf A.gguf B.gguf [IMATRIX.gguf]
// For every tensor quantized in both A and B (to any block type), the RMSE of A and of B against
// SOURCE's values, and their ratio; then the worst ratio, the mean ratio and the ratio of the
// total squared errors. With an imatrix each squared error is weighted by its column's mean
// squared activation (what the product x . w loses; tensors without an entry count plainly), the
// error both quantizers minimise. bench/quantize-compare runs it on memwall's and
// llama-quantize's outputs.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/gguf.h"
#include "quant/imatrix.h"
#include "sys/mapped_file.h"
#include "tensor/types.h"

namespace {

struct Parsed {
    mw::MappedFile file;
    mw::gguf::GgufFile gguf;
};

Parsed parse(const std::string& path) {
    Parsed p;
    p.file = mw::MappedFile::open(path);
    p.gguf = mw::gguf::GgufFile::parse(p.file.bytes(), path);
    return p;
}

std::vector<float> decode(const mw::gguf::TensorInfo& t) {
    std::vector<float> out(t.n_elements);
    mw::type_traits(t.type)->to_float(t.data, out.data(), int64_t(t.n_elements));
    return out;
}

// sum_i w_(i mod ne0) (x_i - y_i)^2, w the column weights (all ones when empty).
double squared_error(const std::vector<float>& x, const std::vector<float>& y,
                     const std::vector<float>& w, size_t ne0) {
    double e = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        const double d = double(x[i]) - double(y[i]);
        e += d * d * (w.empty() ? 1.0 : double(w[i % ne0]));
    }
    return e;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4 && argc != 5) {
        std::fprintf(stderr, "usage: quant_rmse SOURCE.gguf A.gguf B.gguf [IMATRIX.gguf]\n");
        return 2;
    }
    try {
        const Parsed src = parse(argv[1]), a = parse(argv[2]), b = parse(argv[3]);
        mw::Imatrix imatrix;
        if (argc == 5) imatrix = mw::load_imatrix(argv[4]);
        double worst = 0, sum_a = 0, sum_b = 0, sum_ratio = 0;
        std::string worst_name;
        int n = 0, a_worse = 0;
        std::printf("%-36s %-6s %-6s %12s %12s %8s\n", "tensor", "A", "B", "RMSE A", "RMSE B",
                    "A / B");
        for (const auto& ta : a.gguf.tensors()) {
            const auto* tb = b.gguf.find_tensor(ta.name);
            const auto* ts = src.gguf.find_tensor(ta.name);
            const auto* ra = mw::type_traits(ta.type);
            if (!tb || !ts || !ra || !ra->is_quantized) continue;
            const std::vector<float> x = decode(*ts);
            std::vector<float> w;
            if (imatrix.entries.count(std::string(ta.name)) && ts->n_dims == 2) {
                w = imatrix.means(std::string(ta.name));
            }
            const size_t ne0 = size_t(ts->ne[0]);
            const double ea = squared_error(x, decode(ta), w, ne0),
                         eb = squared_error(x, decode(*tb), w, ne0);
            const double ratio = eb > 0 ? std::sqrt(ea / eb) : (ea > 0 ? INFINITY : 1.0);
            std::printf("%-36s %-6s %-6s %12.4g %12.4g %8.4f\n", std::string(ta.name).c_str(),
                        std::string(ra->name).c_str(),
                        std::string(mw::type_traits(tb->type)->name).c_str(),
                        std::sqrt(ea / double(x.size())), std::sqrt(eb / double(x.size())), ratio);
            if (ratio > worst) {
                worst = ratio;
                worst_name = std::string(ta.name);
            }
            a_worse += ratio > 1.0;
            sum_ratio += ratio;
            sum_a += ea;
            sum_b += eb;
            ++n;
        }
        std::printf(
            "%d tensors%s; A's RMSE above B's on %d; worst ratio %.4f (%s); mean ratio %.4f; "
            "total squared error ratio %.4f\n",
            n, argc == 5 ? " (imatrix-weighted)" : "", a_worse, worst, worst_name.c_str(),
            n ? sum_ratio / n : 1.0, sum_b > 0 ? sum_a / sum_b : 1.0);
        return 0;
    } catch (const mw::Error& e) {
        std::fprintf(stderr, "quant_rmse: %s\n", e.what());
        return 1;
    }
}
