// C API: quantizing a model file and collecting an importance matrix (quant/).
#include <string>
#include <string_view>
#include <vector>

#include "api/api_error.h"
#include "api/api_params.h"
#include "memwall.h"
#include "quant/imatrix.h"
#include "quant/quantize_model.h"
#include "runtime/loaded_model.h"
#include "tensor/quantize/quantize.h"

namespace {

std::string recipe_list() {
    std::string names;
    for (mw::QuantRecipe r : mw::all_recipes()) {
        names += std::string(names.empty() ? "" : ", ") + mw::recipe_name(r);
    }
    return names;
}

// "PATTERN=TYPE": the type is a ggml type memwall can write; the pattern may contain '='.
mw::TensorTypeOverride parse_override(std::string_view spec) {
    const size_t eq = spec.rfind('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == spec.size()) {
        mw::fail(mw::ErrorKind::invalid_argument,
                 "--tensor-type {}: expected PATTERN=TYPE, e.g. attn_v=q8_0", spec);
    }
    const std::string_view type_name = spec.substr(eq + 1);
    const auto type = mw::ggml_type_from_name(type_name);
    if (!type || !mw::file_quantizer(*type)) {
        mw::fail(
            mw::ErrorKind::invalid_argument,
            "--tensor-type {}: unknown or unsupported type \"{}\" (F32, F16, BF16, Q4_0, Q4_1, "
            "Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4, TQ1_0, TQ2_0, "
            "IQ3_S, IQ3_XXS, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M)",
            spec, type_name);
    }
    return {std::string(spec.substr(0, eq)), *type};
}

const char* type_name(mw::GgmlType t) {
    const auto layout = mw::ggml_layout(uint32_t(t));
    return layout ? layout->name.data() : "?";
}

}  // namespace

extern "C" {

void mw_quantize_params_init(mw_quantize_params* out, size_t struct_size) {
    mw_quantize_params p{};
    p.type = "Q4_K_M";
    mw::init_params(out, struct_size, p);
}

mw_status mw_quantize(const char* in_path, const char* out_path, const mw_quantize_params* params,
                      mw_quantize_result* out) {
    return mw::guarded([&] {
        if (!in_path || !out_path) {
            mw::fail(mw::ErrorKind::invalid_argument,
                     "quantize: the input and output paths are required");
        }
        mw_quantize_params p;
        if (!mw::read_params(params, mw_quantize_default_params(), &p, "mw_quantize_params"))
            mw::fail(mw::ErrorKind::invalid_argument, "{}", mw_last_error());
        const char* type = p.type ? p.type : "Q4_K_M";
        const auto recipe = mw::recipe_from_name(type);
        if (!recipe) {
            mw::fail(mw::ErrorKind::invalid_argument, "quantize: unknown type \"{}\" (types: {})",
                     type, recipe_list());
        }
        mw::QuantizeOptions options;
        options.recipe = *recipe;
        options.pure = p.pure;
        options.allow_requantize = p.allow_requantize;
        options.n_threads = p.n_threads;
        options.search = p.thorough ? mw::QuantSearch::thorough : mw::QuantSearch::fast;
        if (p.imatrix_path) options.imatrix_path = p.imatrix_path;
        for (int32_t i = 0; i < p.n_tensor_types; ++i) {
            if (p.tensor_types && p.tensor_types[i]) {
                options.overrides.push_back(parse_override(p.tensor_types[i]));
            }
        }
        const mw::QuantizeReport r =
            mw::quantize_model(in_path, out_path, options, [&](const mw::QuantizeEvent& e) {
                if (!p.progress) return;
                const std::string name(e.name), message(e.message);
                mw_quantize_progress q{};
                q.tensor_index = int32_t(e.index);
                q.n_tensors = int32_t(e.n_tensors);
                q.tensor_name = name.c_str();
                q.from_type = type_name(e.from);
                q.to_type = type_name(e.to);
                q.bytes_done = e.bytes_done;
                q.bytes_total = e.bytes_total;
                q.elapsed_s = e.seconds;
                q.note = e.kind == mw::QuantizeEvent::Kind::note ? message.c_str() : nullptr;
                q.wanted_type = e.fallback ? type_name(e.wanted) : nullptr;
                p.progress(&q, p.user_data);
            });
        if (out) {
            *out = mw_quantize_result{};
            out->in_file_bytes = r.in_file_bytes;
            out->out_file_bytes = r.out_file_bytes;
            out->n_elements = r.n_elements;
            out->in_bits_per_weight = r.bits_per_weight_in();
            out->out_bits_per_weight = r.bits_per_weight_out();
            out->n_tensors = int32_t(r.n_tensors);
            out->n_quantized = int32_t(r.n_quantized);
            out->n_fallback = int32_t(r.n_fallback);
            out->n_with_imatrix = int32_t(r.n_with_imatrix);
            out->seconds = r.seconds;
        }
    });
}

void mw_imatrix_params_init(mw_imatrix_params* out, size_t struct_size) {
    mw_imatrix_params p{};
    p.n_ctx = 512;
    mw::init_params(out, struct_size, p);
}

mw_status mw_imatrix(const char* model_path, const char* text, size_t text_len,
                     const char* out_path, const mw_imatrix_params* params) {
    return mw::guarded([&] {
        if (!model_path || !out_path || (!text && text_len)) {
            mw::fail(mw::ErrorKind::invalid_argument,
                     "imatrix: the model, text and output are required");
        }
        mw_imatrix_params p;
        if (!mw::read_params(params, mw_imatrix_default_params(), &p, "mw_imatrix_params"))
            mw::fail(mw::ErrorKind::invalid_argument, "{}", mw_last_error());
        mw::ImatrixParams options;
        options.n_ctx = p.n_ctx ? p.n_ctx : 512;
        options.n_chunks = p.n_chunks > 0 ? p.n_chunks : -1;
        options.n_threads = p.n_threads;
        options.process_output = p.process_output;
        if (p.dataset) options.dataset = p.dataset;
        const auto model = mw::LoadedModel::load(model_path, mw::LoadOptions{});
        const mw::Imatrix imatrix =
            mw::compute_imatrix(*model, std::string_view(text ? text : "", text_len), options,
                                [&](const mw::ImatrixProgress& c) {
                                    if (!p.progress) return;
                                    mw_imatrix_progress q{};
                                    q.chunk = c.chunk;
                                    q.n_chunks = c.n_chunks;
                                    q.ppl = c.ppl;
                                    q.elapsed_s = c.seconds;
                                    p.progress(&q, p.user_data);
                                });
        mw::save_imatrix(imatrix, out_path);
    });
}

}  // extern "C"
