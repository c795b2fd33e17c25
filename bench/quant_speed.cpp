// Single-threaded time and output hash of one file quantizer over some tensors of a model:
//   quant_speed SOURCE.gguf IMATRIX|- TYPE NAME_SUBSTRING [fast|thorough [OTHER.gguf]]
// For finding where `memwall quantize` spends its time (perf record on this) without running the
// whole model, and for checking that a speed-up leaves the output bit-identical (the hash). With
// OTHER.gguf (e.g. llama-quantize's output of the same model), also the squared error against the
// source of these tensors, plain and weighted by the imatrix, next to OTHER's tensors of the
// same type.
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/gguf.h"
#include "quant/imatrix.h"
#include "sys/mapped_file.h"
#include "tensor/quantize/quantize.h"
#include "tensor/types.h"

// CPU time of this thread: the machine is shared, wall time would measure the neighbours.
static double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr,
                     "usage: quant_speed SOURCE.gguf IMATRIX|- TYPE NAME_SUBSTRING [fast|thorough "
                     "[OTHER.gguf]]\n");
        return 2;
    }
    try {
        const mw::MappedFile file = mw::MappedFile::open(argv[1]);
        const mw::gguf::GgufFile gguf = mw::gguf::GgufFile::parse(file.bytes(), argv[1]);
        mw::Imatrix imatrix;
        const bool have_imatrix = std::string(argv[2]) != "-";
        if (have_imatrix) imatrix = mw::load_imatrix(argv[2]);
        mw::GgmlType type{};
        bool found = false;
        for (uint32_t t = 0; t < 64; ++t) {
            const auto* tr = mw::type_traits(mw::GgmlType(t));
            if (tr && std::string(tr->name) == argv[3]) {
                type = mw::GgmlType(t);
                found = true;
            }
        }
        if (!found) {
            std::fprintf(stderr, "quant_speed: unknown type %s\n", argv[3]);
            return 2;
        }
        const auto search = argc > 5 && std::string(argv[5]) == "thorough"
                                ? mw::QuantSearch::thorough
                                : mw::QuantSearch::fast;
        mw::MappedFile other_file;
        mw::gguf::GgufFile other;
        const bool have_other = argc > 6;
        if (have_other) {
            other_file = mw::MappedFile::open(argv[6]);
            other = mw::gguf::GgufFile::parse(other_file.bytes(), argv[6]);
        }
        double err[2] = {0, 0}, werr[2] = {0, 0};
        // Adds the plain and importance-weighted squared errors of the encoded rows `q`.
        auto add_error = [&](int k, const std::vector<float>& x, const uint8_t* q,
                             const std::vector<float>& importance, int64_t ne0) {
            std::vector<float> y(x.size());
            mw::type_traits(type)->to_float(q, y.data(), int64_t(x.size()));
            for (size_t i = 0; i < x.size(); ++i) {
                const double d = double(x[i]) - double(y[i]);
                err[k] += d * d;
                werr[k] += d * d * (importance.empty() ? 1.0 : importance[i % size_t(ne0)]);
            }
        };
        const auto block = mw::type_traits(type)->block_size;
        double seconds = 0;
        uint64_t hash = 1469598103934665603ull, elements = 0;
        for (const auto& t : gguf.tensors()) {
            if (std::string(t.name).find(argv[4]) == std::string::npos) continue;
            if (t.n_dims != 2 || t.ne[0] % block) continue;
            const int64_t ne0 = int64_t(t.ne[0]), rows = int64_t(t.ne[1]);
            std::vector<float> x(t.n_elements);
            mw::type_traits(mw::GgmlType(t.type))
                ->to_float(t.data, x.data(), int64_t(t.n_elements));
            std::vector<float> importance;
            if (have_imatrix) importance = imatrix.means(std::string(t.name));
            std::vector<uint8_t> out(mw::row_bytes(*mw::type_traits(type), ne0) * size_t(rows));
            const auto start = cpu_now();
            mw::quantize_rows(type, x.data(), out.data(), rows, ne0,
                              importance.empty() ? nullptr : importance.data(), search);
            seconds += cpu_now() - start;
            for (uint8_t b : out) hash = (hash ^ b) * 1099511628211ull;
            elements += t.n_elements;
            if (have_other) {
                const auto* o = other.find_tensor(t.name);
                if (o && o->type == uint32_t(type)) {
                    add_error(0, x, out.data(), importance, ne0);
                    add_error(1, x, o->data, importance, ne0);
                }
            }
        }
        std::printf("%s: %llu elements, %.3f s, %.1f ns/element, hash %016llx\n", argv[3],
                    (unsigned long long)elements, seconds, seconds * 1e9 / double(elements),
                    (unsigned long long)hash);
        if (have_other) {
            std::printf(
                "squared error: this %.6g, other %.6g (ratio %.4f); weighted: this %.6g, "
                "other %.6g (ratio %.4f)\n",
                err[0], err[1], err[0] / err[1], werr[0], werr[1], werr[0] / werr[1]);
        }
        return 0;
    } catch (const mw::Error& e) {
        std::fprintf(stderr, "quant_speed: %s\n", e.what());
        return 1;
    }
}
